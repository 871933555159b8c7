"""The Dafny family as the platform sees it (pure: no Dagster)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from verilearn_assets.core.family import EvalChain, Family, GateRule, GrpoTask
from verilearn_assets.core.records import Record
from verilearn_assets.dafny import prompts, rules
from verilearn_assets.dafny.records import DafnyTask, DafnyTrajectory
from verilearn_assets.dafny.sft import sft_rows


# --- GRPO: one role's prompts, and the verifier rewards of `rewards.py` ---------------------
def _grpo_tasks(tasks: Sequence[Record], role: str) -> list[DafnyTask]:
    if role not in ("writer", "annotator"):
        raise ValueError(f"dafny GRPO: role must be writer or annotator, got {role!r}")
    return [
        t for t in tasks if isinstance(t, DafnyTask) and t.status == "accepted" and t.role == role
    ]


def grpo_prompts(home: Path, tasks: Sequence[Record], role: str) -> list[dict[str, Any]]:
    """The family's own prompts (configs/dafny_prompts.yaml); harder = longer, not easy."""
    cfg = prompts.load_prompt_config()
    return [
        {
            "prompt": prompts.messages(t, role, config=cfg),
            "task_id": t.id,
            "difficulty": t.n_lines / 100.0 + (0.0 if t.easy else 1.0),
            "group": _group(t.mutation),
        }
        for t in _grpo_tasks(tasks, role)
    ]


def _group(mutation: str | None) -> str:
    return (mutation or "template").split("@")[0]


def grpo_pass_rates(home: Path, split: str) -> dict[str, float]:
    """Verified share of the stored trajectories per group (template, or mutation kind)."""
    from verilearn_assets.core.records import SOURCES

    counts: dict[str, list[int]] = {}
    for source in SOURCES:
        for t in FAMILY.read_rollouts(home, source, split):
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
    verifier status and the role's metrics of `evaluate.py` from the same verification:
    writer `exact_match`, `bleu`, `covered`; annotator `verified`.
    """

    def __init__(self, home: Path, tasks: Sequence[Record], role: str) -> None:
        from verilearn_assets.dafny.settings import cache_dir, load_dafny_config
        from verilearn_assets.dafny.verifier import DafnyVerifier

        self.role = role
        self.tasks = {t.id: t for t in _grpo_tasks(tasks, role)}
        self.verifier = DafnyVerifier(load_dafny_config().verifier, cache_dir=cache_dir(home))

    def _detail(self, task_id: str, completion: str) -> dict[str, Any]:
        from verilearn_assets.dafny.evaluate import annotator_score_of, score_body, writer_score_of

        if task_id not in self.tasks:
            raise KeyError(f"dafny rewards: no accepted task {task_id!r} of this role")
        task = self.tasks[task_id]
        body = prompts.answer(completion)
        scored = score_body(task, body, self.verifier)  # not one `{ … }` block: 0, no_body
        out: dict[str, Any] = {
            "outcome": scored.reward,
            "partial": scored.partial,
            "status": scored.status,
        }
        if self.role == "writer":
            w = writer_score_of(task, body, scored)
            out.update(exact_match=w.exact_match, bleu=w.bleu, covered=w.covered)
        else:
            out.update(verified=annotator_score_of(scored).verified)
        return out

    def _one(self, task_id: str, completion: str) -> dict[str, float]:
        d = self._detail(task_id, completion)
        return {"outcome": d["outcome"], "partial": d["partial"]}

    def score(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[dict[str, float]]:
        with ThreadPoolExecutor(self.verifier.size) as ex:
            return list(ex.map(self._one, task_ids, completions))

    def evaluate(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[dict[str, Any]]:
        """`score` plus `status` and the role's metrics (exact_match/bleu/covered, verified)."""
        if len(task_ids) != len(completions):
            raise ValueError(f"{len(task_ids)} task ids for {len(completions)} completions")
        with ThreadPoolExecutor(self.verifier.size) as ex:
            return list(ex.map(self._detail, task_ids, completions))

    def close(self) -> None:
        self.verifier.close()


