"""Each prompt's named slots are exactly the keys its caller passes (STYLE: prompts/)."""

from string import Formatter

import pytest

from prompts import extraction

CALLERS = {  # slots each prompt is formatted with in graph_store/extraction/llm.py
    "GEAR_EXTRACTION": {"wiki_title", "passage"},
    "IIER_CHUNK_KEYWORDS": {"chunk"},
    "GNN_RET_LINKS": {"passage"},
    "REPAIR": {"reply"},
}


@pytest.mark.parametrize("name", sorted(CALLERS))
def test_prompt_slots_match_the_caller(name):
    template = getattr(extraction, name)
    slots = {field for _, field, _, _ in Formatter().parse(template) if field}
    assert slots == CALLERS[name]
    assert template.format(**dict.fromkeys(slots, "<x>")).count("<x>") >= len(slots)


def test_gear_prompt_keeps_its_json_demonstrations():
    text = extraction.GEAR_EXTRACTION.format(wiki_title="T", passage="P")
    assert '{ "named_entities": ["Michigan State"' in text and '"\nT\nP\n"' in text
