"""A rule-based readability score for question wording, 1 (hard to read) to 5 (plain).

Every deduction is a visible rule, so a score can be explained line by line:
- length: -0.5 per 25 words beyond 35 (at most -2);
- nesting: -0.25 per "of the" beyond three (at most -1), a stack of nouns is hard to parse;
- procedure-speak: -0.5 for each phrase that reads as code rather than analysis
  ("these steps", "the series obtained", "this procedure", ...);
- conditions: -0.25 per " if " beyond two (at most -1);
- repetition: -0.5 when a four-word phrase occurs twice (a doubled step shows this way).
The score is clamped to [1, 5] and rounded to a quarter point.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

PROCEDURE_SPEAK = (
    "these steps",
    "the series obtained",
    "this procedure",
    "steps in order",
    "each divided by their total, each divided",
)


def readability_deductions(text: str) -> dict[str, float]:
    """The score's deductions by rule (only the rules that fired)."""
    lower = text.lower()
    words = re.findall(r"[\w'\"-]+", lower)
    out: dict[str, float] = {}
    if len(words) > 35:
        out["length"] = min(2.0, 0.5 * ((len(words) - 35 + 24) // 25))
    nesting = lower.count(" of the ") - 3
    if nesting > 0:
        out["nesting"] = min(1.0, 0.25 * nesting)
    speak = sum(lower.count(p) for p in PROCEDURE_SPEAK)
    if speak:
        out["procedure_speak"] = 0.5 * speak
    conds = lower.count(" if ") - 2
    if conds > 0:
        out["conditions"] = min(1.0, 0.25 * conds)
    grams = Counter(tuple(words[i : i + 4]) for i in range(len(words) - 3))
    if any(n > 1 for n in grams.values()):
        out["repetition"] = 0.5
    return out


def readability(text: str) -> float:
    score = 5.0 - sum(readability_deductions(text).values())
    return round(max(1.0, min(5.0, score)) * 4) / 4


def distribution(scores: Iterable[float]) -> dict[str, float]:
    """count, mean, quartiles and the share at or above 4 — what a report prints."""
    xs = sorted(scores)
    if not xs:
        return {"count": 0}

    def q(p: float) -> float:
        return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]

    return {
        "count": len(xs),
        "mean": round(sum(xs) / len(xs), 3),
        "p25": q(0.25),
        "median": q(0.5),
        "p75": q(0.75),
        "min": xs[0],
        "share_ge_4": round(sum(x >= 4 for x in xs) / len(xs), 3),
    }
