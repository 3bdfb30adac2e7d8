"""Start-up benchmark: wall time of whole `hopgraph` commands, each a fresh process.

``python -m hopgraph.evals.bench startup [--index DIR] [--runs 5] [--out FILE]``

Times, on an index (default: the bundled sample, indexed and graph-built first in a temporary
folder), each as a new process: `hopgraph --help`, `check`, `retrieve` with every method that
runs without an LLM, and the servers' first answer: from starting `hopgraph mcp` (stdio) or
`hopgraph ui` (HTTP), or `langgraph dev` (the LangGraph server, when its extra is installed), to
the first retrieval it answers. Beside them the machine's bare ``python -c pass``.

Each command runs once untimed first, which does the one-off work of a first use: the query
encoder's ONNX export and its copy with mapped weights (a user's first query makes them once),
G-RAG's embedding of the index's concepts (kept in the vector cache), and Python's bytecode
cache of hopgraph's modules (pip writes it at install; a tree run with PYTHONDONTWRITEBYTECODE
never keeps one, and compiling hopgraph's modules cost every command a tenth of a second more).
Then ``--runs`` timed runs; the report has the median and the slowest. Targets (medians, idle
2-core machine; issue 53): --help ≤ 0.3 s, check ≤ 1.0 s, bm25 ≤ 1.0 s, dense, hybrid and
gnn_ret ≤ 1.5 s, iier, naive_ge and grag ≤ 2.5 s. Timings mean something only on an idle
machine: the report keeps the load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hopgraph.evals.bench import save_json

QUERY = "When did military instruction start at the place where Larry Alcala was educated?"
METHODS = {"bm25": 1.0, "dense": 1.5, "hybrid": 1.5, "gnn_ret": 1.5,
           "iier": 2.5, "naive_ge": 2.5, "grag": 2.5}  # fmt: skip
"""Every retriever that runs without an LLM, and its target (s)."""
SERVER_METHOD = "gnn_ret"
"""What the servers' first retrieval runs (the MCP tool's default method)."""
LANGGRAPH_JSON = Path(__file__).resolve().parents[2] / "langgraph.json"
"""The LangGraph server's configuration, in a source checkout."""
SERVER_TIMEOUT = 300.0


@dataclass(frozen=True)
class Timed:
    """One row of the benchmark: the command, its target, how to time one run, and until what."""

    command: str
    target: float | None
    run: Callable[[], float]
    until: str | None = None
    """A server's row: the answer its time runs to (a command's runs to its exit)."""


def hopgraph(*argv: str) -> list[str]:
    """Return the command line of ``hopgraph ARGV`` with this interpreter."""
    return [sys.executable, "-m", "hopgraph", *argv]


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Run ``argv`` once; return its wall time (a failure stops the benchmark)."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(argv)}` failed:\n{done.stderr[-2000:]}")
    return seconds


