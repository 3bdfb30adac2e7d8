import json

import pytest

from hopgraph.cli import build_parser, main
from tests.conftest import DOCS, write_jsonl

COMMANDS = ["demo", "index", "add", "delete", "retrieve", "info", "eval"]


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_everywhere(capsys, command):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([command, "--help"] if command else ["--help"])
    assert exit_info.value.code == 0
    assert "usage: hopgraph" in capsys.readouterr().out


@pytest.fixture
def idx(tmp_path, corpus_file, capsys):
    path = tmp_path / "idx"
    code, out, _ = run(
        capsys,
        "index",
        str(corpus_file),
        "--index",
        str(path),
        "--model",
        "hashing",
        "--chunk-tokens",
        "16",
        "-q",
    )
    assert code == 0 and "6 documents" in out
    return path


def test_index_retrieve_add_delete_info(tmp_path, idx, capsys):
    code, out, _ = run(
        capsys,
        "retrieve",
        "Mountrail County seat",
        "--index",
        str(idx),
        "--json",
        "-k",
        "2",
        "--method",
        "bm25",
    )
    hits = json.loads(out)
    assert code == 0 and hits[0]["doc_id"] == "d5" and len(hits) == 2
    assert hits[0]["provenance"][0]["method"] == "bm25"
    more = write_jsonl(
        tmp_path / "more.jsonl", [{"id": "d7", "title": "Oslo", "text": "Oslo is cold."}]
    )
    assert run(capsys, "add", str(more), "--index", str(idx), "-q")[0] == 0
    code, out, _ = run(
        capsys, "retrieve", "Oslo", "--index", str(idx), "--method", "dense", "-k", "1"
    )
    assert code == 0 and "d7" in out and "Oslo" in out
    ids = tmp_path / "ids.txt"
    ids.write_text("d7\n\nd6\n")
    code, out, _ = run(capsys, "delete", "d1", "--ids-file", str(ids), "--index", str(idx))
    assert code == 0 and "-3" in out
    code, out, _ = run(capsys, "info", "--index", str(idx))
    assert code == 0 and "documents  4" in out and "hashing" in out


def test_default_index_dir_from_environment(tmp_path, corpus_file, capsys, monkeypatch):
    monkeypatch.setenv("HOPGRAPH_INDEX", str(tmp_path / "env-idx"))
    assert run(capsys, "index", str(corpus_file), "--model", "hashing", "-q")[0] == 0
    assert (tmp_path / "env-idx" / "manifest.json").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["retrieve", "", "--index", "{idx}"], "the query is empty"),
        (["retrieve", "x", "--index", "{idx}", "--method", "colbert"], "unknown method 'colbert'"),
        (["retrieve", "x", "--index", "{tmp}/nowhere"], "no index at"),
        (["add", "{tmp}/missing.jsonl", "--index", "{idx}"], "no such file"),
        (["add", "{corpus}", "--index", "{idx}"], "already in the index"),
        (["delete", "nope", "--index", "{idx}"], "not in the index: 'nope'"),
        (["delete", "--index", "{idx}"], "no document ids given"),
        (["index", "{corpus}", "--index", "{tmp}/x", "--chroma-url", "ftp://h"], "http://"),
        (["eval", "--data", "{tmp}/nodata", "--index", "{idx}"], "no such dataset folder"),
        (["eval", "--data", "{tmp}", "--methods", "bm25,zzz"], "unknown method(s): zzz"),
        (["ask", "  ", "--index", "{idx}", "--llm", "endpoint"], "the question is empty"),
        (["ask", "q", "--index", "{tmp}/nowhere", "--llm", "endpoint"], "no index at"),
        (["explain", "q", "--index", "{idx}", "--out", "{tmp}/no/x.html"], "does not exist"),
        (["retrieve", "x", "--index", "{idx}", "--where", "colour=red"], "'colour'"),
        (["mcp", "--index", "{tmp}/nowhere"], "no index at"),
        (["mcp", "--index", "{tmp}"], "not a hopgraph index"),
        (["chat", "--index", "{tmp}/nowhere", "--llm", "none"], "no index at"),
        (["mcp", "--index", "{idx}", "--http", "127.0.0.1:99999"], "port from 1 to 65535"),
        (["mcp", "--index", "{idx}", "--http", "127.0.0.1:0"], "port from 1 to 65535"),
        (
            ["eval", "--data", "{tmp}", "--index", "{idx}", "--model", "all-MiniLM-L6-v2"],
            "built with embedding model 'hashing', not 'all-MiniLM-L6-v2'",
        ),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(tmp_path, idx, corpus_file, capsys, argv, message):
    write_jsonl(tmp_path / "dev.jsonl", [{"id": "q", "question": "?", "gold_ids": ["d1"]}])
    before = (idx / "manifest.json").read_text()
    argv = [a.format(idx=idx, tmp=tmp_path, corpus=corpus_file) for a in argv]
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert (idx / "manifest.json").read_text() == before


def test_argument_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["retrieve", "x", "-k", "0"])
    assert exit_info.value.code == 2
    assert "must be a positive whole number" in capsys.readouterr().err


