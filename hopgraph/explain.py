"""`hopgraph explain`: draw the evidence a method found as a graph, in one self-contained page.

Nodes are the retrieved passages (ranked; gold and cited ones marked) and the entities that tie
them together (named by two or more of them, or by the question). Edges are the passage-graph
edges between the passages (structural, entity, keyword, semantic, link), the messages and chains
that brought a passage in (from its provenance), and passage → entity mentions. The layout is
computed here (networkx, fixed seed) and drawn as inline SVG: the page needs no network.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import networkx as nx

from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.passage_graph import DIRECTED, EDGE_TYPES

MAX_ENTITIES = 20
COLOURS = {
    "structural": "#888888", "entity": "#4a7bd0", "keyword": "#9b59b6", "semantic": "#16a085",
    "link": "#e67e22", "message": "#c0392b", "chain": "#c0392b", "mentions": "#bbbbbb",
}  # fmt: skip


@dataclass(frozen=True)
class Passage:
    """A passage to draw: its chunk, rank and what led to it."""

    id: str
    doc_id: str
    title: str
    text: str
    rank: int
    via: tuple[str, ...] = ()
    step: str = ""


@dataclass
class EvidenceGraph:
    """Nodes and edges of a question's evidence, ready to draw."""

    question: str
    method: str
    passages: list[Passage]
    entities: list[str] = field(default_factory=list)
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (source, target, kind)
    gold: set[str] = field(default_factory=set)  # document ids
    cited: set[str] = field(default_factory=set)  # chunk ids


def build_evidence_graph(
    index: Index,
    question: str,
    method: str,
    passages: Sequence[Passage],
    gold: Collection[str] = (),
    cited: Collection[str] = (),
) -> EvidenceGraph:
    """Collect the edges among ``passages`` and the entities that link them."""
    graph = EvidenceGraph(question, method, list(passages), gold=set(gold), cited=set(cited))
    ids = {p.id for p in passages}
    pg = index.passage_graph
    rows = {p.id: pg.position[p.id] for p in passages if p.id in pg.position}
    for a in rows:
        for b in rows:
            for kind in EDGE_TYPES:
                # a symmetric type is drawn once per pair; a directed one in its direction
                wanted = a != b and (kind in DIRECTED or a < b)
                if wanted and pg.edges[kind][rows[a], rows[b]] != 0:
                    graph.edges.append((a, b, kind))
    for p in passages:  # what brought it in: GNN-Ret's sender, IIER's chain
        chain = [x for x in p.via if x in ids]
        kind = "chain" if len(chain) > 1 else "message"
        for source, target in zip([*chain, p.id], [*chain[1:], p.id], strict=False):
            if source != target:
                graph.edges.append((source, target, kind))
    mentions = {p.id: set(index.extractions[index.rows[p.id]].entities) for p in passages}
    counts = Counter(e for found in mentions.values() for e in found)
    asked = question.lower()
    keep = [e for e, n in counts.most_common() if n >= 2 or (len(e) > 3 and e in asked)]
    graph.entities = keep[:MAX_ENTITIES]
    for p in passages:
        graph.edges += [(p.id, e, "mentions") for e in graph.entities if e in mentions[p.id]]
    return graph


def _layout(graph: EvidenceGraph, width: int, height: int) -> dict[str, tuple[float, float]]:
    g = nx.Graph()
    g.add_nodes_from(p.id for p in graph.passages)
    g.add_nodes_from(f"entity:{e}" for e in graph.entities)
    for source, target, kind in graph.edges:
        g.add_edge(source, f"entity:{target}" if kind == "mentions" else target)
    placed = nx.spring_layout(g, seed=7, k=1.6 / max(len(g), 1) ** 0.5)
    margin = 80

    def scale(value: float, size: int) -> float:
        return margin + (value + 1) / 2 * (size - 2 * margin)

    return {node: (scale(x, width), scale(y, height)) for node, (x, y) in placed.items()}


def _edges_svg(graph: EvidenceGraph, at: dict[str, tuple[float, float]]) -> list[str]:
    out = []
    for source, target, kind in graph.edges:
        a, b = at[source], at[f"entity:{target}" if kind == "mentions" else target]
        dash = ' stroke-dasharray="4 3"' if kind == "mentions" else ""
        arrow = ' marker-end="url(#arrow)"' if kind in {"link", "message", "chain"} else ""
        out.append(
            f'<line class="edge {kind}" x1="{a[0]:.0f}" y1="{a[1]:.0f}" x2="{b[0]:.0f}" '
            f'y2="{b[1]:.0f}" stroke="{COLOURS[kind]}" stroke-width="2"{dash}{arrow}>'
            f"<title>{kind}</title></line>"
        )
    return out


