"""A writer killed with SIGKILL leaves no child writing after the next writer takes the lock."""

import pytest

from hopgraph.evals.faults.killed_writes import run

pytestmark = pytest.mark.integration


def test_no_file_changes_after_the_next_writer_holds_the_lock(tmp_path):
    # evals/faults/killed_writes.py runs 20 moments of every kind; here 3 of the two that fork
    # children
    report = run(moments=3, docs=1500, kinds=("add", "graph"), folder=tmp_path)
    for kind, row in report.items():
        assert row["killed"] == row["moments"] == 3, kind  # each kill landed mid-write
        assert row["files_changed_after_lock"] == 0, [
            t["changed_after_lock"] for t in row["trials"]
        ]
        assert row["unsound_checks"] == 0, [t["check"] for t in row["trials"]]
