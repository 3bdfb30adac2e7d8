"""GEAR's online prompts (Appendix J.2), with named slots.

- ``READ``: the reader without gist memory, used by SyncGE's synchronisation step (Eq. 1): the
  LLM reads the base passages and writes the facts that help answer the question as
  ("subject", "predicate", "object") triples. Slots: ``docs``, ``query``.
- ``READ_WITH_MEMORY``: the same reader with the gist memory (Eq. 4): "preliminary facts" and
  "additional" are the parts the paper highlights, and the memory's triples pre-fill the reply.
  Slots: ``docs``, ``query``, ``triples``.
- ``REASON`` ("Reasoning for Termination", Eq. 6): ``Answerable: Yes`` + ``Answer:``, or
  ``Answerable: No`` + ``Why:``. Slots: ``query`` (the original question), ``triples``.
- ``REWRITE`` ("Query Re-writing", Eq. 7): the next question. Slots: ``query``, ``triples``,
  ``reason``.
"""

_READER_HEAD = """Your task is to find facts that help answer an input question.
You should present these facts as knowledge triples, which are structured as \
("subject", "predicate", "object").
Example:
Question: When was Neville A. Stanton's employer founded?
Facts: ("Neville A. Stanton", "employer", "University of Southampton"), \
("University of Southampton", "founded in", "1862")
Now you are given some documents:
{docs}
"""
_READER_NOTE = """Note: if the information you are given is insufficient, output only the \
relevant facts you can find.
Question: {query}
"""

READ = (
    _READER_HEAD
    + "Based on these documents, find supporting fact(s) that may help answer the following "
    "question.\n" + _READER_NOTE + "Facts: "
)

# The memory variant: the paper's highlighted words, and the memory pre-filled after "Facts:".
READ_WITH_MEMORY = (
    _READER_HEAD
    + "Based on these documents and some preliminary facts provided below, find additional "
    "supporting fact(s) that may help answer the following question.\n"
    + _READER_NOTE
    + "Facts: {triples}"
)

REASON = """Task Description:
You are given an input question and a set of known facts:
Question: {query}
Facts: {triples}
Your reply must follow the required format:
1. If the provided facts contain the answer to the question, you should reply as follows:
Answerable: Yes
Answer: ...
2. If not, you should explain why and reply as follows:
Answerable: No
Why: ...
Your reply:"""

REWRITE = """Task Description:
You will be presented with an input question and a set of known facts.
These facts might be insufficient for answering the question for some reason.
Your task is to analyze the question given the provided facts and determine what else \
information is needed for the next step.
Example:
Question: What region of the state where Guy Shepherdson was born, contains SMA Negeri 68?
Facts: ("Guy Shepherdson", "born in", "Jakarta")
Reason: The provided facts only indicate that Guy Shepherdson was born in Jakarta, but they do \
not provide any information about the region of the state that contains SMA Negeri 68.
Next Question: What region of Jakarta contains SMA Negeri 68?
Your Task:
Question: {query}
Facts: {triples}
Reason: {reason}
Next Question:"""
