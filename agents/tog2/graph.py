"""ToG-2's loop over hopgraph's knowledge graph (spec tog2 §3, §8.3), one node per step.

link_entities → prune_topics (Table 9) → retrieve_context (Ctx⁰) → [prune_relations (Eq. 3) →
discover_entities → prune_entities (Eqs. 5–6) → reason (Eq. 7) → reform_query (Table 14) → …]
→ answer. The loop ends when reasoning finds the evidence sufficient, after ``depth`` rounds, or
when no relation or candidate is left; the citing reader then answers from the chunks gathered.
"""

from __future__ import annotations

import json
from typing import Literal

import numpy as np
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from hopgraph.agents.answering import answer_line, answer_with_citations
from hopgraph.agents.evidence import Evidence, chunk_evidence, evidence_of
from hopgraph.core.llm import ask_structured, labelled, no_usage
from hopgraph.graph_store.stores.vector_search import Cosines
from hopgraph.prompts.tog2 import REASON, REFORM, RELATION_PRUNE, TOPIC_PRUNE

from .context import Context
from .search import Relation, edges, entity_scores, is_literal, tails
from .state import (
    Candidate,
    InputState,
    State,
    Topic,
    parse_query,
    parse_reason,
    parse_relations,
    parse_topics,
)

SEED_CHUNKS = 5  # chunks whose entities seed the search when the question links to none
QUESTION_METHOD = "gnn_ret"
"""The method whose first passages for the question open Ctx⁰ (Context.question_chunks)."""


def entity_chunks(ctx: Context, entity: str) -> list[str]:
    """Doc(e): the chunks that mention ``entity``, then those BM25 finds for its name.

    ToG-2 reads an entity's Wikipedia page; offline extraction misses mentions inside longer
    names ("Mountrail County Courthouse in Stanley … served Mountrail County"), so the name is
    also searched (``name_search`` chunks; 0: mentions only).
    """
    found = list(ctx.index.knowledge_graph.chunks_of(entity))
    if ctx.name_search:
        found.extend(h.id for h in ctx.retriever("bm25").retrieve(entity, ctx.name_search))
    return list(dict.fromkeys(found))


def _closest_chunks(ctx: Context, entity: str, similarity: Cosines) -> list[str]:
    """Return the ``chunks_per_entity`` chunks of Doc(entity) closest to the query."""
    rows = ctx.index.rows
    chunks = list(entity_chunks(ctx, entity))
    cosine = similarity[[rows[c] for c in chunks]].tolist() if chunks else []
    ranked = [c for _, c in sorted(zip(cosine, chunks, strict=True), key=lambda p: -p[0])]
    return ranked[: ctx.chunks_per_entity]


def _similarity(ctx: Context, query: str) -> tuple[Cosines, dict[str, int]]:
    """Return cosine(query, chunk) as the chunks are looked up, and each chunk id's row."""
    return Cosines(ctx.index.vector_search, ctx.index.embed_query(query)), ctx.index.rows


def link_entities(state: State, runtime: Runtime[Context]) -> dict:
    """Link the question's mentions to graph entities, as chunks were linked (spec §8.3)."""
    ctx = runtime.context
    kg = ctx.index.knowledge_graph
    linked = ctx.index.entity_linker.link(state["question"])
    keys = [key for key in linked.entities if key in kg.entity_position]
    how = "mentions"
    if not keys:  # nothing linked: the entities of the best-matching chunks seed the search
        how = "entities of the best chunks"
        hits = ctx.retriever("hybrid").retrieve(state["question"], SEED_CHUNKS)
        extractions = ctx.index.extractions
        counts: dict[str, int] = {}
        for hit in hits:
            for entity in extractions[ctx.index.rows[hit.id]].entities:
                counts[entity] = counts.get(entity, 0) + 1
        keys = sorted(counts, key=lambda e: -counts[e])[: ctx.width]
    linked = {f"E{i}": key for i, key in enumerate(dict.fromkeys(keys), start=1)}
    return {"linked": linked, "query": state["question"], "steps": [
        f"link entities ({how}): {', '.join(linked.values()) or 'none'}"
    ]}  # fmt: skip


def prune_topics(state: State, runtime: Runtime[Context]) -> dict:
    """Keep the entities that are good starting points (Table 9); asked only for 3 or more."""
    linked = state["linked"]
    if len(linked) <= 2:  # as the authors' code: nothing to choose between
        chosen, usage = dict(linked), no_usage()
    else:
        prompt = TOPIC_PRUNE.format(question=state["question"], entities=json.dumps(linked))
        chosen, usage = ask_structured(
            runtime.context.chat,
            prompt,
            lambda reply: parse_topics(reply, linked),
            lambda _: dict(linked),
        )
    topics = [Topic(entity=e, path=[]) for e in chosen.values()]
    return {
        "topics": topics,
        "visited": list(chosen.values()),
        "usage": usage,
        "steps": [
            labelled(f"prune topics: {', '.join(chosen.values()) or 'none'}", usage, "all are kept")
        ],
    }


