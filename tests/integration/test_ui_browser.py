"""`hopgraph ui` in a real browser (Debian's chromium driven by Playwright), on a real server.

Searches a sample question with gnn_ret, sees its hits and their provenance, adds hybrid beside
it, opens the evidence graph and counts its nodes and edges against the JSON the server gives,
asks a second question (the first one's graph goes), and opens the index view; no view may show
``[object Object]``, ``undefined`` or a float of more than 3 decimals. On a small manual (Markdown
with code): the loading states, code shown as highlighted code, graph nodes named by section, the
example question drawn from the index, and a late graph of an earlier question never drawn.
Screenshots of each view land in the test's folder, and in docs/ when
HOPGRAPH_UPDATE_SCREENSHOTS=1 (how the README's pictures are made).
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.integration.conftest import free_port, wait_until_up

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
QUESTION = "When did military instruction start where Larry Alcala was educated?"
SECOND = "Which county is Van Hook Township in?"
DOCS = Path(__file__).resolve().parents[2] / "docs"


@contextlib.contextmanager
def running_ui(index_dir, tmp_path, **env):
    """Run `hopgraph ui` on a free loopback port with ``env`` (no LLM unless it names one)."""
    port = free_port()
    log = (tmp_path / "ui.log").open("w")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HOPGRAPH_LLM", "OPENAI"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hopgraph", "ui", "--index", str(index_dir),
         "--http", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
        env={**base, "HF_HUB_OFFLINE": "1", "HOPGRAPH_CACHE": str(tmp_path / "cache"), **env},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_until_up(
        lambda: urllib.request.urlopen(f"{url}/api/methods", timeout=5).read(),
        proc, "the ui server", lambda: (tmp_path / "ui.log").read_text(),
    )  # fmt: skip
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture
def server(real_docs_index_dir, tmp_path):
    with running_ui(real_docs_index_dir, tmp_path) as url:
        yield url


def shoot(page, name, tmp_path):
    page.screenshot(path=str(tmp_path / name), full_page=True)
    if os.environ.get("HOPGRAPH_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(tmp_path / name, DOCS / name)


UNFINISHED = re.compile(r"\[object Object\]|\bundefined\b|\bNaN\b|\d\.\d{4}")
"""What a view must never show: an object or a missing value printed, a float unrounded."""


def assert_reads_well(page, view):
    text = page.inner_text(f"#view-{view}")
    assert not UNFINISHED.search(text), UNFINISHED.search(text).group()


def api_graph(url, question, method, k, gold=""):
    query = {"q": question, "method": method, "k": str(k), "gold": gold}
    return json.loads(urllib.request.urlopen(
        f"{url}/api/graph?{urllib.parse.urlencode(query)}", timeout=30).read())  # fmt: skip


DRAWN = """svg => {
  const box = (e) => { const b = e.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height]; };
  const view = svg.viewBox.baseVal;
  return {
    labels: [...svg.querySelectorAll("text.label")].map((t) => [t.textContent, box(t)]),
    nodes: [...svg.querySelectorAll("circle, rect")]
      .map((n) => [n.closest("g").dataset.id, box(n)]),
    view: [view.x, view.y, view.x + view.width, view.y + view.height],
  };
}"""
"""Every label's and node's box as Chromium lays the text out, and the drawing's view box."""


def overlap(a, b):
    return max(min(a[2], b[2]) - max(a[0], b[0]), 0) * max(min(a[3], b[3]) - max(a[1], b[1]), 0)


def assert_drawn_clear(page):
    """Issue 74: no label covers a node or another label, none is cut at the drawing's edge,
    and the drawing starts within one screen of the list it explains."""
    drawn = page.eval_on_selector("#drawing svg", DRAWN)
    assert drawn["labels"], drawn
    for at, (text, a) in enumerate(drawn["labels"]):
        x0, y0, x1, y1 = drawn["view"]
        assert x0 <= a[0] and y0 <= a[1] and a[2] <= x1 and a[3] <= y1, (text, a, drawn["view"])
        for other, b in drawn["labels"][at + 1 :]:
            assert overlap(a, b) < 1, (text, other)
        for node, b in drawn["nodes"]:
            assert overlap(a, b) < 1, (text, node)
    top = page.eval_on_selector("#results", "e => e.getBoundingClientRect().top")
    graph = page.eval_on_selector("#drawing svg", "e => e.getBoundingClientRect().top")
    assert graph - top < page.viewport_size["height"], (top, graph)


