"""GEAR's online prompts (Appendix J.2), with named slots.

``READ``: the reader without gist memory, used by SyncGE's synchronisation step (Eq. 1): the LLM
reads the base passages and writes the facts that help answer the question as
("subject", "predicate", "object") triples. Slots: ``docs``, ``query``. (With gist memory, the GEAR
agent adds preliminary facts; that variant arrives with the agent.)
"""

READ = """Your task is to find facts that help answer an input question.
You should present these facts as knowledge triples, which are structured as \
("subject", "predicate", "object").
Example:
Question: When was Neville A. Stanton's employer founded?
Facts: ("Neville A. Stanton", "employer", "University of Southampton"), \
("University of Southampton", "founded in", "1862")
Now you are given some documents:
{docs}
Based on these documents, find supporting fact(s) that may help answer the following question.
Note: if the information you are given is insufficient, output only the relevant facts you can find.
Question: {query}
Facts: """
