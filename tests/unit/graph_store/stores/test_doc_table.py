"""A write's document table as a change over the last table's file (stores/doc_table.py).

The change writes what the whole table in memory would (``DocumentTable``), looks records up or
reads the file through for many, and names a table that is not sorted by id.
"""

import pytest

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.stores import doc_table
from hopgraph.graph_store.stores.doc_table import DocumentChange, DocumentRecord, DocumentTable


def _record(doc_id: str, source: str = "") -> DocumentRecord:
    return DocumentRecord(doc_id, f"Title of {doc_id}", source, f"h{doc_id}", "now", 1)


@pytest.fixture
def stored(tmp_path):
    """A table file of 300 documents (d000 … d299, every tenth under /docs/a)."""
    records = [_record(f"d{i:03d}", f"/docs/{'a' if i % 10 == 0 else 'b'}/{i}") for i in range(300)]
    path = tmp_path / "documents.jsonl"
    DocumentTable.of(records).write(path)
    return path, records


def test_a_change_writes_what_the_whole_table_would(stored, tmp_path):
    path, records = stored
    gone = ["d000", "d150", "d299", "d151"]
    new = [_record("a-first"), _record("d150"), _record("d1505"), _record("zz-last")]
    whole = DocumentTable.of(records).without(gone).with_records(new)
    change = DocumentChange(path).without(gone).with_records(new)
    whole.write(tmp_path / "whole.jsonl")
    change.write(tmp_path / "change.jsonl")
    assert (tmp_path / "change.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert list(change.scan()) == whole.records()
    assert change.records() == whole.records()


@pytest.mark.parametrize("scan_from", [1000, 2])
def test_records_are_looked_up_or_read_through_alike(stored, monkeypatch, scan_from):
    monkeypatch.setattr(doc_table, "SCAN_FROM", scan_from)
    path, records = stored
    change = DocumentChange(path).without(["d010"]).with_records([_record("d3000")])
    asked = ["d010", "d011", "d3000", "missing", "d299", "d011"]
    got = change.records(asked)
    assert [r.id for r in got] == ["d011", "d299", "d3000"]
    assert got[0] == records[11]


def test_a_table_out_of_order_is_named(stored, tmp_path):
    path, _ = stored
    lines = path.read_bytes().splitlines()
    lines[5], lines[6] = lines[6], lines[5]
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(IndexStateError, match="not sorted by id"):
        DocumentChange(path, "repair it").write(tmp_path / "next.jsonl")


def test_a_damaged_line_is_named_with_the_hint(stored, tmp_path):
    path, _ = stored
    path.write_bytes(path.read_bytes().replace(b'"d007"', b'"d007', 1))
    with pytest.raises(IndexStateError, match="damaged") as err:
        list(DocumentChange(path, "run check --repair").scan())
    assert err.value.hint == "run check --repair"