def retrieve_context(state: State, runtime: Runtime[Context]) -> dict:
    """Ctx⁰: the question's own passages, then the topic entities' best chunks (no triple yet).

    The question's passages (``question_chunks`` of gnn_ret's, ours; docs/methods.md, ToG-2)
    stand in for what the paper's linker finds and ours misses: an offline linker links a
    title's fragment ("first blast") or nothing, and a walk from a wrong start gathers nothing.
    """
    ctx = runtime.context
    question = state["question"]
    evidence = []
    if ctx.question_chunks:
        hits = ctx.retriever(QUESTION_METHOD).retrieve(question, ctx.question_chunks)
        evidence = evidence_of(hits, f"tog2 question: {QUESTION_METHOD}")
    similarity, rows = _similarity(ctx, question)
    pool: dict[str, float] = {}
    for topic in state["topics"]:
        for chunk_id in entity_chunks(ctx, topic["entity"]):
            if ctx.allows(chunk_id):
                pool[chunk_id] = float(similarity[rows[chunk_id]])
    seen = {e["id"] for e in evidence}
    if pool:
        best = [c for c in sorted(pool, key=lambda c: -pool[c]) if c not in seen]
        more = [chunk_evidence(ctx.index, c, pool[c], "tog2 topic entities") for c in best]
    else:  # no topic entity: plain retrieval, so the reader still has evidence
        hits = ctx.retriever("hybrid").retrieve(question, ctx.top_chunks)
        more = [e for e in evidence_of(hits, "tog2 fallback: hybrid") if e["id"] not in seen]
    evidence += more[: ctx.top_chunks - len(evidence)]
    return {
        "evidence": evidence,
        "gathered": evidence,
        "steps": [f"retrieve context: {', '.join(e['title'] for e in evidence[:5])}"],
    }


def after_context(state: State) -> Literal["prune_relations", "answer"]:
    """Search the graph from the topic entities; with none, answer from the context."""
    return "prune_relations" if state["topics"] else "answer"


def prune_relations(state: State, runtime: Runtime[Context]) -> dict:
    """Choose the relations worth following from every topic entity in one call (Eq. 3)."""
    ctx = runtime.context
    kg = ctx.index.knowledge_graph
    offered = [edges(kg, t["entity"])[: ctx.max_relations] for t in state["topics"]]
    n = state.get("rounds", 0) + 1
    if not any(offered):
        return {"relations": [], "rounds": n, "steps": [f"prune relations {n}: none to follow"]}
    blocks = []
    for i, (topic, relations) in enumerate(zip(state["topics"], offered, strict=True), 1):
        listed = "\n".join(f"{j}. {r.label}" for j, r in enumerate(relations, 1))
        blocks.append(f"Entity {i}: {topic['entity']}\nAvailable Relations:\n{listed}")
    prompt = RELATION_PRUNE.format(
        width=ctx.width,
        question=state.get("query") or state["question"],
        entities="\n".join(blocks),
    )
    labels = [[r.label for r in relations] for relations in offered]
    chosen, usage = ask_structured(
        ctx.chat,
        prompt,
        lambda reply: parse_relations(reply, labels),
        lambda _: [(i, label, 1.0) for i, some in enumerate(labels) for label in some[: ctx.width]],
    )
    kept: list[list[str]] = []
    for i, relations in enumerate(offered):
        by_label = {r.label: r for r in relations}
        mine = sorted((c for c in chosen if c[0] == i), key=lambda c: -c[2])[: ctx.width]
        for _, label, _ in mine:
            r = by_label[label]
            kept.append([state["topics"][i]["entity"], r.predicate, "out" if r.outgoing else "in"])
    shown = "; ".join(f"{e} → {p}{'' if d == 'out' else ' (reverse)'}" for e, p, d in kept)
    return {
        "relations": kept,
        "rounds": n,
        "usage": usage,
        "steps": [
            labelled(
                f"prune relations {n}: {shown or 'none'}",
                usage,
                f"each entity's first {ctx.width} relations are kept",
            )
        ],
    }


def after_relations(state: State) -> Literal["discover_entities", "answer"]:
    """Follow the kept relations; with none, answer from what was found."""
    return "discover_entities" if state["relations"] else "answer"