# --- evaluation: the writer → annotator → verifier cascade as one chained role ---------------
def cascade_prompts(
    home: Path, tasks: Sequence[Record], rows: Sequence[dict[str, Any]], writer_texts: Sequence[str]
) -> list[dict[str, Any]]:
    """The annotator's prompt over the body the writer gave (same writer task ids)."""
    cfg = prompts.load_prompt_config()
    by_id = {t.id: t for t in _grpo_tasks(tasks, "writer")}
    return [
        {
            **row,
            "prompt": prompts.messages(by_id[row["task_id"]], "annotator", body=body, config=cfg),
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
    BLEU against gold; a writer answer that is no `{ … }` block ends the cascade there."""
    from verilearn_assets.dafny.evaluate import NO_BODY, bleu4, is_block, score_body
    from verilearn_assets.dafny.rewards import cascade_reward
    from verilearn_assets.dafny.syntax import normalize

    scorer = DafnyScorer(home, tasks, "writer")
    try:

        def one(task_id: str, wrote: str, annotated: str) -> dict[str, Any]:
            task = scorer.tasks[task_id]
            body = prompts.answer(wrote)
            out: dict[str, Any] = {
                "writer_exact_match": normalize(body) == normalize(task.body),
                "writer_bleu": round(bleu4(body, task.body), 4),
            }
            if not is_block(body):
                return {**out, "outcome": 0.0, "partial": 0.0, "status": NO_BODY}
            scored = score_body(task, prompts.answer(annotated), scorer.verifier)
            return {
                **out,
                "outcome": scored.reward,
                "partial": cascade_reward(scored),
                "status": scored.status,
            }

        with ThreadPoolExecutor(scorer.verifier.size) as ex:
            return list(ex.map(one, task_ids, writer_texts, annotator_texts))
    finally:
        scorer.close()


FAMILY = Family(
    name="dafny",
    task_asset="tasks",
    rollout_asset="trajectories",
    task_model=DafnyTask,
    rollout_model=DafnyTrajectory,
    sft_rows=sft_rows,
    description=(
        "Dafny writer (spec → body) and annotator (body → proof hints) tasks, verified by "
        "Dafny 2.3 through a jailed long-lived verifier pool"
    ),
    rules=(
        GateRule(
            "dafny_gold_reverifies",
            "tasks",
            rules.gold_reverifies,
            "a seeded sample of accepted gold programs verifies again (fresh, no cache)",
        ),
        GateRule(
            "dafny_one_split",
            "tasks",
            rules.one_split,
            "no program has tasks in two splits (any source)",
        ),
        GateRule(
            "dafny_no_cheat_in_targets",
            "tasks",
            rules.no_cheat_in_targets,
            "no accepted target or gold program holds assume/{:axiom}/{:verify false}/{:extern}",
        ),
        GateRule(
            "dafny_cache_agrees",
            "tasks",
            rules.cache_agrees,
            "cached verdicts of sampled gold programs equal a fresh verification",
        ),
        GateRule(
            "dafny_trajectories_consistent",
            "rollouts",
            rules.trajectories_consistent,
            "verified flags, rewards and task links of trajectories agree",
        ),
    ),
    task_columns=("role", "name", "status", "input_status", "mutation"),
    rollout_columns=("role", "status", "failure_bucket", "reward", "latency_ms"),
    grpo=GrpoTask(
        grpo_prompts,
        DafnyScorer,
        roles=("writer", "annotator"),
        pass_rates=grpo_pass_rates,
        stop=lambda: prompts.load_prompt_config().stop,  # as the vllm teacher sends
        # `verilearn eval --family dafny --role cascade`: writer, annotator, verifier
        eval_chains={"cascade": EvalChain("writer", cascade_prompts, cascade_score)},
    ),
)