CHAR = 0.62
"""A label character's width, in ems: at least DejaVu Sans's average (what Chromium draws with
here), so a label's box holds its text and no two boxes that do not touch draw over each other."""
PAD = 10
"""Room around the drawing: the view box holds every node and label with this much to spare."""


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle in the drawing's coordinates."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlap(self, other: Box) -> float:
        """Return the area this box shares with ``other`` (0 when they do not meet)."""
        w = min(self.x1, other.x1) - max(self.x0, other.x0)
        h = min(self.y1, other.y1) - max(self.y0, other.y0)
        return max(w, 0.0) * max(h, 0.0)


@dataclass(frozen=True)
class Label:
    """A node's name where it is drawn: its baseline point, anchor and box."""

    x: float
    y: float
    anchor: str  # SVG text-anchor: start, middle or end
    size: int
    box: Box


def _label(x: float, y: float, anchor: str, text: str, size: int) -> Label:
    width = len(text) * size * CHAR
    left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
    return Label(x, y, anchor, size, Box(left, y - size, left + width, y + 0.3 * size))


def _node_box(x: float, y: float, half: float) -> Box:
    return Box(x - half, y - half, x + half, y + half)


def _radius(graph: EvidenceGraph, p: Passage) -> int:
    return 22 if p.doc_id in graph.gold else 18


def _place_labels(graph: EvidenceGraph, at: dict[str, tuple[float, float]]) -> dict[str, Label]:
    """Name every node where its label meets no node and no label placed before it.

    Passages first (by rank), then entities; each label takes the first of four places around
    its node (below, above, right, left for a passage; right, left, below, above for an entity)
    that is clear, else the one that overlaps least.
    """
    nodes = {p.id: _node_box(*at[p.id], _radius(graph, p) + 3) for p in graph.passages}
    nodes |= {f"entity:{e}": _node_box(*at[f"entity:{e}"], 8) for e in graph.entities}
    todo = [(p.id, p.title[:40], 12, _radius(graph, p) + 4) for p in graph.passages]
    todo += [(f"entity:{e}", e, 11, 9) for e in graph.entities]
    placed: dict[str, Label] = {}
    for node, text, size, r in todo:
        x, y = at[node]
        around = [(x, y + r + size, "middle"), (x, y - r - 3, "middle"),
                  (x + r, y + size / 3, "start"), (x - r, y + size / 3, "end")]  # fmt: skip
        if node.startswith("entity:"):
            around = [around[2], around[3], around[0], around[1]]
        options = [_label(lx, ly, anchor, text, size) for lx, ly, anchor in around]
        boxes = [b for n, b in nodes.items() if n != node] + [lb.box for lb in placed.values()]
        placed[node] = min(options, key=lambda lb: sum(lb.box.overlap(b) for b in boxes))
    return placed


def _text(label: Label, text: str, attributes: str = "") -> str:
    return (
        f'<text class="label" x="{label.x:.0f}" y="{label.y:.0f}" text-anchor="{label.anchor}" '
        f'font-size="{label.size}"{attributes}>{html.escape(text)}</text>'
    )


def _entities_svg(
    graph: EvidenceGraph, at: dict[str, tuple[float, float]], labels: dict[str, Label]
) -> list[str]:
    out = []
    for e in graph.entities:
        x, y = at[f"entity:{e}"]
        name = _text(labels[f"entity:{e}"], e, ' fill="#7d6608"')
        out.append(
            f'<g class="entity" data-id="{html.escape(e)}"><rect x="{x - 6:.0f}" y="{y - 6:.0f}" '
            f'width="12" height="12" fill="#f4d03f" stroke="#b7950b"/>{name}</g>'
        )
    return out


def _passages_svg(
    graph: EvidenceGraph, at: dict[str, tuple[float, float]], labels: dict[str, Label]
) -> list[str]:
    out = []
    for p in graph.passages:
        x, y = at[p.id]
        gold, cited = p.doc_id in graph.gold, p.id in graph.cited
        classes = "passage" + (" gold" if gold else "") + (" cited" if cited else "")
        tip = html.escape(f"#{p.rank} {p.title} ({p.id}) {p.step}\n{p.text}")
        fill, stroke = "#2e86c1" if cited else "#aed6f1", "#d4ac0d" if gold else "#34495e"
        out.append(
            f'<g class="{classes}" data-id="{html.escape(p.id)}"><title>{tip}</title>'
            f'<circle cx="{x:.0f}" cy="{y:.0f}" r="{_radius(graph, p)}" '
            f'fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{5 if gold else 2}"/><text class="rank" x="{x:.0f}" y="{y + 4:.0f}" '
            f'text-anchor="middle" font-size="12" font-weight="700">{p.rank}</text>'
            f"{_text(labels[p.id], p.title[:40])}</g>"
        )
    return out


