"""`hopgraph ui`'s API and page: searches, graphs, the index view, errors, tokens, escaping."""

import json
import shutil
import subprocess

import pytest
from starlette.testclient import TestClient

from hopgraph.cli import main
from hopgraph.core.network import MAX_QUESTION
from hopgraph.graph_store import LiveIndex
from hopgraph.page.server import UIApp
from tests.conftest import DOCS, build_docs_index

QUESTION = "When did military instruction start where Larry Alcala was educated?"
XSS = '<img src=x onerror="alert(1)">'

LOCAL = "http://127.0.0.1:8766"  # the page refuses a host it does not know (HostGuard)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return build_docs_index(tmp_path_factory.mktemp("ui") / "idx", "hashing")


@pytest.fixture
def client(index_dir):
    with LiveIndex(index_dir) as live:
        yield TestClient(UIApp(live).app(), base_url=LOCAL)


def test_search_returns_hits_with_section_score_and_provenance(client):
    reply = client.get("/api/search", params={"q": QUESTION, "method": "gnn_ret", "k": 4})
    assert reply.status_code == 200
    body = reply.json()
    assert body["method"] == "gnn_ret" and len(body["hits"]) == 4
    first = body["hits"][0]
    assert {"rank", "id", "doc_id", "title", "section", "text", "score", "why"} <= set(first)
    assert all(h["why"].startswith("gnn_ret: ") for h in body["hits"])


def test_methods_are_the_ones_the_index_runs_with_their_descriptions(client):
    body = client.get("/api/methods").json()
    names = [m["name"] for m in body["methods"]]
    assert {"bm25", "dense", "hybrid", "gnn_ret"} <= set(names)
    assert all(m["description"] for m in body["methods"])
    assert body["index"] == "idx"


def test_the_graph_counts_match_its_svg(client):
    body = client.get("/api/graph", params={"q": QUESTION, "method": "gnn_ret", "k": 4,
                                             "gold": "d1,d2"}).json()  # fmt: skip
    passages = [n for n in body["nodes"] if n["kind"] == "passage"]
    assert len(passages) == 4 and sum(n["gold"] for n in passages) >= 1
    assert body["svg"].count('class="passage') == len(passages)
    assert body["svg"].count('<line class="edge') == len(body["edges"])


def test_the_index_view_names_no_server_path(client, index_dir):
    reply = client.get("/api/index")
    body = reply.json()
    assert body["check"]["sound"] and body["documents_total"] == len(DOCS)
    assert body["counts"]["chunks"] == len(DOCS) and body["graphs"]
    assert str(index_dir.parent) not in reply.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": "  ", "method": "gnn_ret"}, "the question is empty"),
        ({"q": "x", "method": "nope"}, "unknown method 'nope'"),
        ({"q": "x", "method": "bm25", "where": "doc_id in"}, "not a filter"),
        ({"q": "x", "method": "bm25", "k": "0"}, "k must be"),
        ({"q": "x", "method": "bm25", "k": "²"}, "expected a whole number, got '²'"),
        ({"q": "x", "method": "bm25", "k": "51"}, "k must be a whole number from 1 to 50"),
        ({"q": "x", "method": "bm25", "expand": "sideways"}, "not an expansion"),
    ],
)
def test_bad_input_gets_the_clis_message_and_the_server_keeps_serving(client, params, message):
    reply = client.get("/api/search", params=params)
    assert reply.status_code == 400 and message in reply.json()["error"]
    assert reply.json()["hint"]
    assert client.get("/api/search", params={"q": QUESTION, "method": "bm25"}).status_code == 200


