"""`check` reads a Chroma database a killed write left mid-transaction without changing it."""

import subprocess
import sys

from hopgraph.graph_store.index.check_chroma import _read_database

KILLED = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=DELETE")
db.execute("PRAGMA cache_size=2")  # the transaction spills into the file, journal synced
db.execute("BEGIN")
db.executemany("INSERT INTO filler VALUES (?)", [("x" * 500,)] * 2000)
os._exit(9)  # killed mid-transaction: the rollback journal stays, hot
"""


def test_a_hot_journal_is_played_back_on_a_copy_and_the_index_files_stay(tmp_path):
    import sqlite3

    database = tmp_path / "chroma.sqlite3"
    with sqlite3.connect(database) as db:
        db.executescript(
            "CREATE TABLE collections (id TEXT, name TEXT);"
            "CREATE TABLE segments (id TEXT, collection TEXT, scope TEXT);"
            "CREATE TABLE filler (x TEXT);"
            "INSERT INTO collections VALUES ('c1', 'passages');"
            "INSERT INTO segments VALUES ('s1', 'c1', 'VECTOR');"
        )
    subprocess.run([sys.executable, "-c", KILLED, str(database)], check=False)
    journal = database.with_name("chroma.sqlite3-journal")
    assert journal.stat().st_size > 0
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as ro:  # what check did before
        try:
            ro.execute("PRAGMA quick_check").fetchall()
            read_only_fails = False
        except sqlite3.OperationalError:
            read_only_fails = True
    before = {p.name: p.read_bytes() for p in (database, journal)}
    verdict, segments = _read_database(database)
    assert read_only_fails and verdict == ["ok"] and segments == {"passages": "s1"}
    assert {p.name: p.read_bytes() for p in (database, journal)} == before
