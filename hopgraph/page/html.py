"""The page `hopgraph ui` serves: HTML, CSS and vanilla JS in one string, nothing fetched from afar.

Every string that comes from the index or the user is put into the page with ``textContent``
(never parsed as HTML); the evidence graph's SVG is drawn by the server, which escapes every
title, id and entity in it (hopgraph.explain), and so is highlighted code, which Pygments
escapes (hopgraph.page.formatting). ``{index_name}`` is replaced, escaped, by the server.
"""

from .formatting import code_css

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>hopgraph: {index_name}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/favicon.ico">
<style>
body { font: 14px system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
header { background: #1f3a5f; color: #fff; padding: .6em 1.2em; display: flex; gap: 1.5em;
  align-items: baseline; }
header h1 { font-size: 1.2em; margin: 0; } header nav button { background: none; border: 0;
  color: #cfe0f5; font-size: 1em; cursor: pointer; } header nav button.on { color: #fff;
  text-decoration: underline; }
main { padding: 1em 1.2em; } section[hidden] { display: none; }
form { display: grid; grid-template-columns: 9em 1fr; gap: .4em .8em; max-width: 60em; }
form input, form select, form textarea { font: inherit; padding: .25em; }
#description { grid-column: 2; color: #555; font-size: .9em; }
.buttons { grid-column: 2; display: flex; gap: .6em; }
#error { color: #a00; white-space: pre-wrap; margin: .6em 0; }
#results { display: grid; gap: 1em; grid-template-columns: repeat(auto-fit, minmax(24em, 1fr)); }
.column h2 { font-size: 1em; margin: .4em 0; }
.hit { background: #fff; border: 1px solid #ddd; border-radius: 4px; padding: .5em .7em;
  margin-bottom: .5em; }
.hit .head { font-weight: 600; } .hit .meta { color: #666; font-size: .85em; }
.hit .why { color: #8a4b08; font-size: .85em; } .hit .passage { margin-top: .3em; }
.hit.gold { border: 2px solid #d4ac0d; }
.passage .text { white-space: pre-wrap; margin: .3em 0; overflow-wrap: anywhere; }
.passage .heading { font-weight: 600; margin: .5em 0 .2em; }
pre.code { margin: .4em 0; padding: .5em .7em; border: 1px solid #e3e3e3; border-radius: 4px;
  overflow: auto; max-height: 28em; font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", monospace;
  position: relative; }
pre.code[data-language]:not([data-language=""])::after { content: attr(data-language);
  position: absolute; top: .2em; right: .5em; color: #999; font: 11px system-ui, sans-serif; }
.loading { color: #666; font-style: italic; }
.loading::before { content: ""; display: inline-block; width: .8em; height: .8em;
  margin-right: .45em; vertical-align: -.1em; border: 2px solid #c8d3e0;
  border-top-color: #1f3a5f; border-radius: 50%; animation: spin .9s linear infinite; }
@keyframes spin { to { transform: rotate(360deg); } }
#out.with-graph { display: grid; gap: 1em; align-items: start;
  grid-template-columns: minmax(0, 3fr) minmax(22em, 2fr); }
#out.with-graph #results { grid-template-columns: repeat(auto-fit, minmax(20em, 1fr)); }
#out.with-graph #graph { position: sticky; top: .5em; max-height: calc(100vh - 1em);
  overflow: auto; }
@media (max-width: 60em) { #out.with-graph { grid-template-columns: 1fr; } }
#graph h2 { font-size: 1em; margin: .4em 0 .3em; } #graph p { margin: .3em 0; }
#graph svg { background: #fff; border: 1px solid #ddd; max-width: 100%; height: auto; }
code.inline { font: .92em ui-monospace, "DejaVu Sans Mono", monospace; background: #f0f0f0;
  padding: 0 .25em; border-radius: 3px; }
table { border-collapse: collapse; background: #fff; } td, th { border: 1px solid #ddd;
  padding: .2em .5em; text-align: left; vertical-align: top; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
.tables { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.tables th[scope="row"] { font-weight: normal; color: #444; }
td.figure { text-align: right; font-variant-numeric: tabular-nums; }
#ask-evidence li { margin-bottom: .5em; }
#ask-evidence .answering { background: #fff6d5; padding: .1em .3em; margin: .2em 0; }
#answer .extractive ul { margin: .3em 0; padding-left: 1.2em; }
#answer .extractive li > .passage, #answer .extractive li > .passage > .text,
.answering > .passage, .answering > .passage > .text { display: inline; }
#steps li { color: #444; font-family: ui-monospace, monospace; font-size: .9em; }
#answer { margin: .6em 0; } #answer > .head { font-weight: 600; } .note { color: #666; }
#ask-error { color: #a00; white-space: pre-wrap; }
#ask-evidence li.cited > .head { font-weight: 600; }
/*code-css*/
.sound { color: #176b2c; font-weight: 600; } .unsound { color: #a00; font-weight: 600; }
</style></head>
<body>
<header><h1>hopgraph · <span id="index-name">{index_name}</span></h1>
<nav><button id="tab-search" class="on">Search</button><button id="tab-ask">Ask</button>
<button id="tab-index">Index</button></nav>
</header>
<main>
<section id="view-search">
<form id="search">
<label for="q">question</label><input id="q" name="q" autocomplete="off">
<label for="method">method</label><select id="method" name="method" disabled aria-busy="true">
  <option value="">loading methods …</option></select>
<div id="description" class="loading">reading the index for the methods it runs …</div>
<label for="compare">compare with</label><select id="compare" name="compare" disabled>
  <option value="">(none)</option></select>
<label for="k">passages (k)</label><input id="k" name="k" type="number" min="1" max="50" value="5">
<label for="where">filters</label><textarea id="where" name="where" rows="2"
  placeholder="one per line, as --where: doc_id in a|b, section~=Install"></textarea>
<label for="expand">expand</label><input id="expand" name="expand"
  placeholder="section, neighbours or neighbours:N">
<label for="gold">gold ids</label><input id="gold" name="gold" placeholder="d1,d2 (highlighted)">
<div class="buttons"><button id="go" type="submit" disabled>Search</button>
  <button id="show-graph" type="button" disabled>Evidence graph</button></div>
</form>
<div id="error" role="alert"></div>
<div id="out"><div id="results"></div>
<div id="graph"><h2 id="graph-title"></h2><p id="graph-counts"></p><p id="legend"></p>
<div id="drawing"></div></div></div>
</section>
<section id="view-ask" hidden>
<form id="ask-form">
<label for="ask-q">question</label><input id="ask-q" autocomplete="off">
<label for="agent">method</label><select id="agent" disabled>
  <option value="">loading methods …</option></select>
<div class="buttons"><button id="ask" type="submit" disabled>Ask</button></div>
</form>
<p class="note">An agent answers with the LLM of HOPGRAPH_LLM_* (or HOPGRAPH_LLM=local); its steps
appear as they happen; chat keeps the conversation of this page, so follow-ups may say "it". Without
an LLM the page answers with the passages' own sentences that answer, each citing its passage, and
says how to set one.</p>
<div id="ask-error" role="alert"></div>
<ol id="steps"></ol>
<div id="answer"></div><p id="usage"></p>
<ol id="ask-evidence"></ol>
</section>
<section id="view-index" hidden><div id="index-info"></div></section>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => { const e = document.createElement(tag);
  if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
const loading = (tag, text) => el(tag, "loading", text);
let methods = [];
let searchRun = 0, graphRun = 0;  // a reply to an earlier request is dropped, never drawn

async function api(path, params) {
  const query = new URLSearchParams(params || {});
  const reply = await fetch(path + (params ? "?" + query : ""), {credentials: "same-origin"});
  const body = await reply.json();
  if (!reply.ok) { throw body; }
  return body;
}
function showError(err) {
  $("error").textContent = err && err.error
    ? err.error + (err.hint ? "\\nhint: " + err.hint : "") : String(err);
}
function params(method) {
  const p = new URLSearchParams();
  p.set("q", $("q").value); p.set("method", method); p.set("k", $("k").value);
  for (const line of $("where").value.split("\\n")) { if (line.trim()) p.append("where", line); }
  if ($("expand").value.trim()) p.set("expand", $("expand").value);
  if ($("gold").value.trim()) p.set("gold", $("gold").value);
  return p;
}
const INLINE = /``([^`]+?)``|`([^`\\n]+)`/g;  // Markdown's `code`, reStructuredText's ``code``
function inline(tag, cls, text) {  // text with its inline code as code, each piece as text
  const out = el(tag, cls); let at = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > at) out.append(text.slice(at, m.index));
    out.append(el("code", "inline", m[1] || m[2])); at = m.index + m[0].length;
  }
  if (at < text.length) out.append(text.slice(at));
  return out;
}
function passage(parts) {
  const body = el("div", "passage");
  for (const part of parts) {  // kind "text" or "heading": shown as text, inline code as code
    if (part.kind !== "code") { body.append(inline("div", part.kind, part.text)); continue; }
    const pre = el("pre", "code"); pre.dataset.language = part.language;
    const code = el("code"); code.innerHTML = part.html;  // highlighted and escaped by Pygments
    pre.append(code); body.append(pre);
  }
  return body;
}
const headings = (h) => (h.section || h.title).split(" > ");
function body(h) {  // a heading the card's head already names is not said twice
  const [first, ...rest] = h.parts;
  const said = first && first.kind === "heading" && first.text === headings(h).at(-1);
  return passage(said ? rest : h.parts);
}
function column(result) {
  const gold = new Set($("gold").value.split(",").map((s) => s.trim()).filter(Boolean));
  const col = el("div", "column"); col.dataset.method = result.method;
  col.append(el("h2", null, result.method + ": " + result.hits.length + " passages"));
  for (const h of result.hits) {
    const card = el("div", "hit" + (gold.has(h.doc_id) ? " gold" : ""));
    card.dataset.id = h.id;
    card.append(el("div", "head", "#" + h.rank + "  " + headings(h).join(" › ")));
    card.append(el("div", "meta", h.id + " · score " + h.score.toFixed(3)));
    card.append(el("div", "why", h.why));
    card.append(body(h));
    col.append(card);
  }
  return col;
}
function clearGraph() {
  graphRun++;
  $("out").classList.remove("with-graph");
  for (const id of ["graph-title", "graph-counts", "legend"]) $(id).replaceChildren();
  $("drawing").replaceChildren();
}
async function search(event) {
  if (event) event.preventDefault();
  const run = ++searchRun;
  clearGraph();  // the graph drawn was the last question's
  $("error").textContent = "";
  const chosen = [$("method").value, $("compare").value].filter(Boolean);
  $("results").replaceChildren(...chosen.map((m) => {
    const col = el("div", "column"); col.append(loading("p", "searching with " + m + " …"));
    return col; }));
  try {
    const found = await Promise.all(chosen.map((m) => api("/api/search?" + params(m))));
    if (run === searchRun) $("results").replaceChildren(...found.map(column));
  } catch (err) {
    if (run === searchRun) { $("results").replaceChildren(); showError(err); }
  }
}
async function graph() {
  clearGraph();
  const run = graphRun;
  $("error").textContent = "";
  $("out").classList.add("with-graph");  // beside the list it explains
  $("graph-counts").replaceChildren(loading("span", "drawing the evidence graph …"));
  try {
    const g = await api("/api/graph?" + params($("method").value));
    if (run !== graphRun) return;
    const passages = g.nodes.filter((n) => n.kind === "passage").length;
    $("graph-title").textContent = "Evidence graph of “" + g.question + "”";
    $("graph-counts").textContent = g.method + ": " + g.nodes.length + " nodes (" + passages +
      " passages), " + g.edges.length + " edges";
    $("legend").innerHTML = g.legend;   // drawn and escaped by the server
    $("drawing").innerHTML = g.svg;     // drawn and escaped by the server
  } catch (err) {
    if (run !== graphRun) return;
    $("out").classList.remove("with-graph"); $("graph-counts").replaceChildren(); showError(err);
  }
}
function describe() {
  const m = methods.find((x) => x.name === $("method").value);
  $("description").textContent = m ? m.description : "";
}
const FIGURE = /^[\\d,.≈ —]+$/;  // a cell that is a number: right-aligned
function table(t) {
  const out = el("table"); out.append(el("caption", null, t.caption));
  if (t.head.some(Boolean)) {
    const tr = el("tr"); for (const h of t.head) tr.append(el("th", null, h)); out.append(tr);
  }
  for (const [first, ...rest] of t.rows) {
    const tr = el("tr"); const th = el("th", null, first); th.scope = "row"; tr.append(th);
    for (const cell of rest) tr.append(el("td", FIGURE.test(cell) ? "figure" : null, cell));
    out.append(tr);
  }
  return out;
}
async function showIndex() {
  const box = $("index-info"); box.replaceChildren(loading("p", "reading the index …"));
  try {
    const info = await api("/api/index");
    const tables = el("div", "tables"); tables.append(...info.tables.map(table));
    const check = el("p", info.check.sound ? "sound" : "unsound", info.check.sound
      ? "check: sound, every part is readable and they agree"
      : "check: " + info.check.problems.length + " problems");
    const problems = el("ul");
    for (const p of info.check.problems) problems.append(el("li", null,
      p.where + ": " + p.what + " (fix: " + p.fix + ")"));
    const docs = el("table"); docs.id = "documents";
    const head = el("tr"); docs.append(head);
    head.append(el("th", null, "document"), el("th", null, "title"), el("th", null, "chunks"));
    for (const d of info.documents) { const tr = el("tr");
      tr.append(el("td", null, d.id), el("td", null, d.title),
                el("td", "figure", d.chunks.toLocaleString("en")));
      docs.append(tr); }
    const shown = info.documents.length < info.documents_total
      ? " (the first " + info.documents.length + ")" : "";
    box.replaceChildren(tables, check, problems,
      el("h2", null, info.documents_total.toLocaleString("en") + " documents" + shown), docs);
  } catch (err) { box.replaceChildren(el("p", "unsound", err.error || String(err))); }
}
function tab(which) {
  for (const name of ["search", "ask", "index"]) {
    $("view-" + name).hidden = which !== name;
    $("tab-" + name).classList.toggle("on", which === name);
  }
  if (which === "index") showIndex();
  if (which === "ask" && !$("ask-q").value) $("ask-q").value = $("q").value;
}
function evidenceList(items) {
  $("ask-evidence").replaceChildren(...items.map((e) => {
    const li = el("li", e.cited ? "cited" : "");
    li.append(el("div", "head", (e.cited ? "* " : "") + e.title + " (" + e.id + ")"));
    if (e.answering) {  // its best sentence, code as code
      const line = el("div", "answering"); line.append("answering: ", passage(e.answering_parts));
      li.append(line);
    }
    li.append(passage(e.parts));
    return li; }));
}
function extractive(answer) {  // the passages' own sentences, each citing its passage
  const box = el("div", "extractive");
  box.append(el("div", "head", "answer, from the passages' own sentences (no LLM):"));
  const list = el("ul");
  for (const s of answer.sentences) {
    const item = el("li"); item.append("[" + s.passage + "] ", passage(s.parts));
    list.append(item);
  }
  box.append(list);
  return box;
}
let source = null;
let thread = Math.random().toString(36).slice(2) + Date.now().toString(36);  // this page's chat
function ask(event) {
  event.preventDefault();
  if (source) source.close();
  for (const id of ["steps", "ask-evidence"]) $(id).replaceChildren();
  for (const id of ["answer", "usage", "ask-error"]) $(id).textContent = "";
  const p = new URLSearchParams({q: $("ask-q").value, method: $("agent").value, thread});
  source = new EventSource("/api/ask?" + p);
  $("answer").textContent = "working …";
  source.addEventListener("step", (m) => { const s = JSON.parse(m.data);
    $("steps").append(el("li", null, "[" + s.node + "] " + s.line)); });
  source.addEventListener("answer", (m) => { const a = JSON.parse(m.data);
    $("answer").replaceChildren(el("div", "head", "answer:"), passage(a.parts));
    $("usage").textContent = a.usage ? a.llm + ": " + a.usage.calls + " LLM calls, " +
      a.usage.prompt_tokens + " prompt + " + a.usage.completion_tokens + " completion tokens"
      : "answered by " + a.llm;
    evidenceList(a.evidence); source.close(); });
  source.addEventListener("evidence", (m) => { const a = JSON.parse(m.data);
    $("answer").replaceChildren(extractive(a.answer));
    $("usage").replaceChildren(inline("span", null, "no written answer: " + a.why +
      "; evidence passages (" + a.method + "); to get written answers: " + a.hint));
    evidenceList(a.evidence); source.close(); });
  source.addEventListener("failed", (m) => { const f = JSON.parse(m.data);
    $("answer").textContent = "";
    $("ask-error").textContent = f.error + (f.hint ? "\\nhint: " + f.hint : ""); source.close(); });
  source.onerror = () => { if (source.readyState === EventSource.CLOSED) return;
    source.close(); if ($("answer").textContent === "working …") $("answer").textContent = ""; };
}
function options(select, names) {
  select.replaceChildren(...names.map((n) => Object.assign(el("option", null, n), {value: n})));
}
async function start() {
  $("search").addEventListener("submit", search);
  $("show-graph").addEventListener("click", graph);
  $("method").addEventListener("change", describe);
  $("tab-search").addEventListener("click", () => tab("search"));
  $("tab-index").addEventListener("click", () => tab("index"));
  $("tab-ask").addEventListener("click", () => tab("ask"));
  $("ask-form").addEventListener("submit", ask);
  try {
    const served = await api("/api/methods");
    methods = served.methods;
    options($("agent"), served.agents);
    options($("method"), methods.map((m) => m.name));
    $("compare").append(...methods.map((m) => Object.assign(el("option", null, m.name),
                                                             {value: m.name})));
    $("method").value = methods.some((m) => m.name === "gnn_ret") ? "gnn_ret" : methods[0].name;
    $("q").placeholder = $("ask-q").placeholder = "e.g. " + served.example;
    for (const id of ["method", "compare", "agent", "go", "show-graph", "ask"]) {
      $(id).disabled = false;
    }
    $("method").removeAttribute("aria-busy");
    $("description").classList.remove("loading");
    describe();
    document.body.dataset.ready = "1";
  } catch (err) {
    $("description").classList.remove("loading"); $("description").textContent = "";
    showError(err);
  }
}
start();
</script>
</body></html>
"""
PAGE = _PAGE.replace("/*code-css*/", code_css())


def _favicon(size: int = 32) -> bytes:
    """Return the page's icon as an .ico file: two linked nodes on the header's blue.

    Drawn here (a PNG inside an ICO, as every browser reads it) so nothing is fetched or shipped.
    """
    import struct
    import zlib

    navy, light, gold = (31, 58, 95, 255), (174, 214, 241, 255), (244, 208, 63, 255)
    nodes = [(10, 11, 6, light), (22, 21, 6, gold)]

    def pixel(x: int, y: int) -> tuple[int, ...]:
        for cx, cy, r, colour in nodes:
            if (x - cx) ** 2 + (y - cy) ** 2 <= r * r:
                return colour
        on_edge = abs((y - 11) - (x - 10) * 10 / 12) < 1.2 and 10 <= x <= 22
        return light if on_edge else navy

    rows = b"".join(b"\0" + bytes(v for x in range(size) for v in pixel(x, y)) for y in range(size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
    png += chunk(b"IEND", b"")
    entry = struct.pack("<BBBBHHII", size, size, 0, 0, 1, 32, len(png), 6 + 16)
    return struct.pack("<HHH", 0, 1, 1) + entry + png


FAVICON = _favicon()
"""``/favicon.ico``: what a browser asks for before anything else (a 404 without it)."""
