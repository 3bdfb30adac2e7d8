"""ToG-2's prompts (spec tog2 §4; Think-on-Graph 2.0, Appendix E), with named slots.

- ``TOPIC_PRUNE`` (Table 9): which linked entities start the search; a JSON object {id: name}.
  Slots: ``question``, ``entities`` (the JSON of the linked entities).
- ``RELATION_PRUNE`` (Tables 11–12, the combined form of Eq. 3): for every topic entity, the
  ``width`` most useful relations as ``{relation (Score: x)}``. Slots: ``width``, ``question``,
  ``entities`` ("Entity 1: name" then its numbered relations).
- ``REASON`` (Table 13, Eq. 7): ``{Yes}`` and the answer in braces, or ``{No}`` and the clues so
  far in braces. Slots: ``question``, ``clues``, ``triples``, ``references``.
- ``REFORM`` (Table 14): the next query, in braces. Slots: ``question``, ``clues``.
"""

TOPIC_PRUNE = """Given a question and a group of related topic entities derived from a knowledge \
graph, the task is to select which of these entities are suitable as starting points for \
reasoning on the knowledge graph to find information and clues that are useful for answering \
the question. Note that your output should be strictly JSON formatted: {{id: entity}}.
Here are examples showing how to analyze and output a JSON formatted answer:

Example 1:
Question: What major city is the Faith Lutheran Middle School and High School located in?
Topic entities: {{"E1": "Faith Lutheran Middle School", "E2": "Faith Lutheran High School"}}
Analysis: All entities are directly related to the core of the question: finding information \
about Faith Lutheran and its location.
Output: {{"E1": "Faith Lutheran Middle School", "E2": "Faith Lutheran High School"}}

Example 2:
Question: On which island is the Indonesian capital located?
Topic entities: {{"E1": "Indonesia", "E2": "island"}}
Analysis: "Indonesia" is directly related to the core of the question; "island" is too broad.
Output: {{"E1": "Indonesia"}}

Question: {question}
Topic entities: {entities}
Analysis:"""

RELATION_PRUNE = """# Task:
1. Carefully review the question provided.
2. From the list of available relations for their corresponding entity, select the {width} that \
you believe are most likely to link to the entities that can provide the most relevant \
information to help answer the provided question.
3. For each selected relation, provide a score between 0 to 10 reflecting its usefulness in \
answering the question, with 10 being most useful.
4. Provide a brief explanation for your choices.
# Example:
Question: what the attitude of Joe Biden towards China?
Entity 1: china
Available Relations:
1. alliance
2. international relation
3. population
Entity 2: joe biden
Available Relations:
1. political position
2. presidency
3. family
Answer:
Entity 1: china
1. {{alliance (Score: 8)}}: the relationship between china and other parties.
2. {{international relation (Score: 7)}}: how china deals with other countries.
Entity 2: joe biden
1. {{political position (Score: 10)}}: his stance on foreign policy.
2. {{presidency (Score: 2)}}: the office he holds.
# Analyze the relation list of each entity separately, select the {width} most relevant \
relations for each entity, and keep strictly to the format of the example:
Answer:
Entity 1: The Name of Entity 1
1. {{Relation1 (Score: X)}}: Explanation.
# Now the new question:
Question: {question}
{entities}
Answer:"""

REASON = """Given a question, some clues, the associated retrieved knowledge triplets and \
related contexts, you are asked to evaluate if these resources, combined with your pre-existing \
knowledge, are sufficient to formulate an answer ({{Yes}} or {{No}}). Your answer must begin \
with {{Yes}} or {{No}}.
If {{Yes}}, please note that the analyzed answer entity must be enclosed in curly brackets \
{{xxxxxx}}.
If {{No}}, it means the resources are useless or provide clues that are helpful but \
insufficient to answer the question conclusively. Based on the given knowledge, please \
summarize any insights (if any) so far that may help answer the question, which must also be \
enclosed in curly brackets {{xxxxxx}}.
Here are some examples:
# Example 1:
Question: The Sentinelese language is the language of people of one of which islands in the Bay \
of Bengal?
(Clues): None
(Knowledge triplets): Sentinelese language, Indigenous to, Sentinelese people
(Related context): The Sentinelese are an indigenous people who inhabit North Sentinel Island in \
the Bay of Bengal. North Sentinel Island is one of the Andaman and Nicobar Islands.
# Answer: {{Yes}} The analyzed answer entity is {{Andaman and Nicobar Islands}}.
# Example 2:
Question: Who is the coach of the team owned by the most famous English former professional \
footballer?
(Clues): The most famous English former professional footballer is David Beckham.
(Knowledge triplets): David Beckham, co-owned, Inter Miami CF
(Related context): Inter Miami CF, founded in 2018, is a professional soccer club based in Miami.
# Answer: {{No}} The knowledge says that David Beckham co-owns Inter Miami CF, but not who the \
coach is. The useful information for now is {{the team owned by David Beckham is Inter Miami CF}}
Now, please carefully consider the following case:
Question: {question}
(Clues): {clues}
(Knowledge triplets): {triples}
(Related context):
{references}
# Answer:"""

REFORM = """Given a question and some knowledge gained so far, please predict the additional \
evidence that needs to be found to answer the current question, and then provide a suitable \
query for retrieving this potential evidence. Note that the query must be included in curly \
brackets {{xxx}}.
Question: {question}
Knowledge gained so far: {clues}
Output:"""