def test_user_strings_are_escaped_in_the_page_and_the_graph(tmp_path):
    docs = [{"id": f"x{XSS}", "title": XSS, "text": f"{XSS} Larry Alcala studied here."},
            {"id": "d2", "title": "Other", "text": "Larry Alcala was a cartoonist."}]  # fmt: skip
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    index = tmp_path / XSS.replace("/", "_")
    assert main(["index", str(corpus), "--index", str(index), "--model", "hashing", "-q"]) == 0
    assert main(["graph", "build", "--index", str(index), "-q"]) == 0
    with LiveIndex(index) as live:
        client = TestClient(UIApp(live).app(), base_url=LOCAL)
        page = client.get("/").text
        assert XSS not in page and "&lt;img src=x" in page  # the index's name, escaped
        svg = client.get("/api/graph", params={"q": XSS + " Larry", "method": "bm25"}).json()
        assert XSS not in svg["svg"] and "&lt;img" in svg["svg"]
        hits = client.get("/api/search", params={"q": XSS, "method": "bm25"}).json()["hits"]
        assert any(h["title"] == XSS for h in hits)  # JSON as it is: the page sets textContent


def test_a_token_is_needed_by_every_request_and_the_login_url_works_once(index_dir):
    with LiveIndex(index_dir) as live:
        ui = UIApp(live, token="s3cret-token")
        client = TestClient(ui.app(), base_url=LOCAL)
        for path in ("/", "/api/methods", "/api/index", "/api/search?q=x&method=bm25"):
            assert client.get(path).status_code == 401
        headers = {"Authorization": "bearer s3cret-token"}
        assert client.get("/api/methods", headers=headers).status_code == 200
        assert client.get("/login", params={"code": "wrong"}).status_code == 401
        code = ui.login_code
        assert (
            client.get("/login", params={"code": code}, follow_redirects=False).status_code == 303
        )
        assert client.get("/api/methods").status_code == 200  # the cookie now
        fresh = TestClient(ui.app(), base_url=LOCAL)
        assert fresh.get("/login", params={"code": code}).status_code == 401  # used up


def test_ui_refuses_a_public_address_without_a_token_and_a_bad_port(index_dir, capsys, monkeypatch):
    monkeypatch.delenv("HOPGRAPH_TOKEN", raising=False)
    assert main(["ui", "--index", str(index_dir), "--http", "0.0.0.0:8766"]) == 2
    assert "no authentication" in capsys.readouterr().err
    assert main(["ui", "--index", str(index_dir), "--http", "127.0.0.1:99999"]) == 2
    assert "port from 1 to 65535" in capsys.readouterr().err
    assert main(["ui", "--index", str(index_dir.parent / "nonexist")]) == 2
    assert "no index" in capsys.readouterr().err


def events(text):
    """Parse a server-sent event stream into (event, data) pairs."""
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_ask_without_an_llm_streams_the_evidence_and_how_to_set_one(client, monkeypatch):
    monkeypatch.setenv("HOPGRAPH_LLM", "none")
    reply = client.get("/api/ask", params={"q": QUESTION, "method": "gear"})
    assert reply.headers["content-type"].startswith("text/event-stream")
    [(kind, data)] = events(reply.text)
    assert kind == "evidence" and data["method"] == "gnn_ret" and len(data["evidence"]) == 5
    assert "HOPGRAPH_LLM" in data["hint"]


@pytest.mark.parametrize(
    ("params", "message"),
    [({"q": " ", "method": "gear"}, "the question is empty"),
     ({"q": "x", "method": "bm25x"}, "unknown method 'bm25x'"),
     ({"q": "x", "method": "gear", "k": "0"}, "k must be"),
     ({"q": "x", "method": "gear", "k": "²"}, "expected a whole number, got '²'")],
)  # fmt: skip
def test_ask_with_bad_input_streams_one_failure(client, params, message):
    [(kind, data)] = events(client.get("/api/ask", params=params).text)
    assert kind == "failed" and message in data["error"] and data["hint"]


def test_methods_list_the_agents_ask_offers(client):
    agents = set(client.get("/api/methods").json()["agents"])
    assert {"gear", "rgnn_ret", "tog2", "gnn_ret", "chat"} <= agents  # gnn_ret + the reader


