"""IIER's online prompt (Appendix A.1; the body is reconstructed, spec iier §5), with named slots.

``QUESTION_KEYWORDS``: the question's keyword set K_q, as many as it needs so every topic of the
question is covered (§3.1), as a JSON list of original phrases. Slot: ``question``. The keywords
are matched against chunk keywords and entities after the same normalisation, so the prompt asks
for names and phrases as written, not paraphrases.
"""

QUESTION_KEYWORDS = """Extract all the most representative keywords of the question below: the \
names of the people, places, works, organisations and other entities it mentions, and any other \
phrase needed to find its evidence. Copy them as written in the question. Reply with a JSON list \
of strings and nothing else.

Example
Question: Which is farther west, Philipsburg or Malakoff?
Keywords: ["Philipsburg", "Malakoff"]

Example
Question: What government position was held by the woman who portrayed Corliss Archer in the \
film Kiss and Tell?
Keywords: ["Corliss Archer", "Kiss and Tell", "government position"]

Question: {question}
Keywords:"""
