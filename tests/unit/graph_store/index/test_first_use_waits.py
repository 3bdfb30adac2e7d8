"""A reader whose first use needs a write waits for another process's write, then answers.

Real processes (the CLI), the hashing embedder: a held lock stands for a long first-use write.
"""

import os
import subprocess
import sys
import time

from tests.conftest import DOCS, build_docs_index, write_jsonl

QUESTION = "Where was Larry Alcala educated?"
HOLD = (
    "import sys, time\nfrom pathlib import Path\n"
    "from hopgraph.graph_store.index.lock import write_lock\n"
    "with write_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n"
    "    time.sleep(float(sys.argv[2]))"
)


def hopgraph(*argv, env=None):
    """Start `hopgraph ARGV` (offline); return the process."""
    return subprocess.Popen(
        [sys.executable, "-m", "hopgraph", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )  # fmt: skip


def holding(index, seconds):
    """Hold ``index``'s write lock in another process for ``seconds``; return it once held."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(index), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_first_use_waits_for_the_write_under_way_names_it_then_answers(tmp_path):
    index = build_docs_index(tmp_path / "idx", "hashing")
    holder = holding(index, 3)
    started = time.monotonic()
    reader = hopgraph("retrieve", QUESTION, "--method", "naive_ge", "--index", str(index))
    out, err = reader.communicate(timeout=120)
    holder.wait(timeout=10)
    assert reader.returncode == 0, err
    assert err.count("waiting up to 600 s") == 1 and f"PID {holder.pid}, which is writing" in err
    assert time.monotonic() - started >= 2.5 and "d1" in out


def test_a_bounded_wait_gives_up_saying_what_to_do(tmp_path):
    index = build_docs_index(tmp_path / "idx", "hashing")
    holder = holding(index, 30)
    try:
        reader = hopgraph("retrieve", QUESTION, "--method", "naive_ge", "--index", str(index),
                          "--wait", "1")  # fmt: skip
        _, err = reader.communicate(timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert reader.returncode == 2
    assert f"still being written by PID {holder.pid} after 1 s" in err and "--wait" in err


def test_two_first_uses_at_once_both_answer(tmp_path):
    index = build_docs_index(tmp_path / "idx", "hashing")
    readers = [
        hopgraph("retrieve", QUESTION, "--method", "naive_ge", "--index", str(index))
        for _ in range(2)
    ]
    for reader in readers:
        out, err = reader.communicate(timeout=120)
        assert reader.returncode == 0 and "d1" in out, err


def test_two_evals_of_one_dataset_at_once_both_finish(tmp_path):
    data = tmp_path / "tiny"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    write_jsonl(data / "dev.jsonl", [{"id": "q1", "question": QUESTION, "answers": ["UST"],
                                      "gold_ids": ["d1"], "hops": 1}])  # fmt: skip
    env = {"HOPGRAPH_CACHE": str(tmp_path / "cache")}
    runs = [
        hopgraph("eval", "--data", str(data), "--model", "hashing", "--methods", "dense,naive_ge",
                 "--out", str(tmp_path / f"report{n}"), env=env)
        for n in range(2)
    ]  # fmt: skip
    for run in runs:
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
    assert len(list((tmp_path / "cache" / "eval-indexes").iterdir())) == 1  # one shared index