def test_why_says_what_brought_a_hit_in_words():
    from hopgraph.page.queries import why
    from hopgraph.tools.shared.hits import Hit, Provenance

    def hit(*provenance):
        return Hit("c", 0.5, "T", "text", "d", provenance)

    message = Provenance("gnn_ret", "message from a top-K neighbour", 2, 0.5, ("d1#0", "link"))
    assert why(hit(message)) == (
        "gnn_ret: message from a top-K neighbour (pulled in by d1#0 over link)"
    )
    chain = Provenance("iier", "hop 2", 3, 0.4, ("a#0", "b#0", "c#0"))
    assert why(hit(chain)) == "iier: hop 2 (chain a#0 → b#0 → c#0)"
    assert why(hit(Provenance("bm25", "keyword match", 1, 3.0))) == "bm25: keyword match"
    assert why(hit()) == ""


# -- what the page shows: figures, code, graph labels, the example question --------------------

NOTES = {
    "signals.md": "# Signals\n\nSignals let a handler run when an event happens.\n\n"
    "## Connecting a handler\n\nCall `connect` with the handler:\n\n```python\n"
    "def on_started(sender):\n    print(sender)\n\nstarted.connect(on_started)\n```\n\n"
    "## Sending\n\nSend the signal with its sender:\n\n```python\nstarted.send('app')\n```\n\n"
    "## Disconnecting\n\nA handler stays connected until `disconnect` is called.\n",
}
LONG_FLOAT = r"\d\.\d{4}"


@pytest.fixture(scope="module")
def notes_client(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notes")
    for name, text in NOTES.items():
        (folder / name).write_text(text)
    index = folder.parent / (folder.name + "-idx")
    assert main(["index", str(folder), "--index", str(index), "--model", "hashing", "-q"]) == 0
    assert main(["graph", "build", "--index", str(index), "-q"]) == 0
    with LiveIndex(index) as live:
        yield TestClient(UIApp(live).app(), base_url=LOCAL)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(2.6666666666666665, "2.67"), (1.5, "1.5"), (3.0, "3"), (0.0, "0"), (0.0001, "≈ 0"),
     (1234567, "1,234,567"), (True, "yes"), (None, "—"), ("hashing", "hashing"),
     ({"structural": 5, "mean_degree": 2.5714}, "structural 5, edges per chunk (mean) 2.57")],
)  # fmt: skip
def test_a_figure_is_shown_rounded_and_in_words(value, shown):
    from hopgraph.page.formatting import figure

    assert figure(value) == shown


def test_the_index_view_gives_tables_of_words_and_rounded_figures(client):
    import re

    from hopgraph.graph_store.graphs.passage_graph import EDGE_TYPES

    tables = {t["caption"]: t for t in client.get("/api/index").json()["tables"]}
    assert list(tables) == ["Index", "Graphs", "Edges by type"]
    cells = [c for t in tables.values() for row in t["rows"] for c in row]
    assert all(isinstance(c, str) for c in cells)
    assert not any("_" in c or re.search(LONG_FLOAT, c) or "{" in c for c in cells), cells
    edges = tables["Edges by type"]["rows"]
    assert [row[0] for row in edges] == [*EDGE_TYPES, "all"]
    assert int(edges[-1][1]) == sum(int(row[1]) for row in edges[:-1])
    graph = dict(tables["Graphs"]["rows"])
    assert re.fullmatch(r"\d+(\.\d{1,2})?", graph["edges per chunk (mean)"])


