"""The chunk table read on demand: the same chunks as a whole read, and damage named."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import orjson
import pytest

from hopgraph.core.errors import IndexStateError
from hopgraph.core.id_lists import save_ids
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.stores.chunk_table import (
    ChunkScan,
    ChunkTable,
    chunks_in,
    scan_ids,
    write_chunks,
)

CHUNKS = [
    Chunk("a", "a", "Alpha", "first text", 0, 1, "Intro"),
    Chunk('q"uote\\d#0', 'q"uote\\d', "Quoted", "ids JSON must escape", 0, 2),
    Chunk('q"uote\\d#1', 'q"uote\\d', "Quoted", "second half", 1, 2, "Later"),
    Chunk("é ü#ß", "é ü#ß", "Ünïcode", "non-ASCII ids and texts: ∑", 0, 1),
]


def test_every_chunk_reads_as_the_whole_table_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    write_chunks(path, CHUNKS)
    table = ChunkTable.open(path)
    assert table.ids == [c.id for c in CHUNKS] and len(table) == len(CHUNKS)
    assert [table[c.id] for c in CHUNKS] == CHUNKS == chunks_in(path)
    assert list(table.values()) == CHUNKS and list(table.items()) == [(c.id, c) for c in CHUNKS]
    assert table.rows['q"uote\\d#1'] == 2 and "missing" not in table
    with pytest.raises(KeyError):
        table["missing"]
    assert [c.text for c in table.scan(texts=False)] == ["", "", "", ""]
    assert [c.title for c in table.scan(texts=False)] == [c.title for c in CHUNKS]


def test_lines_written_by_another_writer_and_blank_lines_are_read(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"  # json.dumps' spacing, a blank line, no final newline
    lines = [json.dumps(asdict(c), ensure_ascii=True) for c in CHUNKS]
    path.write_text("\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:]), encoding="utf-8")
    table = ChunkTable.open(path)
    assert list(table.values()) == CHUNKS


def test_an_empty_table_opens(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(b"")
    assert len(ChunkTable.open(path)) == 0 and list(ChunkTable.open(path).values()) == []


def test_a_damaged_line_is_named_by_its_row_with_the_repair(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    write_chunks(path, CHUNKS)
    data = bytearray(path.read_bytes())
    at = data.index(b"first text")
    data[at - 2 : at + 3] = b"\x00\x00\x00\x00\x00"  # the id is intact, the line is not JSON
    path.write_bytes(bytes(data))
    table = ChunkTable.open(path)
    assert table["é ü#ß"] == CHUNKS[3]  # the others read: only the damaged line fails
    with pytest.raises(IndexStateError, match="damaged at chunk row 0") as err:
        table["a"]
    assert "hopgraph check --repair" in (err.value.hint or "")


@pytest.mark.parametrize("collide", [False, True])
def test_chunk_ids_index_compare_and_find_rows_as_a_list_would(collide, monkeypatch) -> None:
    from hopgraph.core import id_lists
    from hopgraph.core.id_lists import ChunkIds, ChunkRows

    if collide:  # every hash alike: found by comparing the ids, never a wrong row
        monkeypatch.setattr(id_lists, "id_hash", lambda chunk_id: 7)
    listed = [c.id for c in CHUNKS] + [f"doc-{i}" for i in range(200)]
    ids = ChunkIds(listed)
    assert len(ids) == len(listed) and list(ids) == listed and ids[-1] == listed[-1]
    assert ids[1:4] == listed[1:4] and ids[3] == "é ü#ß"
    asked = [listed[5], "missing", listed[0], listed[-1], listed[5]]
    assert ids.rows_of(asked).tolist() == [5, -1, 0, len(listed) - 1, 5]
    assert ids.rows_of(ChunkIds(asked)).tolist() == [5, -1, 0, len(listed) - 1, 5]
    assert ids == listed and ids == ChunkIds(listed) and ids != ChunkIds(listed[:-1])
    assert ids != listed[::-1]
    with pytest.raises(IndexError):
        ids[len(listed)]
    rows = ChunkRows(ids)
    assert all(rows[i] == r for r, i in enumerate(listed)) and "nope" not in rows
    assert rows.get("nope") is None and len(rows) == len(listed)


def test_chunk_ids_sent_to_another_process_hash_its_way(monkeypatch) -> None:
    """A str hash is salted per process: ids pickled into a worker (a Ray task's) are looked
    up by that worker's hashes, not by the sender's."""
    import pickle

    from hopgraph.core import id_lists
    from hopgraph.core.id_lists import ChunkIds

    listed = [f"doc-{i}" for i in range(50)]
    sent = pickle.dumps(ChunkIds(listed))
    monkeypatch.setattr(id_lists, "id_hash", lambda chunk_id: hash(chunk_id) ^ 0x5A5A)
    received = pickle.loads(sent)
    assert received == listed and received.rows_of(["doc-7", "nope"]).tolist() == [7, -1]
    assert received.row("doc-49") == 49 and received.rows_of(ChunkIds(listed[3:5])).tolist() == [
        3,
        4,
    ]


def test_a_scan_reads_every_pass_from_the_file_and_names_a_wrong_count(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    write_chunks(path, CHUNKS)
    scan = ChunkScan(path, len(CHUNKS))
    texts_out = [replace(c, text="") for c in CHUNKS]
    assert len(scan) == 4 and list(scan) == texts_out and list(scan) == texts_out  # two passes
    assert list(scan.ids()) == [c.id for c in CHUNKS] == list(scan_ids(path))
    with pytest.raises(IndexStateError, match="holds 4 chunks, the manifest says 5"):
        list(ChunkScan(path, 5).ids())
    path.unlink()
    with pytest.raises(IndexStateError, match="missing or damaged"):
        list(scan)


def test_ids_streamed_out_are_what_json_writes(tmp_path: Path) -> None:
    ids = [c.id for c in CHUNKS]
    save_ids(iter(ids), tmp_path / "ids.json")
    assert (tmp_path / "ids.json").read_text(encoding="utf-8") == json.dumps(ids)
    save_ids([], tmp_path / "none.json")
    assert json.loads((tmp_path / "none.json").read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("block", [1, 3, 1 << 20])
def test_ids_streamed_in_a_block_at_a_time_are_what_json_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    from hopgraph.core import id_lists

    monkeypatch.setattr(id_lists, "IDS_BLOCK", block)
    path = tmp_path / "ids.json"
    for ids in [[], ["a"], ['x,"y', "é]", " ", *(f"id-{i}" for i in range(50))]]:
        save_ids(ids, path)
        assert list(id_lists.load_ids(path)) == ids
        path.write_text(json.dumps(ids, indent=1), encoding="utf-8")  # spaces anywhere
        assert list(id_lists.load_ids(path)) == ids
    for bad in ['["a",]', '["a"', '{"a": 1}', "[1]", '["a" "b"]', ""]:
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(ValueError, match=r"list of ids|not a chunk id"):
            list(id_lists.load_ids(path))


def test_a_scan_changed_by_a_write_merges_in_id_order_as_sorted_would(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    table = sorted(CHUNKS, key=lambda c: c.id)
    write_chunks(path, table)
    scan = ChunkScan(path, len(table))
    assert scan.in_id_order()
    added = [
        Chunk("zz", "zz", "Z", "last"),
        Chunk("0", "0", "Zero", "first"),
        Chunk("b", "b", "B", ""),
    ]
    after = scan.changed(added, {table[1].id}, documents=6)
    kept = [replace(c, text="") for c in table if c.id != table[1].id]
    assert list(after) == sorted([*kept, *added], key=lambda c: c.id)  # the added keep texts
    assert list(after.ids()) == [c.id for c in after] and len(after) == 6 == after.documents
    with pytest.raises(IndexStateError, match="holds 7 chunks, the manifest says 6"):
        list(scan.changed(added, {"not there"}, documents=6))  # a removed id the table lacks
    write_chunks(path, table[::-1])
    assert not ChunkScan(path, len(table)).in_id_order()


class _Manifest:
    """What chunks_with_ids asks of a manifest: the table's path and its count."""

    def __init__(self, chunks: int) -> None:
        self.counts = {"chunks": chunks}

    @staticmethod
    def path(directory: Path, name: str) -> Path:
        return directory / f"{name}.jsonl"


def test_chunks_read_by_id_in_one_pass_are_the_tables_and_a_wrong_count_is_named(
    tmp_path: Path,
) -> None:
    from hopgraph.graph_store.stores.chunk_table import chunks_with_ids

    write_chunks(tmp_path / "chunks.jsonl", CHUNKS)
    wanted = {CHUNKS[1].id, CHUNKS[3].id, "not-a-chunk"}
    found = chunks_with_ids(tmp_path, _Manifest(4), wanted)  # type: ignore[arg-type]
    assert found == {c.id: c for c in (CHUNKS[1], CHUNKS[3])}  # with their texts
    assert chunks_with_ids(tmp_path, _Manifest(4), set()) == {}  # type: ignore[arg-type]
    with pytest.raises(IndexStateError, match="holds 4 chunks, the manifest says 5"):
        chunks_with_ids(tmp_path, _Manifest(5), wanted)  # type: ignore[arg-type]


def test_a_writes_removed_chunks_get_their_texts_without_a_table_of_every_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete's driver reads its removed chunks' texts in one pass: the table of every id
    (ChunkTable) is not opened for them, and a later lookup still opens it."""
    from hopgraph.graph_store.stores.chunk_table import WriteTexts

    write_chunks(tmp_path / "chunks.jsonl", CHUNKS)
    texts = WriteTexts(tmp_path, _Manifest(4), [], held=False)  # type: ignore[arg-type]
    opened = []
    monkeypatch.setattr(ChunkTable, "open", lambda path: opened.append(path) or _open(path))
    removed = [replace(CHUNKS[2], text=""), replace(CHUNKS[0], text="")]
    assert texts.before(removed) == [CHUNKS[2], CHUNKS[0]] and not opened
    assert texts.of([replace(CHUNKS[1], text="")]) == [CHUNKS[1]] and len(opened) == 1
    assert texts.before(removed) == [CHUNKS[2], CHUNKS[0]] and len(opened) == 1


_open = ChunkTable.open


def test_a_table_of_many_blocks_reads_each_row_where_its_line_lies(tmp_path: Path) -> None:
    from hopgraph.graph_store.stores.chunk_table import LineSpans

    chunks = [Chunk(f"d{i}#0", f"d{i}", f"T{i}", "x" * (i % 37), 0, 1) for i in range(700)]
    lines = [orjson.dumps(c).decode() for c in chunks]
    blank = {0, 255, 256, 511, 699}  # blank lines after rows at and around block edges
    text = "".join(line + "\n" + ("\n" if i in blank else "") for i, line in enumerate(lines))
    path = tmp_path / "chunks.jsonl"
    path.write_text("\n" + text, encoding="utf-8")  # and one before the first row
    table = ChunkTable.open(path)
    assert len(table) == 700 and LineSpans.BLOCK < 700 // 2
    for row in (0, 1, 254, 255, 256, 257, 511, 512, 699):
        assert table.at(row) == chunks[row]
        assert table.line(chunks[row].id) == lines[row].encode() + b"\n"
    assert list(table.values()) == chunks


def test_chunk_ids_hold_four_byte_ends_and_rows_and_let_go_of_the_row_hashes(monkeypatch) -> None:
    from hopgraph.core import id_lists
    from hopgraph.core.id_lists import ChunkIds

    listed = [f"doc-{i}" for i in range(300)]
    ids = ChunkIds(listed)
    assert ids._ends.itemsize == 4
    assert ids.row("doc-299") == 299
    _, rows = ids._lookup
    assert rows.itemsize == 4 and ids._row_hashes is None  # sorted, the rows' own let go
    other = ChunkIds(listed[::-1])
    other.row("doc-0")  # its own lookup made: its rows' hashes are made again when asked
    assert ids.rows_of(other).tolist() == list(range(299, -1, -1))
    monkeypatch.setattr(id_lists, "WIDE_END", 100)  # past 4 GiB: 8-byte ends and rows
    wide = ChunkIds(listed)
    assert wide._ends.itemsize == 8 and wide._lookup[1].itemsize == 8
    assert list(wide) == listed and wide.rows_of(listed[::7]).tolist() == list(range(0, 300, 7))
    assert wide == ChunkIds(listed)
