"""Retrieval and answer metrics, with the definitions the published numbers use.

Recall@k is HippoRAG's: the share of a question's gold passages found in its top k, averaged over
questions. All@k: the share of questions with every gold passage in the top k. EM / F1: SQuAD's
answer normalisation (lower-case, no punctuation, no articles, single spaces), max over answers.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence


def recall_at_k(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of ``gold`` in the first ``k`` of ``ranked`` (HippoRAG's Recall@k)."""
    if not gold:
        raise ValueError("a question needs at least one gold passage")
    top = set(ranked[:k])
    return sum(1 for g in set(gold) if g in top) / len(set(gold))


def all_at_k(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """1.0 when every gold passage is in the first ``k`` of ``ranked``, else 0.0."""
    return 1.0 if set(gold) <= set(ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], gold: Sequence[str]) -> float:
    """1 / rank of the first gold passage (0 when none is ranked)."""
    wanted = set(gold)
    for rank, item in enumerate(ranked, start=1):
        if item in wanted:
            return 1.0 / rank
    return 0.0


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower-case, drop punctuation and articles, collapse white space."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def holds_answer(text: str, answers: Sequence[str]) -> bool:
    """Tell whether a normalised gold answer occurs in the normalised text (as whole words)."""
    padded = f" {normalize_answer(text)} "
    return any(f" {a} " in padded for a in map(normalize_answer, answers) if a)


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised answer."""
    pred = normalize_answer(prediction)
    return max((1.0 if pred == normalize_answer(a) else 0.0 for a in answers), default=0.0)


def f1_score(prediction: str, answers: Sequence[str]) -> float:
    """Token-overlap F1 against the best-matching answer (SQuAD v1.1 evaluate script)."""
    return max((_f1(prediction, a) for a in answers), default=0.0)


def _f1(prediction: str, answer: str) -> float:
    pred, gold = normalize_answer(prediction).split(), normalize_answer(answer).split()
    common = Counter(pred) & Counter(gold)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def percentile(values: Sequence[float], q: float) -> float:
    """Return the q-th percentile (0 to 100), interpolated; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