def test_passage_parts_keep_code_as_code_highlighted_and_escaped():
    from hopgraph.page.formatting import passage_parts

    text = ("## Install\n\nRun this:\n\n```python\ndef f(x):\n    return '<b>'\n```\n\n"
            "Then:\n\n    indented = 1\n\nDone.")  # fmt: skip
    parts = passage_parts(text)
    assert [p["kind"] for p in parts] == ["heading", "text", "code", "text", "code", "text"]
    assert parts[0]["text"] == "Install" and parts[1]["text"] == "Run this:"
    python = parts[2]
    assert python["language"] == "python" and '<span class="k">def</span>' in python["html"]
    assert "\n    " in python["html"]  # its lines and indentation, as written
    assert "<b>" not in python["html"] and "&lt;b&gt;" in python["html"]
    assert parts[4]["language"] == "" and "indented" in parts[4]["html"]
    assert passage_parts("Plain words,\nover two lines.") == [
        {"kind": "text", "text": "Plain words,\nover two lines."}
    ]
    assert "<script>" not in passage_parts("```nosuchlanguage\n<script>\n```")[0]["html"]


def test_search_hits_carry_their_code_as_parts(notes_client):
    hits = notes_client.get("/api/search", params={"q": "connect a handler", "method": "bm25",
                                                   "k": 2}).json()["hits"]  # fmt: skip
    code = [p for h in hits for p in h["parts"] if p["kind"] == "code"]
    assert code and code[0]["language"] == "python" and 'class="k"' in code[0]["html"]


def test_node_labels_name_the_section_and_keep_its_innermost_headings():
    from hopgraph.page.formatting import LABEL_WIDTH, node_label

    assert node_label("Signals", "Signals > Sending") == "Signals › Sending"
    assert node_label("Larry Alcala", "Larry Alcala") == "Larry Alcala"
    assert node_label("Larry Alcala", "") == "Larry Alcala"
    deep = node_label("A manual", "A manual > Configuration reference > Environment variables")
    assert deep == "… › Environment variables" and len(deep) <= LABEL_WIDTH
    assert len(node_label("T", "x" * 100)) == LABEL_WIDTH


def test_graph_nodes_are_named_by_section_not_by_title(notes_client):
    body = notes_client.get("/api/graph", params={"q": "handler signal send connect",
                                                  "method": "bm25", "k": 4}).json()  # fmt: skip
    labels = [n["label"] for n in body["nodes"] if n["kind"] == "passage"]
    assert len(labels) == 4 and len(set(labels)) == 4, labels
    assert {n["title"] for n in body["nodes"] if n["kind"] == "passage"} == {"Signals"}
    assert all(f">{label}</text>" in body["svg"] for label in labels)


def test_the_example_question_is_drawn_from_the_index(client, notes_client):
    assert client.get("/api/methods").json()["example"] == "What is known about Larry Alcala?"
    example = notes_client.get("/api/methods").json()["example"]
    assert example == "What does Signals say about Connecting a handler?"


ROUTES = ["/", "/login?code=x", "/api/methods", "/api/search?q=alcala", "/api/graph?q=alcala",
          "/api/index", "/api/ask"]  # fmt: skip


def test_a_forged_host_gets_421_and_a_cross_site_origin_403_on_every_route(index_dir):
    with LiveIndex(index_dir) as live:
        for ui in (UIApp(live), UIApp(live, token="t0ken")):
            client = TestClient(ui.app(), base_url=LOCAL)
            auth = {"authorization": "Bearer t0ken"}
            for route in ROUTES:
                forged = client.get(route, headers={"host": "evil.example", **auth})
                assert forged.status_code == 421, route
                assert "--allow-host" in forged.json()["hint"]
                cross = client.get(route, headers={"origin": "https://evil.example", **auth})
                assert cross.status_code == 403, route
            assert client.get("/api/methods", headers=auth).status_code == 200
            for host in ("localhost:8766", "127.0.0.1", "[::1]:8766", "app.localhost"):
                assert client.get("/api/methods", headers={"host": host, **auth}).is_success
            same = {"origin": "http://127.0.0.1:8766", **auth}
            assert client.get("/api/methods", headers=same).status_code == 200