def discover_entities(state: State, runtime: Runtime[Context]) -> dict:
    """Reach the candidate entities over the kept relations, skipping visited ones (Tail)."""
    ctx = runtime.context
    kg = ctx.index.knowledge_graph
    seen, candidates = set(state.get("visited", [])), []
    for entity, predicate, direction in state["relations"]:
        reached = tails(kg, entity, Relation(predicate, direction == "out"))
        fresh = [t for t in reached if t not in seen and not is_literal(t)]
        for tail in fresh[: ctx.max_tails]:
            seen.add(tail)
            candidates.append(
                Candidate(
                    entity=tail, parent=entity, relation=predicate, outgoing=direction == "out"
                )
            )
    names = ", ".join(c["entity"] for c in candidates[:8])
    more = f" and {len(candidates) - 8} more" if len(candidates) > 8 else ""
    return {
        "candidates": candidates,
        "steps": [f"discover entities: {len(candidates)}: {names}{more}".rstrip(": ")],
    }


def after_discovery(state: State) -> Literal["prune_entities", "answer"]:
    """Score the candidates; with none, answer from what was found."""
    return "prune_entities" if state["candidates"] else "answer"


def prune_entities(state: State, runtime: Runtime[Context]) -> dict:
    """Score candidates by their chunks' ranks (Eq. 6); the top W become the next topics."""
    ctx = runtime.context
    query = state.get("query") or state["question"]
    similarity, rows = _similarity(ctx, query)
    pairs: list[tuple[str, float, str]] = []  # (chunk, score, candidate)
    for c in state["candidates"]:
        chunk_ids = _closest_chunks(ctx, c["entity"], similarity)
        if ctx.triple_sentences:  # Eq. 5: the relation that brought the entity, then the chunk
            scored = _with_triple_sentence(ctx, query, c, chunk_ids)
        else:
            scored = [float(similarity[rows[chunk_id]]) for chunk_id in chunk_ids]
        pairs += [(chunk_id, s, c["entity"]) for chunk_id, s in zip(chunk_ids, scored, strict=True)]
    if not ctx.triple_sentences:  # one chunk counts once, for its best candidate
        best: dict[str, tuple[str, float, str]] = {}
        for pair in pairs:
            if pair[0] not in best or pair[1] > best[pair[0]][1]:
                best[pair[0]] = pair
        pairs = list(best.values())
    ranked = sorted(pairs, key=lambda pair: -pair[1])[: ctx.top_chunks]  # Ctx^i
    top = [(chunk_id, (score, entity)) for chunk_id, score, entity in ranked]
    scores = entity_scores([pair for _, pair in top], ctx.alpha)
    by_entity = {c["entity"]: c for c in state["candidates"]}
    chosen = sorted(scores, key=lambda e: -scores[e])[: ctx.width]
    paths = {t["entity"]: t["path"] for t in state["topics"]}
    topics, walked = [], []
    for entity in chosen:
        c = by_entity[entity]
        step = (
            [c["parent"], c["relation"], entity]
            if c["outgoing"]
            else [entity, c["relation"], c["parent"]]
        )
        topics.append(Topic(entity=entity, path=[*paths.get(c["parent"], []), step]))
        walked.append(step)
    found = [(chunk_id, score) for chunk_id, (score, _) in top]
    if ctx.topic_context:  # the entities the walk stands on, read again for this round's query
        found = _with_topic_chunks(ctx, state["topics"], similarity, found)
    found = [(chunk_id, score) for chunk_id, score in found if ctx.allows(chunk_id)]
    new = [
        chunk_evidence(ctx.index, chunk_id, s, f"tog2 round {state['rounds']}")
        for chunk_id, s in found
    ]
    earlier = state.get("evidence", [])
    if ctx.newest_first:
        evidence = list({e["id"]: e for e in reversed([*new, *earlier])}.values())[::-1]
        evidence = evidence[: ctx.top_chunks]
    else:
        to_question = (
            similarity if query == state["question"] else _similarity(ctx, state["question"])[0]
        )
        evidence = _rerank(ctx, to_question, [*earlier, *new])
    return {
        "topics": topics,
        "visited": chosen,
        "triples": walked,
        "evidence": evidence,
        "gathered": new,
        "steps": [f"prune entities: {', '.join(f'{e} ({scores[e]:.2f})' for e in chosen)}"],
    }


def _with_topic_chunks(
    ctx: Context, topics: list, similarity: Cosines, found: list[tuple[str, float]]
) -> list[tuple[str, float]]:
    """Return Ctx: the candidates' best chunks and the topics' chunks, K best by the query."""
    rows = ctx.index.rows
    pool = dict(found)
    for topic in topics:
        for chunk_id in _closest_chunks(ctx, topic["entity"], similarity):
            pool.setdefault(chunk_id, float(similarity[rows[chunk_id]]))
    return sorted(pool.items(), key=lambda item: -item[1])[: ctx.top_chunks]