def test_malformed_corpus_names_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{oops\n', encoding="utf-8")
    code, _, err = run(
        capsys, "index", str(bad), "--index", str(tmp_path / "i"), "--model", "hashing"
    )
    assert code == 2 and "bad.jsonl:2: malformed JSON" in err
    assert not (tmp_path / "i").exists()


def test_a_build_refused_after_it_took_the_lock_leaves_nothing(tmp_path, capsys, corpus_file):
    # an unknown model is found out once the build holds the lock; a Chroma server that does not
    # answer once it has written its first tables: neither leaves a folder behind
    for extra in (["--model", "no-such-model"],
                  ["--model", "hashing", "--chroma-url", "http://127.0.0.1:9"]):  # fmt: skip
        code, _, err = run(
            capsys, "index", str(corpus_file), "--index", str(tmp_path / "i"), *extra
        )
        assert code == 2 and "error:" in err, err
        assert not (tmp_path / "i").exists(), sorted(p.name for p in (tmp_path / "i").iterdir())
    # a folder that was there keeps what it held, and the failed build leaves no part in it
    (tmp_path / "i").mkdir()
    (tmp_path / "i" / "hopgraph.toml").write_text('model = "hashing"\n', encoding="utf-8")
    run(capsys, "index", str(corpus_file), "--index", str(tmp_path / "i"),
        "--chroma-url", "http://127.0.0.1:9")  # fmt: skip
    assert {p.name for p in (tmp_path / "i").iterdir()} <= {"hopgraph.toml", ".lock"}


def test_eval_prints_table_and_writes_reports(tmp_path, capsys):
    data = tmp_path / "tiny"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    write_jsonl(
        data / "dev.jsonl",
        [
            {
                "id": "q1",
                "question": "When did military instruction start where Larry Alcala studied?",
                "answers": ["1936"],
                "gold_ids": ["d1", "d2"],
                "hops": 2,
            },
            {
                "id": "q2",
                "question": "Seat of the county of Van Hook Township?",
                "answers": ["Stanley"],
                "gold_ids": ["d4", "d5"],
                "hops": 3,
            },
        ],
    )
    out = tmp_path / "report"
    code, text, _ = run(
        capsys,
        "eval",
        "--data",
        str(data),
        "--methods",
        "bm25,hybrid,gnn_ret",
        "--model",
        "hashing",
        "--out",
        str(out),
        "-q",
    )
    assert code == 0
    assert "R@2" in text and "All@15" in text and "p95 ms" in text
    assert "2-hop R@5" in text and "3-hop R@5" in text  # recall by hop count
    report = json.loads((out / "report.json").read_text())
    assert [s["method"] for s in report["scores"]] == ["bm25", "hybrid", "gnn_ret"]
    assert report["config"]["questions"] == 2
    assert report["config"]["preset"] == "tuned" and "preset tuned" in text
    rows = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    assert set(rows[0]) >= {"ranked_ids", "gold_ids", "recall", "all", "hits", "latency_ms"}
    # the second eval reuses the cached index instead of rebuilding it
    cache = [
        p for p in (tmp_path / "cache" / "eval-indexes").iterdir() if not p.name.startswith(".")
    ]
    assert len(cache) == 1
    stamp = (cache[0] / "manifest.json").stat().st_mtime
    assert (
        run(
            capsys,
            "eval",
            "--data",
            str(data),
            "--methods",
            "dense,gnn_ret",
            "--preset",
            "paper",
            "--model",
            "hashing",
            "--out",
            str(out),
            "-q",
        )[0]
        == 0
    )
    assert (cache[0] / "manifest.json").stat().st_mtime == stamp
    assert json.loads((out / "report.json").read_text())["config"]["preset"] == "paper"
    assert json.loads((out / "report.json").read_text())["config"]["guard"] == "preset"
    args = ["eval", "--data", str(data), "--methods", "gnn_ret", "--model", "hashing"]
    assert run(capsys, *args, "--guard", "off", "--out", str(out), "-q")[0] == 0
    assert json.loads((out / "report.json").read_text())["config"]["guard"] == "off"


def test_eval_guard_reaches_only_the_methods_that_have_it():
    from hopgraph.cli.commands.evaluation import guard_options

    assert guard_options(None, ["gnn_ret"]) == {}
    assert guard_options("off", ["dense", "gnn_ret", "iier"]) == {
        "gnn_ret": {"keep": 0},
        "iier": {"keep": 0},
    }
    always = guard_options("always", ["hybrid", "naive_ge"])
    assert always == {"naive_ge": {"keep": 2, "selective": False}}
    assert guard_options("selective", ["grag"])["grag"]["selective"] is True


def test_index_json_is_one_object_on_stdout_and_the_rest_on_stderr(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a", "title": "A", "text": "a text"}\n', encoding="utf-8")
    argv = ["index", str(corpus), "--index", str(tmp_path / "idx"), "--model", "hashing"]
    assert main([*argv, "-q", "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)  # nothing else on stdout
    assert report["documents"] == 1 and report["chunks"] == 1
    assert report["directory"] == str(tmp_path / "idx")
    assert report["driver_peak_rss_mb"] is None  # one process: no driver and tasks apart
    assert "read 1 file(s)" in err and "next: `hopgraph graph build" in err


OUT_FILES = [
    ["graph", "export", "--out"],
    ["explain", "a question", "--out"],
    ["trace", "export", "some-trace", "--html", "--out"],
    ["train", "gnn_ret", "--data", "somewhere", "--out"],
]


@pytest.mark.parametrize("argv", OUT_FILES, ids=lambda argv: " ".join(argv[:2]))
def test_every_out_file_refuses_what_is_not_a_regular_file(argv, tmp_path, capsys):
    """--out never replaces a folder, a device or a symbolic link (issue 73): refused before
    any work, with what is there; a new path or a regular file is taken."""
    target = tmp_path / "kept.txt"
    target.write_text("mine", encoding="utf-8")
    (tmp_path / "link").symlink_to(target)
    for there, said in [
        (tmp_path, "is a folder"),
        ("/dev/null", "not a regular file"),
        (tmp_path / "link", "a symbolic link"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            build_parser().parse_args([*argv, str(there)])
        assert exit_info.value.code == 2
        assert said in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "mine"
    for fine in (target, tmp_path / "new.html"):
        assert build_parser().parse_args([*argv, str(fine)]).out == fine