def test_named_hosts_pass_and_a_token_on_every_interface_lets_any_name_in(index_dir):
    with LiveIndex(index_dir) as live:
        named = TestClient(UIApp(live, allowed_hosts=["docs.lan"]).app(), base_url=LOCAL)
        assert named.get("/api/methods", headers={"host": "docs.lan:8766"}).status_code == 200
        assert named.get("/api/methods", headers={"origin": "http://docs.lan"}).status_code == 200
        assert named.get("/api/methods", headers={"host": "evil.example"}).status_code == 421
        bound = TestClient(UIApp(live, token="t", bound="10.0.0.5").app(), base_url=LOCAL)
        auth = {"authorization": "Bearer t"}
        assert bound.get("/api/methods", headers={"host": "10.0.0.5:8766", **auth}).is_success
        forged = bound.get("/api/methods", headers={"host": "evil.example", **auth})
        assert forged.status_code == 421
        every = TestClient(UIApp(live, token="t", bound="0.0.0.0").app(), base_url=LOCAL)
        assert every.get("/api/methods", headers={"host": "box.lan", **auth}).status_code == 200
        assert every.get("/api/methods", headers={"host": "box.lan"}).status_code == 401
        cross = {"host": "box.lan", "origin": "https://evil.example", **auth}
        assert every.get("/api/methods", headers=cross).status_code == 403


def test_a_question_over_the_limit_is_413_in_the_pages_json(client):
    long = "why " * (MAX_QUESTION // 4 + 1)
    for route in ("/api/search", "/api/graph"):
        reply = client.get(route, params={"q": long, "method": "bm25"})
        assert reply.status_code == 413 and "characters" in reply.json()["error"], route
    [(kind, data)] = events(client.get("/api/ask", params={"q": long, "method": "gear"}).text)
    assert kind == "failed" and "a server takes 10,000" in data["error"]


def test_errors_on_a_damaged_index_name_no_server_path(tmp_path):
    index_dir = build_docs_index(tmp_path / "idx", "hashing")
    with LiveIndex(index_dir) as live:
        client = TestClient(UIApp(live).app(), base_url=LOCAL)
        assert client.get("/api/search", params={"q": QUESTION, "method": "gnn_ret"}).is_success
        graph = json.loads((index_dir / "manifest.json").read_text())["files"]["graph"]
        (index_dir / graph / "passages-link.npz").write_bytes(b"not a graph")
        live.current().__dict__.pop("passage_graph", None)  # as a reopened generation reads it
        params = {"q": QUESTION, "method": "gnn_ret"}
        for route in ("/api/search", "/api/graph"):
            reply = client.get(route, params=params)
            assert reply.status_code == 400, route
            assert str(tmp_path) not in reply.text and "idx/g0" in reply.json()["error"]
            assert reply.json()["hint"] == "rebuild the graphs: `hopgraph graph build --index idx`"
        [(kind, data)] = events(client.get("/api/ask", params={**params, "method": "gear"}).text)
        assert kind == "failed" and str(tmp_path) not in json.dumps(data)


def test_a_servers_own_fault_is_a_500_in_json_with_no_detail(client, monkeypatch):
    import hopgraph.page.queries as queries

    def broken(*_args, **_kwargs):
        raise RuntimeError("/srv/secret/path exploded")

    monkeypatch.setattr(queries, "run_search", broken)
    reply = client.get("/api/search", params={"q": QUESTION})
    assert reply.status_code == 500 and "/srv" not in reply.text
    assert reply.json() == {"error": "the server failed (RuntimeError); its log has the details",
                            "hint": None}  # fmt: skip


def test_each_api_request_is_one_line_at_info_naming_no_question_text(client, caplog):
    with caplog.at_level("INFO", logger="hopgraph.page"):
        client.get("/api/search", params={"q": "secret words", "method": "bm25", "k": 2})
        client.get("/api/search", params={"q": "x", "method": "nope"})
    lines = [r.getMessage() for r in caplog.records if r.name == "hopgraph.page"]
    assert len(lines) == 2, lines
    assert lines[0].startswith("/api/search q=12 chars method=bm25 k=2: 200 in ")
    assert lines[1].startswith("/api/search q=1 chars method=nope: 400 in ")
    assert not any("secret" in line or "\n" in line for line in lines)


def test_a_request_another_sites_page_sent_is_refused_though_it_has_no_origin(index_dir):
    """A page on another site can make a browser GET /api/ask (an <img>, an EventSource) with
    no Origin, and spend LLM calls; the browser still says where the request comes from
    (Sec-Fetch-Site). Only a link to the page itself passes (issue 73, Deliver 5)."""
    with LiveIndex(index_dir) as live:
        client = TestClient(UIApp(live).app(), base_url=LOCAL)
        for route in ROUTES[2:]:
            sent = client.get(route, headers={"sec-fetch-site": "cross-site"})
            assert sent.status_code == 403, route
            assert "another site's page" in sent.json()["error"]
        link = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}
        assert client.get("/", headers=link).status_code == 200
        assert client.get("/api/ask?q=x", headers=link).status_code == 403
        # this machine (another port of localhost), as the Origin rule passes a loopback origin
        for site in ("same-origin", "same-site"):
            own = {"sec-fetch-site": site, "sec-fetch-mode": "cors"}
            assert client.get("/api/methods", headers=own).status_code == 200
        assert client.get("/api/methods", headers={"sec-fetch-site": "none"}).status_code == 200
        assert client.get("/api/methods").status_code == 200  # no browser: curl, a script
        simple = client.post("/api/ask", content="q=x", headers={"content-type": "text/plain"})
        assert simple.status_code == 415 and "takes JSON" in simple.json()["error"]