def render_svg(graph: EvidenceGraph, width: int = 1100, height: int = 720) -> str:
    """Return the evidence graph as an inline SVG element (every user string escaped).

    The nodes are laid out in ``width`` × ``height``; the view box is what they and their labels
    take up, so no label is cut at an edge and no blank band is drawn.
    """
    at = _layout(graph, width, height)
    labels = _place_labels(graph, at)
    nodes = [_node_box(x, y, 24) for x, y in at.values()]
    boxes = nodes + [lb.box for lb in labels.values()] or [Box(0, 0, width, height)]
    x0, y0 = min(b.x0 for b in boxes) - PAD, min(b.y0 for b in boxes) - PAD
    w, h = max(b.x1 for b in boxes) + PAD - x0, max(b.y1 for b in boxes) + PAD - y0
    drawing = "\n".join(
        [*_edges_svg(graph, at), *_entities_svg(graph, at, labels),
         *_passages_svg(graph, at, labels)]
    )  # fmt: skip
    return f"""<svg xmlns="http://www.w3.org/2000/svg" viewBox="{x0:.0f} {y0:.0f} {w:.0f} {h:.0f}"
width="{w:.0f}" height="{h:.0f}" role="img">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="28" refY="5" markerWidth="7" markerHeight="7"
orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>
{drawing}
</svg>"""


def legend_html() -> str:
    """Return the edge colours' legend."""
    return "".join(f'<span style="color:{c}">━ {k}</span> ' for k, c in COLOURS.items())


def render_page(graph: EvidenceGraph, width: int = 1100, height: int = 720) -> str:
    """Return the evidence graph as a self-contained HTML page (inline SVG, no scripts)."""
    esc = html.escape
    legend = legend_html()
    rows = "".join(
        f"<tr><td>{p.rank}</td><td>{esc(p.id)}</td><td>{esc(p.title)}</td>"
        f"<td>{esc(p.step)}</td><td>{esc(p.text[:300])}</td></tr>"
        for p in graph.passages
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hopgraph: {esc(graph.question)}</title>
<style>body {{ font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }}
svg {{ border: 1px solid #ddd; background: #fff; }}
td {{ vertical-align: top; padding: .2em .5em; }} .legend span {{ margin-right: 1em; }}</style>
</head><body><h1>{esc(graph.question)}</h1>
<p>method <b>{esc(graph.method)}</b>: {len(graph.passages)} passages (circles, by rank; gold
ringed in gold, cited filled dark), {len(graph.entities)} entities (squares).</p>
<p class="legend">{legend}</p>
{render_svg(graph, width, height)}
<table><tr><th>#</th><th>id</th><th>title</th><th>why</th><th>text</th></tr>{rows}</table>
</body></html>
"""


def explain(
    index: Index,
    question: str,
    method: str,
    k: int,
    gold: Collection[str] = (),
    preset: str = "tuned",
) -> EvidenceGraph:
    """Find the evidence for ``question`` with ``method`` and collect its graph.

    An LLM-free retriever draws its top ``k`` and why each came; an agent (or an LLM retriever)
    answers first, and its gathered passages are drawn with the cited ones marked.
    """
    from hopgraph.tools import RETRIEVERS, make_retriever

    if method in RETRIEVERS and not RETRIEVERS[method].needs_llm:
        hits = make_retriever(method, index, preset=preset).retrieve(question, k)
        passages = [
            Passage(h.id, h.doc_id, h.title, h.text, rank, h.provenance[-1].via,
                    h.provenance[-1].step)
            for rank, h in enumerate(hits, start=1)
        ]  # fmt: skip
        return build_evidence_graph(index, question, method, passages, gold)
    from hopgraph.agents.run import run_agent

    from .core.llm import required_chat

    chat = required_chat()
    result = run_agent(method, question, index, chat, k=k, preset=preset)
    passages = [
        Passage(e["id"], e["doc_id"], e["title"], e["text"], rank, (), e["found_by"])
        for rank, e in enumerate(result.gathered, start=1)
    ]
    cited = {c["id"] for c in result.citations}
    return build_evidence_graph(
        index, question, f"{method}: {result.answer}", passages, gold, cited
    )
