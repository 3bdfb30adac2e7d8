"""Each prompt's named slots are exactly the keys its caller passes (STYLE: prompts/)."""

from string import Formatter

import pytest

from hopgraph.prompts import answer, extraction, gear, iier, repair, rgnn_ret, tog2

CALLERS = {  # slots each prompt is formatted with by its caller
    (extraction, "GEAR_EXTRACTION"): {
        "wiki_title",
        "passage",
    },  # graph_store/graphs/extraction/llm.py
    (extraction, "IIER_CHUNK_KEYWORDS"): {"chunk"},
    (extraction, "GNN_RET_LINKS"): {"passage"},
    (repair, "REPAIR"): {"reply", "error"},  # hopgraph/core/llm.py
    (iier, "QUESTION_KEYWORDS"): {"question"},  # tools/iier/retriever.py
    (gear, "READ"): {"docs", "query"},  # tools/gear/retriever.py
    (answer, "ANSWER"): {"passages", "notes", "question"},  # agents/answering.py
    (answer, "NOTES"): {"notes"},
    (rgnn_ret, "NEXT_STEP"): {"trace"},  # agents/rgnn_ret/graph.py
    (rgnn_ret, "STEP_ANSWER"): {"subquestion", "passages"},
    (rgnn_ret, "CRITIQUE"): {"trace"},
    (gear, "READ_WITH_MEMORY"): {"docs", "query", "triples"},  # agents/gear/graph.py
    (gear, "REASON"): {"query", "triples"},
    (gear, "REWRITE"): {"query", "triples", "reason"},
    (tog2, "TOPIC_PRUNE"): {"question", "entities"},  # agents/tog2/graph.py
    (tog2, "RELATION_PRUNE"): {"width", "question", "entities"},
    (tog2, "REASON"): {"question", "clues", "triples", "references"},
    (tog2, "REFORM"): {"question", "clues"},
}


@pytest.mark.parametrize(
    ("module", "name"), sorted(CALLERS, key=lambda pair: (pair[0].__name__, pair[1]))
)
def test_prompt_slots_match_the_caller(module, name):
    template = getattr(module, name)
    slots = {field for _, field, _, _ in Formatter().parse(template) if field}
    assert slots == CALLERS[module, name]
    assert template.format(**dict.fromkeys(slots, "<x>")).count("<x>") >= len(slots)


def test_gear_prompt_keeps_its_json_demonstrations():
    text = extraction.GEAR_EXTRACTION.format(wiki_title="T", passage="P")
    assert '{ "named_entities": ["Michigan State"' in text and '"\nT\nP\n"' in text