@pytest.mark.parametrize("server", ["mcp", "langgraph"])
def test_the_other_servers_refuse_a_cross_site_or_simple_post_alike(server, monkeypatch):
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from hopgraph.core.network import HostGuard

    inner = Starlette(routes=[Route("/mcp", lambda r: PlainTextResponse("ok"), methods=["POST"])])
    if server == "langgraph":
        from hopgraph.agents.server_http import ServerGuard

        monkeypatch.delenv("HOPGRAPH_TOKEN", raising=False)
        app = ServerGuard(inner)
    else:
        app = HostGuard(inner, "127.0.0.1")
    client = TestClient(app, base_url="http://127.0.0.1:8000")
    json_body = {"content-type": "application/json"}
    assert client.post("/mcp", content="{}", headers=json_body).status_code == 200
    crossed = client.post(
        "/mcp", content="{}", headers={**json_body, "sec-fetch-site": "cross-site"}
    )
    assert crossed.status_code == 403
    plain = client.post("/mcp", content="{}", headers={"content-type": "text/plain"})
    assert plain.status_code == 415


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js to parse the page's script")
def test_the_pages_script_parses(tmp_path):
    """A syntax error stops the whole script: the page would load and never ask for its methods
    (the browser test then waits on a request that never comes)."""
    from hopgraph.page.html import PAGE

    script = tmp_path / "page.js"
    script.write_text(PAGE.split("<script>")[1].split("</script>")[0], encoding="utf-8")
    checked = subprocess.run(["node", "--check", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_the_icon_is_served_without_the_token(index_dir):
    """``/favicon.ico`` holds nothing of the index: a browser asks for it first, token or not."""
    with LiveIndex(index_dir) as live:
        reply = TestClient(UIApp(live, token="s3cret").app(), base_url=LOCAL).get("/favicon.ico")
    assert reply.status_code == 200 and reply.headers["content-type"] == "image/x-icon"
    assert reply.content[:4] == b"\0\0\1\0"  # an ICO: reserved 0, type 1 (icon)
