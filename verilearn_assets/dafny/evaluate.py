"""Per-role evaluation metrics, plain functions the evaluator reaches through
`DafnyScorer.evaluate` (`verilearn eval --family dafny --role writer|annotator`).

- writer: exact match with the gold body (whitespace/comment-insensitive), BLEU-4 on
  Dafny tokens against the gold body, and functional coverage: the writer's body verifies
  against the unchanged spec (anti-cheat first);
- annotator: verify rate of the annotated program (anti-cheat first);
- cascade: verify rate and latency come from trajectories (`build.trajectory_summary`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel

from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rewards import Scored, score_candidate
from verilearn_assets.dafny.syntax import match_brace, normalize, strip_comments
from verilearn_assets.dafny.verifier import DafnyVerifier

_TOKEN = re.compile(r"[A-Za-z_][\w']*|\d+|:=|==>|<==>|==|!=|<=|>=|&&|\|\||\.\.|::|\S")


NO_BODY = "no_body"  # the answer is not one `{ … }` block


def is_block(body: str) -> bool:
    """True when `body` (comments aside) is exactly one `{ … }` block. An empty or
    comment-only answer spliced into the program leaves the method bodiless, and Dafny 2.3
    accepts a bodiless method without proving its ensures: a reward hack the random-weight
    model found by answering with newlines."""
    code = strip_comments(body).strip()
    if not code.startswith("{"):
        return False
    try:
        return match_brace(code, 0) == len(code)
    except ValueError:
        return False


def score_body(task: DafnyTask, body: str, verifier: DafnyVerifier) -> Scored:
    """`score_candidate` on the task's program with `body`, after the block-shape rule."""
    if not is_block(body):
        return Scored(0.0, 0.0, NO_BODY, (), None)
    return score_candidate(task.gold_program, task.assemble(body), verifier)


def tokens(code: str) -> list[str]:
    return _TOKEN.findall(strip_comments(code))


def bleu4(candidate: str, reference: str) -> float:
    """Corpus-free sentence BLEU-4 with add-one smoothing on orders 2–4 and the brevity
    penalty (our own small implementation; enough to rank outputs)."""
    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return 0.0
    logs = []
    for n in range(1, 5):
        c = Counter(tuple(cand[i : i + n]) for i in range(len(cand) - n + 1))
        r = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        overlap = sum(min(k, r[g]) for g, k in c.items())
        total = max(sum(c.values()), 0)
        if n == 1 and overlap == 0:
            return 0.0
        smooth = 0 if n == 1 else 1
        logs.append(math.log((overlap + smooth) / (total + smooth)) if total + smooth else 0.0)
    brevity = 1.0 if len(cand) > len(ref) else math.exp(1 - len(ref) / len(cand))
    return brevity * math.exp(sum(logs) / 4)


class WriterScore(BaseModel):
    exact_match: bool
    bleu: float
    covered: bool  # the body verifies against the unchanged spec
    status: str


class AnnotatorScore(BaseModel):
    verified: bool
    status: str
    reward: float
    partial: float


def writer_score(task: DafnyTask, body: str, verifier: DafnyVerifier) -> WriterScore:
    """Exact match and BLEU against the gold body; `covered` when the body itself
    verifies against the unchanged spec (hint-free code that needs no invariants, or a
    writer that annotated as it wrote)."""
    return writer_score_of(task, body, score_body(task, body, verifier))


def writer_score_of(task: DafnyTask, body: str, scored: Scored) -> WriterScore:
    """The writer metrics of `body` given its verdict (scored once, shared with the rewards)."""
    return WriterScore(
        exact_match=normalize(body) == normalize(task.body),
        bleu=round(bleu4(body, task.body), 4),
        covered=scored.status == "verified",
        status=scored.status,
    )


def annotator_score(task: DafnyTask, annotated: str, verifier: DafnyVerifier) -> AnnotatorScore:
    return annotator_score_of(score_body(task, annotated, verifier))


def annotator_score_of(scored: Scored) -> AnnotatorScore:
    return AnnotatorScore(
        verified=scored.status == "verified",
        status=scored.status,
        reward=scored.reward,
        partial=scored.partial,
    )


def rates(scores: Sequence[BaseModel], field: str) -> float:
    return sum(bool(getattr(s, field)) for s in scores) / len(scores) if scores else 0.0
