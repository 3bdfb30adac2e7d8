"""Chat-style question answering: follow-ups made standalone, then any method answers."""
