"""`hopgraph sync FOLDER --watch`: a batch of changes is one sync, Ctrl-C stops between writes."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from hopgraph.cli import main
from hopgraph.graph_store.stores.manifest import read_manifest
from tests.docs_fixture import write_docs

pytestmark = pytest.mark.integration


class Lines:
    """The lines a process prints, read as they come."""

    def __init__(self, stream):
        self.queue: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            self.queue.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.queue.get(timeout=0.5)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r}; saw {self.seen}")


def test_watch_syncs_each_batch_and_stops_cleanly(tmp_path, capsys):
    docs = write_docs(tmp_path / "docs")
    index = tmp_path / "idx"
    assert main(["index", str(docs), "--index", str(index), "--model", "hashing", "-q"]) == 0
    start = read_manifest(index).generation
    watcher = subprocess.Popen(
        [sys.executable, "-m", "hopgraph.cli", "sync", str(docs), "--index", str(index),
         "--watch", "--prune", "--debounce", "300", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    lines = Lines(watcher.stdout)
    try:
        lines.wait_for("watching")
        assert read_manifest(index).generation == start  # nothing changed: nothing written
        api = docs / "api.rst"
        api.write_text(api.read_text() + "\nA new closing paragraph about receivers.\n")
        edited = lines.wait_for("batch 1:")
        assert "1 changed" in edited and f"generation {start + 1} " in edited  # one write
        after_edit = read_manifest(index).generation
        assert after_edit == start + 1
        (docs / "new.md").write_text("# New page\n\nFresh text about workers.\n")
        added = lines.wait_for("batch 2:")
        assert "1 added" in added and f"generation {after_edit + 1}" in added
        (docs / "deploying" / "index.md").unlink()
        removed = lines.wait_for("batch 3:")
        assert "1 removed" in removed and f"generation {after_edit + 2}" in removed
        assert read_manifest(index).generation == start + 3  # three batches, three generations
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(timeout=60) == 0
        lines.wait_for("stopped watching")
    finally:
        if watcher.poll() is None:
            watcher.kill()
    capsys.readouterr()
    assert main(["docs", "--index", str(index), "--json"]) == 0
    listed = {d["id"]: d for d in json.loads(capsys.readouterr().out)}
    assert sorted(listed) == ["api.rst", "new.md"]
