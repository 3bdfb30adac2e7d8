import pytest

from hopgraph.core.errors import HopgraphError
from hopgraph.core.llm import LLMSettings
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction.cache import ReplyCache
from hopgraph.graph_store.graphs.extraction.llm import LLMExtractor
from hopgraph.graph_store.graphs.extraction.parsing import (
    ParseError,
    link_name,
    parse_entities_and_triples,
    parse_entity_links,
    parse_string_list,
)
from tests.fakes import ScriptedChatModel

CHUNKS = [
    Chunk(f"c{i}", f"c{i}", f"Page {i}", f"Alice Smith met Bob Jones in Paris, case {i}.")
    for i in range(6)
]


def test_parses_almost_json():
    reply = """Sure! Here it is:
```json
{ "named_entities": ["Magic Johnson", 'Lakers'] }
{ "triples": [("Magic Johnson", "drafted by", "Lakers"), ["a", "b"], ] }
```"""
    assert parse_entities_and_triples(reply) == (
        ["Magic Johnson", "Lakers"],
        [("Magic Johnson", "drafted by", "Lakers")],
    )
    assert parse_string_list('Keywords: ["a", "b",]') == ["a", "b"]
    assert parse_string_list('["Dr. O\'Neil [ret.]", "x"]') == ["Dr. O'Neil [ret.]", "x"]
    with pytest.raises(ParseError):
        parse_entities_and_triples("I cannot help with that.")
    with pytest.raises(ParseError):
        parse_string_list('{"keywords": 5}')


def test_entity_links_become_page_names():
    reply = "[['Mountrail', 'https://en.wikipedia.org/wiki/Mountrail_County%2C_ND#History']]"
    assert parse_entity_links(reply) == ["Mountrail County, ND"]
    assert link_name("Stanley_(North_Dakota)") == "Stanley (North Dakota)"


def extractor(tmp_path, model, **kwargs):
    return LLMExtractor(model, "scripted-1", ReplyCache(tmp_path / "cache.sqlite"), **kwargs)


def test_extraction_outputs_and_cache_makes_the_second_run_free(tmp_path):
    model = ScriptedChatModel()
    first = extractor(tmp_path, model, max_concurrency=3).extract(CHUNKS)
    assert len(model.calls) == 2 * len(CHUNKS)  # GEAR reader + IIER keywords per chunk
    e = first[0]
    assert e.chunk_id == "c0" and e.entities[0] == "page 0"
    assert {"alice smith", "bob jones", "paris"} <= set(e.entities)
    assert {t.object for t in e.triples} == {"alice smith", "bob jones", "paris"}
    assert 0 < len(e.keywords) <= 5
    again_model = ScriptedChatModel()
    again = extractor(tmp_path, again_model).extract(CHUNKS)
    assert again_model.calls == [] and again == first


def test_a_crash_mid_way_resumes_without_redoing_finished_chunks(tmp_path):
    crashing = ScriptedChatModel(fail_after=5)
    with pytest.raises(RuntimeError, match="went away"):
        extractor(tmp_path, crashing, max_concurrency=1).extract(CHUNKS)
    done = crashing.fail_after  # every call after these raised
    resumed = ScriptedChatModel()
    result = extractor(tmp_path, resumed, max_concurrency=1).extract(CHUNKS)
    assert len(resumed.calls) == 2 * len(CHUNKS) - done
    assert not set(resumed.calls) & set(crashing.calls[:done])
    assert [e.chunk_id for e in result] == [c.id for c in CHUNKS]


def test_malformed_reply_gets_one_repair_then_is_counted(tmp_path):
    def sloppy(prompt):
        if "could not be read" in prompt and "RDF" in prompt:
            return '{"named_entities": ["Repaired"]}'
        return "no json here" if "RDF" in prompt else '["k1", "k2"]'

    model = ScriptedChatModel(respond=sloppy)
    ex = extractor(tmp_path, model)
    result = ex.extract(CHUNKS[:1])
    assert "repaired" in result[0].entities and len(model.calls) == 3
    hopeless = ScriptedChatModel(respond=lambda p: "nothing" if "RDF" in p else '["k"]')
    ex2 = LLMExtractor(hopeless, "other", ReplyCache(tmp_path / "c2.sqlite"))
    result = ex2.extract(CHUNKS[:2])
    assert ex2.stats["parse_failures"] == 2 and result[0].triples == ()
    assert result[0].entities == ("page 0",)


def test_no_llm_configured_names_the_settings(monkeypatch):
    for name in (
        "HOPGRAPH_LLM_MODEL",
        "HOPGRAPH_LLM_BASE_URL",
        "HOPGRAPH_LLM_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(HopgraphError, match="no LLM is configured") as err:
        LLMSettings.from_settings()
    assert "HOPGRAPH_LLM_MODEL" in str(err.value)


def test_gnn_ret_links_become_entities(tmp_path):
    model = ScriptedChatModel()
    [e] = extractor(tmp_path, model, prompts=("gnn_ret",)).extract(CHUNKS[:1])
    assert len(model.calls) == 1 and "wikipedia links" in model.calls[0]
    assert e.entities == ("page 0", "alice smith", "bob jones", "paris")
    assert e.triples == () and e.keywords == ()