def drawn_passages(page):
    ids = "gs => gs.map(g => g.dataset.id)"
    return set(page.eval_on_selector_all("#drawing svg g.passage", ids))


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_search_compare_graph_and_index_in_a_browser(server, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        missing = []  # every request the page makes is answered: the icon too
        page.on("response", lambda r: r.status == 404 and missing.append(r.url))
        page.goto(server)
        page.wait_for_selector("body[data-ready='1']")
        icon = urllib.request.urlopen(f"{server}/favicon.ico", timeout=5)
        assert icon.headers["content-type"] == "image/x-icon" and icon.read(4) == b"\0\0\1\0"
        # the example comes from the index's first document, not a question fixed in the page
        assert page.get_attribute("#q", "placeholder") == "e.g. What is known about Larry Alcala?"
        page.fill("#q", QUESTION)
        page.select_option("#method", "gnn_ret")
        page.fill("#gold", "d1,d2")
        page.click("#go")
        page.wait_for_selector(".column[data-method='gnn_ret'] .hit")
        whys = page.locator(".column[data-method='gnn_ret'] .why").all_text_contents()
        assert len(whys) == 5 and all(w.startswith("gnn_ret: ") for w in whys)
        assert any("pulled in by" in w for w in whys), whys  # a message over a graph edge
        assert_reads_well(page, "search")
        shoot(page, "ui-search.png", tmp_path)

        page.select_option("#compare", "hybrid")
        page.click("#go")
        page.wait_for_selector(".column[data-method='hybrid'] .hit")
        assert page.locator(".column").count() == 2

        page.click("#show-graph")
        page.wait_for_selector("#drawing svg")
        expected = api_graph(server, QUESTION, "gnn_ret", 5, "d1,d2")
        passages = [n for n in expected["nodes"] if n["kind"] == "passage"]
        assert page.locator("#drawing svg g.passage").count() == len(passages)
        assert page.locator("#drawing svg g.entity").count() == len(expected["nodes"]) - len(
            passages
        )
        assert page.locator("#drawing svg line.edge").count() == len(expected["edges"])
        assert page.locator("#drawing svg g.passage.gold").count() >= 1
        assert_drawn_clear(page)
        assert_reads_well(page, "search")
        shoot(page, "ui-graph.png", tmp_path)

        # a second question: the first one's graph goes with its search, the new one is its own
        first = drawn_passages(page)
        page.fill("#q", SECOND)
        page.fill("#k", "2")
        page.click("#go")
        assert page.locator("#drawing svg").count() == 0  # cleared as the search starts
        page.wait_for_selector(".column[data-method='gnn_ret'] .hit")
        assert page.locator("#drawing svg").count() == 0 and not page.inner_text("#graph").strip()
        page.click("#show-graph")
        page.wait_for_selector("#drawing svg")
        second = {n["id"] for n in api_graph(server, SECOND, "gnn_ret", 2, "d1,d2")["nodes"]
                  if n["kind"] == "passage"}  # fmt: skip
        assert drawn_passages(page) == second and second != first
        assert SECOND in page.inner_text("#graph-title")
        assert_reads_well(page, "search")
        page.fill("#k", "5")

        page.fill("#q", "")
        page.click("#go")
        page.wait_for_selector("#error:has-text('the question is empty')")

        page.click("#tab-ask")
        page.click("#ask")  # the question carried over from Search is empty
        page.wait_for_selector("#ask-error:has-text('the question is empty')")
        page.fill("#ask-q", QUESTION)
        page.select_option("#agent", "gear")
        page.click("#ask")
        page.wait_for_selector("#ask-evidence li")
        assert "from the passages' own sentences" in page.text_content("#answer")
        assert page.locator("#answer .extractive li").count() >= 1
        assert "no written answer" in page.text_content("#usage")
        assert "HOPGRAPH_LLM" in page.text_content("#usage")
        assert_reads_well(page, "ask")

        page.click("#tab-index")
        page.wait_for_selector("#index-info .sound")
        assert page.locator("#documents tr").count() == 1 + 6  # a header and the six documents
        edges = page.locator("table:has(caption:text('Edges by type')) tr")
        assert edges.count() == 1 + 5 + 1  # a header, the five types, all
        assert_reads_well(page, "index")
        shoot(page, "ui-index.png", tmp_path)
        assert not missing, missing
        browser.close()


MANUAL = {
    "signals.md": """# Signals

Signals let a handler run when something happens in the application.

## Connecting a handler

Call `connect` with the function to run; it is called with the sender and the signal's data:

```python
from relay import signal

started = signal("started")


def on_started(sender, **data):
    print(f"{sender} started, version {data['version']}")


started.connect(on_started)
```

## Sending a signal

Send it with the sender and any data; every connected handler runs in turn:

```python
started.send("app", version=2)
```

## Disconnecting

A handler stays connected until `disconnect` is called with it.
""",
    "configuration.md": """# Configuration

Settings come from `relay.toml` in the working folder, then from the environment.

## The settings file

```toml
[server]
host = "127.0.0.1"
port = 8080
workers = 4
```

## Environment variables

`RELAY_PORT` overrides the port and `RELAY_WORKERS` the number of workers.
""",
}
HANDLER = "How do I connect a handler to a signal?"
PORT = "Which port does the server listen on?"


def hold(page, pattern):
    """Hold the page's requests to ``pattern`` until the test lets them go: (held, release)."""
    held = []
    page.route(pattern, lambda route: held.append(route))

    def release():
        while held:
            held.pop().continue_()
        page.unroute(pattern)

    def wait():
        while not held:
            page.wait_for_timeout(20)

    return wait, release


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_a_manual_shows_code_sections_loading_and_only_the_latest_graph(tmp_path):
    from playwright.sync_api import sync_playwright

    from hopgraph.cli import main

    notes = tmp_path / "manual"
    notes.mkdir()
    for name, text in MANUAL.items():
        (notes / name).write_text(text)
    index = tmp_path / "manual-index"
    assert main(["index", str(notes), "--index", str(index), "--model", "hashing", "-q"]) == 0
    assert main(["graph", "build", "--index", str(index), "-q"]) == 0
    with running_ui(index, tmp_path) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})

        # a cold server: the method list says it is loading, and nothing can be sent meanwhile
        wait, release = hold(page, re.compile(r"/api/methods$"))
        page.goto(url, wait_until="domcontentloaded")
        wait()
        assert "loading methods" in page.inner_text("#method") and page.is_disabled("#go")
        assert page.locator("#description.loading").count() == 1
        release()
        page.wait_for_selector("body[data-ready='1']")
        example = json.loads(urllib.request.urlopen(f"{url}/api/methods").read())["example"]
        assert page.get_attribute("#q", "placeholder") == "e.g. " + example
        assert example.startswith(("What does Signals", "What does Configuration"))

        # results say they are coming
        page.fill("#q", HANDLER)
        page.select_option("#method", "bm25")
        page.fill("#k", "2")
        wait, release = hold(page, re.compile(r"/api/search\?"))
        page.click("#go")
        wait()
        assert "searching with bm25" in page.inner_text("#results .loading")
        release()
        page.wait_for_selector(".hit")

        # inline code as code, never its backticks
        assert "`" not in page.inner_text("#results")
        assert "connect" in page.locator(".hit .passage code.inline").all_text_contents()
        # code as code: its own lines, highlighted, in a preformatted block
        code = page.locator(".hit pre.code").first
        assert "\n    print(" in code.inner_text()
        assert code.evaluate("e => getComputedStyle(e).whiteSpace") == "pre"
        assert code.locator("span.k, span.kn").count() >= 2  # def, from, import
        assert_reads_well(page, "search")

        # a graph still on its way when a new search starts is never drawn
        wait, release = hold(page, re.compile(r"/api/graph\?"))
        page.click("#show-graph")
        wait()
        page.fill("#q", PORT)
        page.click("#go")
        page.wait_for_selector(".hit[data-id^='configuration.md']")
        with page.expect_response(re.compile(r"/api/graph\?")):
            release()
        page.wait_for_timeout(300)
        assert page.locator("#drawing svg").count() == 0

        # two questions: the graph shows the second's passages only, each named by its section
        first = {n["id"] for n in api_graph(url, HANDLER, "bm25", 2)["nodes"]
                 if n["kind"] == "passage"}  # fmt: skip
        page.click("#show-graph")
        page.wait_for_selector("#drawing svg")
        second = {n["id"] for n in api_graph(url, PORT, "bm25", 2)["nodes"]
                  if n["kind"] == "passage"}  # fmt: skip
        assert drawn_passages(page) == second and not first & second
        assert PORT in page.inner_text("#graph-title")

        page.fill("#q", HANDLER)
        page.select_option("#method", "gnn_ret")
        page.fill("#k", "4")
        page.click("#go")
        page.wait_for_selector(".column[data-method='gnn_ret'] .hit")
        page.click("#show-graph")
        page.wait_for_selector("#drawing svg")
        labels = page.locator("#drawing svg g.passage > text:last-of-type").all_text_contents()
        assert len(labels) == 4 and len(set(labels)) == 4, labels  # not one title four times
        assert any(" › " in label for label in labels), labels
        assert_drawn_clear(page)
        assert_reads_well(page, "search")
        shoot(page, "ui-code.png", tmp_path)

        # the answer without an LLM: normal type, inline code as code, code blocks whole
        page.click("#tab-ask")
        page.fill("#ask-q", PORT)  # answered by a sentence with inline code and a TOML block
        page.select_option("#agent", "gear")
        page.click("#ask")
        page.wait_for_selector("#answer .extractive li")
        answer = page.locator("#answer")
        assert "`" not in answer.inner_text()
        assert "RELAY_PORT" in answer.locator("code.inline").all_text_contents()
        assert "port = 8080" in answer.locator("pre.code").first.inner_text()
        assert answer.evaluate("e => getComputedStyle(e).fontWeight") == "400"
        shoot(page, "ui-ask-code.png", tmp_path)
        browser.close()


