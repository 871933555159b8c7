"""The Dafny family's GRPO hook: prompts per role and the verifier rewards (pure: no Dagster).

The generic trainer (`training/grpo/trainer.py`) and evaluator (`training/eval/single_turn.py`) only
call `GrpoTask.prompts(home, tasks, role)` and `GrpoTask.scorer(home, tasks, role)`, so
every training mode of the two Dafny roles is a *role* here:

- `writer`: spec → body; reward = the body verifies against the unchanged spec, under the
  writer's contract (`evaluate.score_writer`: the writer may write its own invariants; a
  body whose code is the gold code is judged with the gold annotations).
- `annotator`: gold hint-free body → annotated body; reward = the annotated program
  verifies *and* keeps the code it was shown (`same_code`, else `code_changed`, 0).
- `annotator_frozen_writer` (alternating mode: annotator RL continues with the writer
  frozen): the annotator's prompts carry the bodies a *frozen writer* wrote for the writer
  tasks (a served model, or the program teacher's gold bodies), not the gold bodies.
  Tasks whose frozen body is not one `{ … }` block are left out (no annotation can save
  them). An answer whose code (hints removed, on tokens) differs from the body it was
  shown scores 0 with status `code_changed`: an annotator adds hints, it does not rewrite
  the writer.
- `writer_cascade`: the writer is RL-tuned on the downstream cascade reward. Its body is
  annotated by a *frozen annotator* (a served model, or `program`: the gold hints when the
  body is the gold body, else the body as written) and the annotated program verified;
  outcome = verified, partial = `cascade_reward`. If the frozen annotator changed the
  writer's code, its answer is discarded and the body is verified as written (the writer is
  credited for what it wrote, never for code the annotator substituted).

Which frozen partner is used comes from `grpo:` in configs/dafny.yaml; tests inject a
scripted one (`DafnyGrpo(frozen_writer=..., frozen_annotator=...)`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from verilearn_assets.core.family import EvalChain, Family, GrpoTask
from verilearn_assets.core.llm.config import load_vllm_config
from verilearn_assets.core.records import SOURCES, Record
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.config import cache_dir, load_dafny_config
from verilearn_assets.dafny.lang.syntax import normalize
from verilearn_assets.dafny.records import DafnyTask, DafnyTrajectory
from verilearn_assets.dafny.rewards import Scored, cascade_reward
from verilearn_assets.dafny.rollout.cascade import ProgramTeacher, Teacher
from verilearn_assets.dafny.rollout.teachers import teacher_for
from verilearn_assets.dafny.verify.anticheat import screen
from verilearn_assets.dafny.verify.scoring import (
    CODE_CHANGED,
    NO_BODY,
    annotator_score_of,
    bleu4,
    is_block,
    keeps_code,
    refused,
    score_annotation,
    score_writer,
    writer_score_of,
)
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

BASE_ROLES = ("writer", "annotator")
WRITER_CASCADE = "writer_cascade"
ANNOTATOR_FROZEN_WRITER = "annotator_frozen_writer"
ROLES = (*BASE_ROLES, WRITER_CASCADE, ANNOTATOR_FROZEN_WRITER)


def task_role(role: str) -> str:
    """The task records a role trains on: both frozen-partner modes start from writer tasks."""
    if role not in ROLES:
        raise ValueError(
            f"dafny GRPO: role must be writer or annotator, or {WRITER_CASCADE} / "
            f"{ANNOTATOR_FROZEN_WRITER}; got {role!r}"
        )
    return role if role in BASE_ROLES else "writer"


def role_tasks(tasks: Sequence[Record], role: str) -> list[DafnyTask]:
    want = task_role(role)
    return [
        t for t in tasks if isinstance(t, DafnyTask) and t.status == "accepted" and t.role == want
    ]


def _group(mutation: str | None) -> str:
    return (mutation or "template").split("@")[0]


def _row(task: DafnyTask, messages: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "prompt": messages,
        "task_id": task.id,
        "difficulty": task.n_lines / 100.0 + (0.0 if task.easy else 1.0),
        "group": _group(task.mutation),
    }


class GoldHintAnnotator:
    """The program frozen annotator: the gold annotated body when the writer wrote the gold
    body (hints aside), else the body as written (no hints) — so it never rewards a writer
    for code it did not write."""

    name = "program"

    def write(self, task: DafnyTask) -> str:
        return prompts.fenced(task.body)

    def annotate(self, task: DafnyTask, body: str) -> str:
        return prompts.fenced(task.annotated_body if keeps_code(task, task.body, body) else body)


def grpo_pass_rates(family: Family, home: Path, split: str) -> dict[str, float]:
    """Verified share of the stored trajectories per group (template, or mutation kind);
    `family` is the Dafny family (its lake reader), given by `family.py`."""
    counts: dict[str, list[int]] = {}
    for source in SOURCES:
        for t in family.read_rollouts(home, source, split):
            if isinstance(t, DafnyTrajectory):
                c = counts.setdefault(_group(t.mutation), [0, 0])
                c[0] += int(t.verified)
                c[1] += 1
    return {k: v / n for k, (v, n) in counts.items() if n}


class DafnyScorer:
    """The pooled verifier over one role's tasks: the completion's last dafny block is the
    body (writer) or annotated body (annotator), spliced into the task's program; rewards
    are `binary_reward` (outcome) and the capped `partial_reward` (anti-cheat first). An
    answer that is not one `{ … }` block scores 0 unverified (status `no_body`): spliced in,
    an empty answer would leave the method bodiless, which Dafny 2.3 accepts.

    `score` gives the GRPO rewards only; `evaluate` (what `verilearn eval` calls) adds the
    verifier status, the verifier's log, the gold target and the role's metrics of
    `verify/scoring.py` from the same verification: writer `exact_match`, `bleu`, `covered`;
    annotator `verified`. The frozen-partner roles are described in the module doc.
    """

    def __init__(
        self,
        home: Path,
        tasks: Sequence[Record],
        role: str,
        *,
        frozen_bodies: dict[str, str] | None = None,
        annotator: Teacher | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.role = role
        self.tasks = {t.id: t for t in role_tasks(tasks, role)}
        if role == ANNOTATOR_FROZEN_WRITER and frozen_bodies is None:
            raise ValueError(f"dafny GRPO role {role}: the frozen writer's bodies are needed")
        if role == WRITER_CASCADE and annotator is None:
            raise ValueError(f"dafny GRPO role {role}: a frozen annotator is needed")
        self.frozen_bodies = frozen_bodies or {}
        self.annotator = annotator
        self._annotator_lock = threading.Lock()  # one model call at a time (one event loop)
        self._on_close = on_close
        self.verifier = DafnyVerifier(load_dafny_config().verifier, cache_dir=cache_dir(home))

    def gold(self, task_id: str) -> str:
        """What the role should have answered (evaluation diffs against it)."""
        task = self._task(task_id)
        return task.body if task_role(self.role) == "writer" else task.annotated_body

    def _task(self, task_id: str) -> DafnyTask:
        if task_id not in self.tasks:
            raise KeyError(f"dafny rewards: no accepted task {task_id!r} of role {self.role}")
        return self.tasks[task_id]

    def _detail(self, task_id: str, completion: str) -> dict[str, Any]:
        """The verdict, with `gold` and `judged` (what was verified: the completion's last
        dafny block) for the evaluation's diff."""
        body = prompts.answer(completion)
        return {
            **self._judge(self._task(task_id), body),
            "gold": self.gold(task_id),
            "judged": body,
        }

    def _judge(self, task: DafnyTask, body: str) -> dict[str, Any]:
        if self.role == WRITER_CASCADE:
            return self._writer_cascade(task, body)
        if self.role == "writer":
            scored = score_writer(task, body, self.verifier)
        else:  # annotator, annotator_frozen_writer: the code shown must be kept
            shown = (
                self.frozen_bodies[task.id] if self.role == ANNOTATOR_FROZEN_WRITER else task.body
            )
            scored = score_annotation(task, shown, body, self.verifier)
        out = _verdict(scored, scored.partial)
        if self.role == "writer":
            w = writer_score_of(task, body, scored)
            out.update(exact_match=w.exact_match, bleu=w.bleu, covered=w.covered)
        else:
            out.update(verified=annotator_score_of(scored).verified)
        return out

    def _writer_cascade(self, task: DafnyTask, body: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "exact_match": normalize(body) == normalize(task.body),
            "bleu": round(bleu4(body, task.body), 4),
        }
        cheats = screen(body, "writer")
        if cheats:  # refused before the annotator is asked
            return {**out, **_verdict(refused(cheats), 0.0)}
        assert self.annotator is not None
        with self._annotator_lock:
            annotated = prompts.answer(self.annotator.annotate(task, body))
        changed = not keeps_code(task, body, annotated)
        scored = cascade_verdict(task, body, annotated, self.verifier)
        return {
            **out,
            **_verdict(scored, cascade_reward(scored)),
            "annotation": annotated[:4000],
            "annotator_changed_code": changed,
        }

    def _one(self, task_id: str, completion: str) -> dict[str, float]:
        d = self._detail(task_id, completion)
        return {"outcome": d["outcome"], "partial": d["partial"]}

    def score(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[dict[str, float]]:
        with ThreadPoolExecutor(self.verifier.size) as ex:
            return list(ex.map(self._one, task_ids, completions))

    def evaluate(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[dict[str, Any]]:
        """`score` plus `status`, the verifier log and the role's metrics."""
        if len(task_ids) != len(completions):
            raise ValueError(f"{len(task_ids)} task ids for {len(completions)} completions")
        with ThreadPoolExecutor(self.verifier.size) as ex:
            return list(ex.map(self._detail, task_ids, completions))

    def close(self) -> None:
        self.verifier.close()
        if self._on_close is not None:
            self._on_close()
            self._on_close = None


def _verdict(scored: Scored, partial: float) -> dict[str, Any]:
    """outcome/partial/status, and the verifier's own log (errors and output) when it ran."""
    out: dict[str, Any] = {"outcome": scored.reward, "partial": partial, "status": scored.status}
    if scored.cheats:
        out["verifier_log"] = "; ".join(f"{c.cheat}: {c.detail}" for c in scored.cheats)
    elif scored.result is not None:
        out["verifier_log"] = scored.result.output
        out["verifier_errors"] = [e.model_dump() for e in scored.result.errors]
        out["verifier_cached"] = scored.result.cached
    return out


def cascade_verdict(task: DafnyTask, body: str, annotated: str, verifier: Any) -> Scored:
    """The annotated body in the writer task's program; an annotation that changed the
    writer's code (or is refused by the screen) is discarded and the body verified as
    written: the writer is credited for what it wrote, never for substituted code."""
    scored = score_annotation(task, body, annotated, verifier)
    if scored.status in (CODE_CHANGED, NO_BODY, "cheat"):
        return score_annotation(task, body, body, verifier)
    return scored


# --- evaluation: the writer → annotator → verifier cascade as one chained role ---------------
def cascade_prompts(
    home: Path, tasks: Sequence[Record], rows: Sequence[dict[str, Any]], writer_texts: Sequence[str]
) -> list[dict[str, Any]]:
    """The annotator's prompt over the body the writer gave (same writer task ids)."""
    cfg = prompts.load_prompt_config()
    by_id = {t.id: t for t in role_tasks(tasks, "writer")}
    return [
        {
            **row,
            "prompt": prompts.role_prompt(by_id[row["task_id"]], "annotator", body, cfg),
        }
        for row, body in zip(rows, map(prompts.answer, writer_texts), strict=True)
    ]


def cascade_score(
    home: Path,
    tasks: Sequence[Record],
    task_ids: Sequence[str],
    writer_texts: Sequence[str],
    annotator_texts: Sequence[str],
) -> list[dict[str, Any]]:
    """The cascade's verdict: the annotated body in the writer task's program (outcome 1 =
    verified, `cascade_reward` as partial credit), with the writer body's exact match and
    BLEU against gold; a writer answer the screen refuses (no `{ … }` block, a cheat) ends
    the cascade there, and an annotator answer that changed the writer's code scores 0
    (`code_changed`): the annotator may not replace the body it was given."""
    scorer = DafnyScorer(home, tasks, "writer")
    try:

        def one(task_id: str, wrote: str, annotated: str) -> dict[str, Any]:
            task = scorer.tasks[task_id]
            body = prompts.answer(wrote)
            out: dict[str, Any] = {
                "writer_exact_match": normalize(body) == normalize(task.body),
                "writer_bleu": round(bleu4(body, task.body), 4),
            }
            out.update(gold=task.annotated_body, judged=prompts.answer(annotated))
            cheats = screen(body, "writer")
            if cheats:
                return {**out, **_verdict(refused(cheats), 0.0)}
            scored = score_annotation(task, body, out["judged"], scorer.verifier)
            return {**out, **_verdict(scored, cascade_reward(scored))}

        with ThreadPoolExecutor(scorer.verifier.size) as ex:
            return list(ex.map(one, task_ids, writer_texts, annotator_texts))
    finally:
        scorer.close()


# --- the hook ---------------------------------------------------------------------------------
class DafnyGrpo:
    """Prompts and scorers of every Dafny GRPO role. `frozen_writer`/`frozen_annotator`
    replace the partners configured under `grpo:` in configs/dafny.yaml (tests pass a
    scripted one). The frozen writer's bodies are memoized per (partner, task), so the
    prompts the policy saw and the scorer's code check agree even for a sampling model.
    `pass_rates` is the curriculum hook `family.py` gives (`grpo_pass_rates` over FAMILY);
    without it the hook has none."""

    def __init__(
        self,
        frozen_writer: Teacher | None = None,
        frozen_annotator: Teacher | None = None,
        pass_rates: Callable[[Path, str], dict[str, float]] | None = None,
    ) -> None:
        self.frozen_writer = frozen_writer
        self.frozen_annotator = frozen_annotator
        self.pass_rates = pass_rates
        self._bodies: dict[tuple[str, str], str] = {}

    def _partner(self, which: str) -> tuple[Teacher, str, Callable[[], None] | None]:
        """(teacher, memo label, close) for `writer` or `annotator`; configured partners
        that hold a client are closed by the caller."""
        injected = self.frozen_writer if which == "writer" else self.frozen_annotator
        if injected is not None:
            return injected, f"injected:{id(injected)}", None
        cfg = load_dafny_config().grpo
        kind = cfg.frozen_writer if which == "writer" else cfg.frozen_annotator
        if kind == "program":
            return (ProgramTeacher() if which == "writer" else GoldHintAnnotator()), "program", None
        vcfg = load_vllm_config()
        if cfg.frozen_model:
            vcfg = vcfg.model_copy(update={"model": cfg.frozen_model})
        if not vcfg.has_server:
            raise ValueError(
                f"configs/dafny.yaml grpo.frozen_{which}: vllm needs a server serving the "
                f"frozen {which} (configs/vllm.yaml base_urls)"
            )
        teacher = teacher_for("vllm", vcfg)
        return teacher, f"vllm:{vcfg.model}", teacher.close  # type: ignore[attr-defined]

    def frozen_bodies(self, tasks: Sequence[DafnyTask]) -> dict[str, str]:
        """The frozen writer's body per writer task (memoized)."""
        teacher, label, close = self._partner("writer")
        try:
            out = {}
            for t in tasks:
                key = (label, t.id)
                if key not in self._bodies:
                    self._bodies[key] = prompts.answer(teacher.write(t))
                out[t.id] = self._bodies[key]
            return out
        finally:
            if close is not None:
                close()

    def prompts(self, home: Path, tasks: Sequence[Record], role: str) -> list[dict[str, Any]]:
        """The family's own prompts (`prompts.role_prompt`, the builder SFT rows use too);
        harder = longer, not easy."""
        cfg = prompts.load_prompt_config()
        chosen = role_tasks(tasks, role)
        if role == ANNOTATOR_FROZEN_WRITER:
            bodies = self.frozen_bodies(chosen)
            return [
                _row(t, prompts.role_prompt(t, "annotator", bodies[t.id], cfg))
                for t in chosen
                if is_block(bodies[t.id])
            ]
        base = task_role(role)
        return [_row(t, prompts.role_prompt(t, base, config=cfg)) for t in chosen]

    def scorer(self, home: Path, tasks: Sequence[Record], role: str) -> DafnyScorer:
        if role == ANNOTATOR_FROZEN_WRITER:
            bodies = self.frozen_bodies(role_tasks(tasks, role))
            return DafnyScorer(home, tasks, role, frozen_bodies=bodies)
        if role == WRITER_CASCADE:
            teacher, _, close = self._partner("annotator")
            try:
                return DafnyScorer(home, tasks, role, annotator=teacher, on_close=close)
            except BaseException:
                if close is not None:
                    close()
                raise
        return DafnyScorer(home, tasks, role)

    def task(self) -> GrpoTask:
        return GrpoTask(
            self.prompts,
            self.scorer,
            roles=ROLES,
            pass_rates=self.pass_rates,
            stop=lambda: prompts.load_prompt_config().stop,  # as the vllm teacher sends
            # `verilearn eval --family dafny --role cascade`: writer, annotator, verifier
            eval_chains={"cascade": EvalChain("writer", cascade_prompts, cascade_score)},
        )


def grpo_task(
    frozen_writer: Teacher | None = None,
    frozen_annotator: Teacher | None = None,
    pass_rates: Callable[[Path, str], dict[str, float]] | None = None,
) -> GrpoTask:
    return DafnyGrpo(frozen_writer, frozen_annotator, pass_rates).task()
