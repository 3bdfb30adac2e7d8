"""The write benchmark's timeline: RSS by the function the driver is in (evals/bench)."""

import time

from hopgraph.evals.bench.cluster_graphs import Timeline


def _holding_memory() -> int:
    held = bytearray(64 * 1024 * 1024)  # 64 MB, touched
    for at in range(0, len(held), 4096):
        held[at] = 1
    time.sleep(0.3)
    return len(held)


def test_the_peak_is_named_with_the_function_that_held_it(tmp_path):
    timeline = Timeline(every=0.02)
    time.sleep(0.1)
    assert _holding_memory() > 0
    time.sleep(0.1)
    timeline.save(tmp_path / "add.txt")
    lines = (tmp_path / "add.txt").read_text(encoding="utf-8").splitlines()
    assert lines[-1].startswith("peak ") and "_holding_memory" in lines[-1]
    assert any("_holding_memory" in line for line in lines[:-1])