STALL = 2.0
"""Seconds the scripted model waits before its last reply: steps shown before it streamed."""


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_ask_shows_the_agents_steps_before_its_answer(real_docs_index_dir, tmp_path):
    from playwright.sync_api import sync_playwright

    from hopgraph.evals.servers.scripted_llm import ScriptedOpenAIServer
    from tests.agent_scripts import NOT_YET, gear_script

    script = gear_script([NOT_YET, "Answerable: Yes\nAnswer: 1936"])

    def respond(prompt, n):  # the reader's reply comes STALL seconds late
        if "reading comprehension" in prompt and n < 10**6:
            return STALL
        return 200, script(prompt)

    with (
        ScriptedOpenAIServer(respond) as llm,
        running_ui(real_docs_index_dir, tmp_path, HOPGRAPH_LLM_MODEL="scripted",
                   HOPGRAPH_LLM_BASE_URL=llm.url) as url,
        sync_playwright() as pw,
    ):  # fmt: skip
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']")
        page.evaluate("""() => { window.seen = [];
          new MutationObserver(() => window.seen.push([performance.now(),
            document.querySelectorAll('#steps li').length,
            document.getElementById('answer').textContent]))
          .observe(document.getElementById('view-ask'), {childList: true, subtree: true,
                                                          characterData: true}); }""")
        page.click("#tab-ask")
        page.fill("#ask-q", QUESTION)
        page.select_option("#agent", "gear")
        page.click("#ask")
        # the written answer under its head, in normal type, its text as a passage's
        page.wait_for_selector("#answer .passage:has-text('1936')", timeout=90_000)
        assert page.text_content("#answer .head") == "answer:"
        seen = page.evaluate("window.seen")
        answered = next(t for t, _, text in seen if text.startswith("answer:1936"))
        two_steps = next(t for t, steps, _ in seen if steps >= 2)
        assert answered - two_steps > 1000 * STALL / 2  # shown while the reader was still out
        assert page.locator("#ask-evidence li.cited").count() >= 1
        assert "LLM calls" in page.text_content("#usage")
        shoot(page, "ui-ask.png", tmp_path)
        browser.close()