def _with_triple_sentence(
    ctx: Context, query: str, candidate: Candidate, chunk_ids: list[str]
) -> list[float]:
    """Eq. 5: cos(q, "parent relation candidate: chunk") for each of the candidate's chunks."""
    if not chunk_ids:
        return []
    head, tail = (
        (candidate["parent"], candidate["entity"])
        if candidate["outgoing"]
        else (candidate["entity"], candidate["parent"])
    )
    sentence = f"{head} {candidate['relation']} {tail}"
    texts = [
        f"{sentence}: {ctx.index.chunk(c).title}\n{ctx.index.chunk(c).text}" for c in chunk_ids
    ]
    vectors = np.asarray(ctx.index.embedder.embed(texts), dtype=np.float32)
    return [float(v) for v in vectors @ ctx.index.embed_query(query)]


def _rerank(ctx: Context, to_question: np.ndarray, evidence: list[Evidence]) -> list[Evidence]:
    """Keep the K chunks of all rounds closest to the question, one entry per chunk."""
    unique = {e["id"]: e for e in reversed(evidence)}
    ranked = sorted(unique.values(), key=lambda e: -to_question[ctx.index.rows[e["id"]]])
    return ranked[: ctx.top_chunks]


def reason(state: State, runtime: Runtime[Context]) -> dict:
    """Ask whether triples, chunks and clues suffice (Eq. 7); keep the clues when not."""
    triples = "; ".join(", ".join(t) for t in state.get("triples", [])) or "None"
    references = "\n".join(f"- {e['title']}: {e['text']}" for e in state["evidence"])
    prompt = REASON.format(
        question=state["question"],
        clues=state.get("clues") or "None",
        triples=triples,
        references=references,
    )
    (sufficient, braced), usage = ask_structured(
        runtime.context.chat, prompt, parse_reason, lambda _: (True, "")
    )  # an unreadable verdict stops the loop, as in RGNN-Ret's critique
    update: dict = {"sufficient": sufficient, "usage": usage}
    if sufficient:
        line = f"reason: sufficient ({braced})"
    else:
        line = f"reason: not yet; clues: {braced or 'none'}"
        update["clues"] = braced
    return update | {"steps": [labelled(line, usage, "taken as sufficient: stop")]}


def after_reason(state: State, runtime: Runtime[Context]) -> Literal["reform_query", "answer"]:
    """Answer when the evidence suffices or after ``depth`` rounds; else search on."""
    if state["sufficient"] or state["rounds"] >= runtime.context.depth:
        return "answer"
    return "reform_query"


def reform_query(state: State, runtime: Runtime[Context]) -> dict:
    """Write the query for the next round's scoring and relation pruning (Table 14)."""
    prompt = REFORM.format(question=state["question"], clues=state.get("clues") or "None")
    query, usage = ask_structured(
        runtime.context.chat, prompt, parse_query, lambda _: state["question"]
    )
    line = labelled(f"reform query: {query}", usage, "the question itself is the query")
    return {"query": query, "usage": usage, "steps": [line]}


def answer(state: State, runtime: Runtime[Context]) -> dict:
    """Answer from the chunks kept, with the walked triples and clues as notes, citing chunks."""
    notes = "\n".join(
        [", ".join(t) for t in state.get("triples", [])]
        + ([f"Clues: {state['clues']}"] if state.get("clues") else [])
    )
    text, cited, usage = answer_with_citations(
        runtime.context.chat, state["question"], runtime.context.reading(state["evidence"]), notes
    )
    ended = (
        "" if state.get("sufficient") or not state.get("topics")
        else f" (depth {runtime.context.depth} reached)"
        if state.get("rounds", 0) >= runtime.context.depth
        else " (search exhausted)"
    )  # fmt: skip
    return {
        "answer": text,
        "citations": cited,
        "usage": usage,
        "steps": [answer_line(text, usage, ended)],
    }


builder = StateGraph(State, context_schema=Context, input_schema=InputState)
for node in (
    link_entities, prune_topics, retrieve_context, prune_relations, discover_entities,
    prune_entities, reason, reform_query, answer,
):  # fmt: skip
    builder.add_node(node)
builder.add_edge(START, "link_entities")
builder.add_edge("link_entities", "prune_topics")
builder.add_edge("prune_topics", "retrieve_context")
builder.add_conditional_edges("retrieve_context", after_context)
builder.add_conditional_edges("prune_relations", after_relations)
builder.add_conditional_edges("discover_entities", after_discovery)
builder.add_edge("prune_entities", "reason")
builder.add_conditional_edges("reason", after_reason)
builder.add_edge("reform_query", "prune_relations")
builder.add_edge("answer", END)
graph = builder.compile(name="ToG-2")
