import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hopgraph.cli.commands.demo import sample_dir
from hopgraph.evals.bench.serving import free_port
from hopgraph.graph_store import load_documents

pytestmark = pytest.mark.integration


def wait_until_up(
    ready: Callable[[], object],
    proc: subprocess.Popen,
    what: str,
    detail: Callable[[], str] = lambda: "",
    timeout: float = 60,
) -> None:
    """Poll ``ready()`` (a truthy result, no OSError) until it answers; fail naming ``what``
    with ``detail()`` (the server's output) if the process exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ready():
                return
        except Exception:  # not listening yet: refused, reset, an HTTP error
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{what} did not start: {detail()}")
        time.sleep(0.2)


def chroma_executable() -> str:
    local = Path(sys.executable).with_name("chroma")
    found = str(local) if local.exists() else shutil.which("chroma")
    if not found:
        pytest.fail("the `chroma` command (from the chromadb package) is not installed")
    return found


@contextlib.contextmanager
def running_chroma(folder: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run a real Chroma server on 127.0.0.1 with its data in ``folder``; yield (URL, process)."""
    import chromadb

    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    log = (folder / "chroma.log").open("w")
    proc = subprocess.Popen(
        [
            chroma_executable(),
            "run",
            "--path",
            str(folder / "chroma-data"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    wait_until_up(
        lambda: chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat(),
        proc, "chroma server", lambda: (folder / "chroma.log").read_text(),
    )  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def chroma_server(tmp_path):
    """A real Chroma server for one test; yields (URL, process)."""
    with running_chroma(tmp_path) as server:
        yield server


@pytest.fixture(scope="module")
def module_chroma_server(tmp_path_factory):
    """A real Chroma server shared by a module's tests; yields (URL, process)."""
    with running_chroma(tmp_path_factory.mktemp("chroma")) as server:
        yield server


@pytest.fixture(scope="session")
def sample_docs():
    return load_documents(sample_dir() / "corpus.jsonl")
