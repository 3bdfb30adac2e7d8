"""The reader every method shares: a short answer that cites the passages it rests on.

Adapted from GEAR's QA prompt (Appendix J.3, itself HippoRAG's and Query2doc's) and GNN-Ret's
reader (§5.2: under six words), with numbered passages and a ``Cited:`` line so a user can check
the answer against its evidence. Slots: ``passages`` (numbered, "[1] Document: …"),
``notes`` (what an agent learned on the way, or empty) and ``question``.
"""

ANSWER = """As an advanced reading comprehension assistant, your task is to analyze the numbered \
passages below and answer the question correctly.

{passages}
{notes}
Question: {question}

Reply in exactly two lines:
Answer: <a concise, definitive answer of at most 6 words, with no elaboration>
Cited: <the numbers of the passages the answer rests on, e.g. [1, 3]>"""

NOTES = """Notes gathered while searching:
{notes}
"""
