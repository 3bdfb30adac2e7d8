"""The write benchmark's timeline: RSS by the function the driver is in (evals/bench)."""

import subprocess
import sys

# In a process of its own: a test worker's RSS can fall while the function holds its 64 MB
# (memory an earlier test freed going back to the system), and then the peak is elsewhere.
SCRIPT = """
import sys, time
from pathlib import Path
from hopgraph.evals.bench.cluster_graphs import Timeline

def _holding_memory():
    held = bytearray(64 * 1024 * 1024)  # 64 MB, touched
    for at in range(0, len(held), 4096):
        held[at] = 1
    time.sleep(0.3)
    return len(held)

timeline = Timeline(every=0.02)
time.sleep(0.1)
assert _holding_memory() > 0
time.sleep(0.1)
timeline.save(Path(sys.argv[1]))
"""


def test_the_peak_is_named_with_the_function_that_held_it(tmp_path):
    out = tmp_path / "add.txt"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[-1].startswith("peak ") and "_holding_memory" in lines[-1]
    assert any("_holding_memory" in line for line in lines[:-1])
