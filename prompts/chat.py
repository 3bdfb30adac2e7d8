"""The chat agent's prompt, with named slots.

``STANDALONE``: rewrite a follow-up question into one that can be answered without the chat
history (the standard condense-question step of conversational retrieval). Slots: ``history``
("User: …" / "Assistant: …" lines), ``question``.
"""

STANDALONE = """Given the conversation below and a follow-up question, rewrite the follow-up as \
a standalone question that can be understood without the conversation: replace pronouns and \
references with the names they stand for. If it is already standalone, repeat it unchanged.

Conversation:
{history}

Follow-up question: {question}
Standalone question:"""
