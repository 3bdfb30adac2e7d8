"""Extraction prompts of the papers, with named slots.

- ``GEAR_EXTRACTION``: GEAR's offline "Reader" (Appendix J.1): named entities and triples of a
  passage, jointly, in one call. Slots: ``wiki_title``, ``passage``.
- ``IIER_CHUNK_KEYWORDS``: IIER's chunk-keyword prompt (Appendix A.2, reconstructed from the
  official repository): five representative keywords, original phrases. Slot: ``chunk``.
- ``GNN_RET_LINKS``: GNN-Ret's keyword extraction (§5.1): entities with their Wikipedia links;
  passages sharing a link are neighbours. Slot: ``passage``.
"""

GEAR_EXTRACTION = """Your task is to construct an RDF (Resource Description Framework) graph from \
the given passages and named entity lists.
Respond with a JSON list of triples, with each triple representing a relationship in the RDF graph.
Pay attention to the following requirements:
- Each triple should contain at least one, but preferably two, of the named entities in the list \
for each passage.
- Clearly resolve pronouns to their specific names to maintain clarity.
Convert the paragraph into a JSON dict containing a named entity list and a triple list.

Demonstration #1
Paragraph:
"
Magic Johnson
After winning a national championship with Michigan State in 1979, Johnson was selected first \
overall in the 1979 NBA draft by the Lakers, leading the team to five NBA championships during \
their "Showtime" era.
"
{{ "named_entities": ["Michigan State", "national championship", "1979", "Magic Johnson", \
"National Basketball Association", "Los Angeles Lakers", "NBA Championship"] }}
{{ "triples": [
("Magic Johnson", "member of sports team", "Michigan State"),
("Michigan State", "award", "national championship"),
("Michigan State", "award date", "1979"),
("Magic Johnson", "draft pick number", "1"),
("Magic Johnson", "drafted in", "1979"),
("Magic Johnson", "drafted by", "Los Angeles Lakers"),
("Magic Johnson", "member of sports team", "Los Angeles Lakers"),
("Magic Johnson", "league", "National Basketball Association"),
("Los Angeles Lakers", "league", "National Basketball Association"),
("Los Angeles Lakers", "award received", "NBA Championship"),
] }}

Demonstration #2
Paragraph:
"
Elden Ring
Elden Ring is a 2022 action role-playing game developed by FromSoftware. It was directed by \
Hidetaka Miyazaki with worldbuilding provided by American fantasy writer George R. R. Martin.
"
{{ "named_entities": ["Elden Ring", "2022", "Role-playing video game", "FromSoftware", \
"Hidetaka Miyazaki", "United States of America", "fantasy", "George R. R. Martin"] }}
{{ "triples": [
("Elden Ring", "publication", "2022"),
("Elden Ring", "genre", "action role-playing game"),
("Elden Ring", "publisher", "FromSoftware"),
("Elden Ring", "director", "Hidetaka Miyazaki"),
("Elden Ring", "screenwriter", "George R. R. Martin"),
("George R. R. Martin", "country of citizenship", "United States of America"),
("George R. R. Martin", "genre", "fantasy"),
] }}

Input
Convert the paragraph into a JSON dict, it has a named entity list and a triple list.
Paragraph:
"
{wiki_title}
{passage}
"
"""

IIER_CHUNK_KEYWORDS = """Extract the five most representative keywords of the text below: \
original phrases copied from the text that name its main entities or themes. Reply with a JSON \
list of exactly five strings and nothing else.

Example
Text: Ernest Hemingway was an American novelist and short-story writer, awarded the Nobel Prize \
in Literature in 1954. He served as an ambulance driver in World War I.
Keywords: ["Ernest Hemingway", "American novelist", "Nobel Prize in Literature", \
"ambulance driver", "World War I"]

Text: {chunk}
Keywords:"""

GNN_RET_LINKS = """Extract the entities exist in this text and then provide the wikipedia links \
for the entities exist in this text. Output the entities and their wikipedia links in the list \
format, e.g., [['entity1', 'link1'], ['entity2', 'link2']].

{passage}"""