XSS = '<img src=x onerror="window.pwned=1">'


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_markup_in_documents_and_questions_is_shown_as_text(tmp_path):
    from playwright.sync_api import sync_playwright

    from hopgraph.cli import main

    corpus = tmp_path / "c.jsonl"
    docs = [{"id": f"x{XSS}", "title": XSS, "text": f"{XSS} Larry Alcala studied here."},
            {"id": "d2", "title": "Other", "text": "Larry Alcala was a cartoonist."}]  # fmt: skip
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    index = tmp_path / "idx"
    assert main(["index", str(corpus), "--index", str(index), "--model", "hashing", "-q"]) == 0
    assert main(["graph", "build", "--index", str(index), "-q"]) == 0
    with running_ui(index, tmp_path) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']")
        page.fill("#q", XSS + " Larry Alcala")
        page.select_option("#method", "bm25")
        page.click("#go")
        page.wait_for_selector(".hit")
        page.click("#show-graph")
        page.wait_for_selector("#drawing svg")
        assert XSS in page.text_content("#results")  # shown, as text
        assert page.evaluate("window.pwned") is None and not dialogs
        assert page.locator("#results img, #drawing img").count() == 0
        browser.close()


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_chat_on_the_page_keeps_its_conversation(real_docs_index_dir, tmp_path):
    from playwright.sync_api import sync_playwright

    from hopgraph.evals.servers.scripted_llm import ScriptedOpenAIServer
    from tests.integration.test_chat_pty import reply

    with (
        ScriptedOpenAIServer(lambda prompt, n: (200, reply(prompt))) as llm,
        running_ui(real_docs_index_dir, tmp_path, HOPGRAPH_LLM_MODEL="scripted",
                   HOPGRAPH_LLM_BASE_URL=llm.url) as url,
        sync_playwright() as pw,
    ):  # fmt: skip
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']")
        page.click("#tab-ask")
        page.select_option("#agent", "chat")
        page.fill("#ask-q", QUESTION)
        page.click("#ask")
        page.wait_for_selector("#answer:has-text('1936')", timeout=90_000)
        page.fill("#ask-q", "Where is it?")
        page.click("#ask")
        page.wait_for_selector("#answer:has-text('Manila')", timeout=90_000)
        steps = page.text_content("#steps")
        assert "as a standalone question: Where is the University of Santo Tomas?" in steps
        assert "University of Santo Tomas" in page.text_content("#ask-evidence")
        browser.close()
