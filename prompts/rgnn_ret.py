"""RGNN-Ret's prompts (spec gnn_ret §5.4–5.7; GNN-Ret paper, Appendix F), with named slots.

- ``NEXT_STEP`` (§5.4): the next sub-question, from the question and the trace so far, with the
  paper's MuSiQue demonstrations (§8.1). Slots: ``trace`` ("Question: …" then the
  "Next step: … / Intermediate answer: …" lines).
- ``STEP_ANSWER`` (§5.5): the intermediate answer to a sub-question from retrieved passages.
  Slots: ``passages``, ``subquestion``.
- ``CRITIQUE`` (§5.6): are the intermediate answers enough? Ends in "Critique: yes|no".
  Slots: ``trace``.
The final answer (§5.7, not given in the paper) uses the shared reader in ``prompts/answer.py``
with the trace as notes.
"""

DEMONSTRATIONS = """Question: Who lived longer, Muhammad Ali or Alan Turing?
Next step: How old was Muhammad Ali when he died?
Intermediate answer: Muhammad Ali was 74 years old when he died.
Next step: How old was Alan Turing when he died?

Question: When was the founder of craigslist born?
Next step: Who was the founder of craigslist?
Intermediate answer: Craigslist was founded by Craig Newmark.
Next step: When was Craig Newmark born?

Question: Who was the maternal grandfather of George Washington?
Next step: Who was the mother of George Washington?
Intermediate answer: The mother of George Washington was Mary Ball Washington.
Next step: Who was the father of Mary Ball Washington?

Question: Are both the directors of Jaws and Casino Royale from the same country?
Next step: Who is the director of Jaws?
Intermediate answer: The director of Jaws is Steven Spielberg.
Next step: Where is Steven Spielberg from?
Intermediate answer: The United States.
Next step: Who is the director of Casino Royale?
Intermediate answer: The director of Casino Royale is Martin Campbell.
Next step: Where is Martin Campbell from?"""

NEXT_STEP = (
    """Your goal is to ask the next step question logically.

Here are the examples of how to answer the questions:
"""
    + DEMONSTRATIONS
    + """

{trace}
Next step:"""
)

STEP_ANSWER = """Your goal is to answer the next step question. I will provide you some \
document snippets, and you need to answer the next step question by considering the document \
snippets.

Question:
{subquestion}

Context:
{passages}

Question:
{subquestion}
Intermediate answer:"""

CRITIQUE = """You are a QA expert. Your goal is to critique whether the intermediate \
answers are enough to generate the final answer to the question. First analyze if the \
intermediate answers is enough to generate the final answer step by step logically. Then, if it \
is enough, output 'Critique: yes'. If not, output 'Critique: no'.

{trace}

Analyze if the intermediate answers is enough to generate the final answer to the question step \
by step logically. Then, if it is enough, output 'Critique: yes'. If not, output 'Critique: no'."""