def free_port() -> int:
    """Return a TCP port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def until_answered(process: subprocess.Popen, ask: Callable[[], bool], what: str) -> None:
    """Call ``ask`` until it returns True: refused connections mean not listening yet."""
    deadline = time.monotonic() + SERVER_TIMEOUT
    while not _answered(ask):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{what} gave no answer (exit status {process.poll()})")
        time.sleep(0.01)


def _answered(ask: Callable[[], bool]) -> bool:
    try:
        return ask()
    except (OSError, urllib.error.URLError):  # not listening yet, or reset while starting
        return False


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def mcp_first_answer(index: Path, env: dict[str, str]) -> float:
    """Start `hopgraph mcp` (stdio); return the time until its first `retrieve` answer."""
    call = {"name": "retrieve", "arguments": {"query": QUERY, "method": SERVER_METHOD}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "startup-bench", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
    ]  # fmt: skip
    start = time.perf_counter()
    process = subprocess.Popen(
        hopgraph("mcp", "--index", str(index)), env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert process.stdin is not None and process.stdout is not None
        # the client writes all three at once: the server reads them in order
        process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        process.stdin.flush()
        for line in process.stdout:
            reply = json.loads(line)
            if reply.get("id") == 2:
                seconds = time.perf_counter() - start
                if "error" in reply or reply["result"].get("isError"):
                    raise SystemExit(f"`hopgraph mcp` could not retrieve: {reply}")
                return seconds
        raise SystemExit("`hopgraph mcp` stopped before it answered")
    finally:
        _stop(process)


def _get_json(url: str, body: dict | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=SERVER_TIMEOUT) as response:
        return json.loads(response.read())


def ui_first_answer(index: Path, env: dict[str, str]) -> float:
    """Start `hopgraph ui`; return the time until its first search answer (HTTP 200)."""
    port = free_port()
    query = urllib.parse.urlencode({"q": QUERY, "method": SERVER_METHOD, "k": 5})
    url = f"http://127.0.0.1:{port}/api/search?{query}"
    start = time.perf_counter()
    process = subprocess.Popen(
        hopgraph("ui", "--index", str(index), "--http", f"127.0.0.1:{port}"),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        until_answered(process, lambda: bool(_get_json(url)), "`hopgraph ui`")
        return time.perf_counter() - start
    finally:
        _stop(process)


def langgraph_first_answer(index: Path, env: dict[str, str], scratch: Path) -> float:
    """Start `langgraph dev`; return the time until its chat graph first answers (no LLM).

    Without an LLM the chat graph answers with the passages the method retrieves.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    run = {
        "assistant_id": "chat",
        "input": {"messages": [{"role": "user", "content": QUERY}]},
        "context": {"method": SERVER_METHOD},
    }
    server_env = {**env, "HOPGRAPH_INDEX": str(index), "LANGGRAPH_CLI_NO_ANALYTICS": "1"}
    start = time.perf_counter()
    process = subprocess.Popen(
        [str(shutil.which("langgraph")), "dev", "--no-browser", "--no-reload",
         "--port", str(port), "--config", str(LANGGRAPH_JSON)],
        cwd=scratch, env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip  # the server keeps its state (.langgraph_api/) in its working directory
    try:

        def ask() -> bool:
            answer = _get_json(f"{url}/runs/wait", run)
            return isinstance(answer, dict) and bool(answer.get("messages"))

        until_answered(process, ask, "`langgraph dev`")
        return time.perf_counter() - start
    finally:
        _stop(process)


def rows(index: Path, env: dict[str, str], scratch: Path) -> dict[str, Timed]:
    """Return every timed row, by the name the report keeps it under."""
    where = ("--index", str(index))
    out = {
        "python -c pass": Timed("python -c pass", None,
                                lambda: timed([sys.executable, "-c", "pass"], env)),
        "--help": Timed("hopgraph --help", 0.3, lambda: timed(hopgraph("--help"), env)),
        "check": Timed("hopgraph check", 1.0, lambda: timed(hopgraph("check", *where), env)),
    }  # fmt: skip
    for method, target in METHODS.items():
        argv = hopgraph("retrieve", QUERY, "--method", method, *where)
        out[f"retrieve {method}"] = Timed(
            f"hopgraph retrieve QUESTION --method {method}", target,
            lambda argv=argv: timed(argv, env),
        )  # fmt: skip
    out["mcp"] = Timed(
        "hopgraph mcp", None, lambda: mcp_first_answer(index, env),
        f"its first retrieve tool answer ({SERVER_METHOD}, over stdio)",
    )  # fmt: skip
    out["ui"] = Timed(
        "hopgraph ui", None, lambda: ui_first_answer(index, env),
        f"its first /api/search answer ({SERVER_METHOD})",
    )  # fmt: skip
    if shutil.which("langgraph") and LANGGRAPH_JSON.is_file():  # the [server] extra, a checkout
        out["langgraph"] = Timed(
            "langgraph dev", None, lambda: langgraph_first_answer(index, env, scratch),
            f"the chat graph's first answer (evidence from {SERVER_METHOD}; no LLM)",
        )  # fmt: skip
    return out


def sample_index(folder: Path, env: dict[str, str]) -> Path:
    """Index the bundled sample and build its graphs (untimed)."""
    index = folder / "sample-index"
    subprocess.run(hopgraph("demo", "--index", str(index), "-q"), env=env, check=True,
                   capture_output=True)  # fmt: skip
    return index


def child_environment() -> dict[str, str]:
    """Return the commands' environment: offline, keeping bytecode as an installed package does."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(rows_: dict[str, Timed], runs: int) -> dict[str, dict]:
    """Time each row ``runs`` times after one untimed warm-up (a first use's one-off work)."""
    report = {}
    for name, row in rows_.items():
        row.run()
        times = [row.run() for _ in range(runs)]
        report[name] = {
            "command": row.command,
            "until": row.until,
            "target_s": row.target,
            "median_s": statistics.median(times),
            "max_s": max(times),
            "runs": times,
        }
        print(_line(name, report[name]), flush=True)
    return report


def _line(name: str, row: dict) -> str:
    target = "" if row["target_s"] is None else f"{row['target_s']:7.1f}s"
    missed = row["target_s"] is not None and row["median_s"] > row["target_s"]
    return (f"{name:<18} {row['median_s']:7.2f}s {row['max_s']:7.2f}s {target:>8}"
            + ("  MISSED" if missed else ""))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table; returns 1 if a median misses its target."""
    parser = argparse.ArgumentParser(prog="python -m hopgraph.evals.bench startup",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("--index", type=Path, help="index to run on (default: the sample's)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command (5)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    env = child_environment()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        index = args.index or sample_index(Path(scratch), env)
        print(f"{'command':<18} {'median':>8} {'slowest':>8} {'target':>8}")
        report = measure(rows(index, env, Path(scratch)), args.runs)
    loads = {"before": load_before, "after": os.getloadavg()}
    print(f"load average (1, 5, 15 min): before {load_before}, after {loads['after']}")
    if args.out:
        save_json(args.out, {"cpus": os.cpu_count(), "runs": args.runs, "load": loads,
                             "commands": report})  # fmt: skip
    return int(any(r["target_s"] is not None and r["median_s"] > r["target_s"]
                   for r in report.values()))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
