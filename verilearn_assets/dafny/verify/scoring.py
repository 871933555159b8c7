"""Per-role evaluation metrics, plain functions the evaluator reaches through
`DafnyScorer.evaluate` (`verilearn eval --family dafny --role writer|annotator`).

- writer: exact match with the gold body (whitespace/comment-insensitive), BLEU-4 on
  Dafny tokens against the gold body, and functional coverage: the writer's body verifies
  against the unchanged spec (anti-cheat first) under the writer's contract (below);
- annotator: verify rate of the annotated program (anti-cheat first), which must keep the
  code it was shown (`same_code`, else status `code_changed`, outcome 0);
- cascade: verify rate and latency come from trajectories (`build.trajectory_summary`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel

from verilearn_assets.dafny.lang.lexer import code_tokens
from verilearn_assets.dafny.lang.syntax import lemma_names, normalize, same_code
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rewards import Scored, score_candidate
from verilearn_assets.dafny.verify.anticheat import CheatFinding, body_shape, screen
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

NO_BODY = "no_body"  # the answer is not one `{ … }` block
CODE_CHANGED = "code_changed"  # an annotator answer whose code differs from what it was shown


def is_block(body: str) -> bool:
    """True when `body` (comments aside) is exactly one `{ … }` block with no declaration
    inside. An empty or comment-only answer spliced into the program leaves the method
    bodiless, and Dafny 2.3 accepts a bodiless method without proving its ensures: a reward
    hack the random-weight model found by answering with newlines."""
    return not body_shape(body)


def refused(cheats: list[CheatFinding]) -> Scored:
    """Zero, before the verifier: `no_body` when the answer is no block (a shape error, not
    a named trick), else `cheat` with its findings."""
    if any(c.cheat == "no_body" for c in cheats):
        return Scored(0.0, 0.0, NO_BODY, (), None)
    return Scored(0.0, 0.0, "cheat", tuple(cheats), None)


def ghost_calls(task: DafnyTask) -> frozenset[str]:
    """The lemmas an annotation may call in this task's program."""
    return lemma_names(task.prefix + task.spec + "{ }" + task.suffix)


def keeps_code(task: DafnyTask, shown: str, answer: str) -> bool:
    """The annotator's contract: its answer is `shown` plus proof annotations only."""
    return same_code(shown, answer, ghost_calls(task))


def score_annotation(
    task: DafnyTask, shown: str, annotated: str, verifier: DafnyVerifier
) -> Scored:
    """An annotator's answer for the body it was `shown`: screened, then refused with
    `code_changed` (outcome 0) unless it keeps the code, then verified. Every annotator
    path (GRPO roles, the evaluation cascade, the teacher cascade) scores through here."""
    cheats = screen(annotated, "annotator")
    if cheats:
        return refused(cheats)
    if not keeps_code(task, shown, annotated):
        return Scored(0.0, 0.0, CODE_CHANGED, (), None)
    return score_candidate(task.gold_program, task.assemble(annotated), verifier)


def score_writer(task: DafnyTask, body: str, verifier: DafnyVerifier) -> Scored:
    """The writer's contract: its body must verify against the unchanged spec, and it may
    carry its own invariants and asserts. A body whose code *is* the gold code (hints
    aside) is judged together with the gold annotations, so every gold target scores 1.0
    (21 of 30 bundled gold bodies need invariants a hint-free writer does not write)."""
    cheats = screen(body, "writer")
    if cheats:
        return refused(cheats)
    if task.role == "writer" and keeps_code(task, task.body, body):
        return score_candidate(task.gold_program, task.assemble(task.annotated_body), verifier)
    return score_candidate(task.gold_program, task.assemble(body), verifier)


def tokens(code: str) -> list[str]:
    """Dafny's tokens of `code` (the lexer's; comments and layout dropped)."""
    return [t.text for t in code_tokens(code)]


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
    """Exact match and BLEU against the gold body; `covered` when the body verifies under
    the writer's contract (`score_writer`)."""
    return writer_score_of(task, body, score_writer(task, body, verifier))


def writer_score_of(task: DafnyTask, body: str, scored: Scored) -> WriterScore:
    """The writer metrics of `body` given its verdict (scored once, shared with the rewards)."""
    return WriterScore(
        exact_match=normalize(body) == normalize(task.body),
        bleu=round(bleu4(body, task.body), 4),
        covered=scored.status == "verified",
        status=scored.status,
    )


def annotator_score(task: DafnyTask, annotated: str, verifier: DafnyVerifier) -> AnnotatorScore:
    return annotator_score_of(score_annotation(task, task.body, annotated, verifier))


def annotator_score_of(scored: Scored) -> AnnotatorScore:
    return AnnotatorScore(
        verified=scored.status == "verified",
        status=scored.status,
        reward=scored.reward,
        partial=scored.partial,
    )


def rates(scores: Sequence[BaseModel], field: str) -> float:
    return sum(bool(getattr(s, field)) for s in scores) / len(scores) if scores else 0.0
