"""Evaluate a model on any family with a GRPO hook: one greedy completion per task (pure of
Dagster).

The family contract already says what a model is asked and how its answer is judged: its
`grpo.prompts(home, tasks, role)` gives one chat prompt per accepted task and
`grpo.scorer(home, tasks, role)` the verifier reward (`outcome` 1.0 = verified). Evaluation
reuses both, so a family gets evaluated without any code here knowing it: the split's
accepted tasks → prompts → one completion each from the served model (greedy by default,
the prompt fitted to the served window by the context budget) → the family's scorer → one
`ModelEvalRecord` per task, every score key in `extra`. A scorer may offer
`evaluate(task_ids, completions)` returning richer dicts (status, per-role metrics) than the
reward-only `score`; the evaluator prefers it.

What a model says comes from a `CompletionSource`: `VllmCompletions` (the served model), or
in tests a scripted source standing in for a model.

Chained roles: `GrpoTask.eval_chains` lists roles that run two model turns per task
(`core.family.EvalChain`; dafny `cascade`: the writer's body, then the annotator on that
body, then the verifier). The record carries the second turn's text and the tokens and
latency of both turns.

Stop sequences: a prompt row's `stop`, else `GrpoTask.stop()` (dafny: the stop sequences
of configs/dafny_prompts.yaml, which its vllm teacher sends too).

n-best lists, diffs and verifier logs: besides the greedy completion (pass@1, the verdict
the record keeps), `n_best - 1` more are sampled per task (at the n-best temperature, seeds
`seed + k`) and scored the same way. Every candidate of every task lands in one JSON line
per task of the evaluation's details file `<home>/evals/<model>/<family>-<role>-<split>.jsonl`
(rewritten by a re-run, like the records): its text, verdict, the verifier's log when the
scorer gives one (`verifier_log`, `verifier_errors`), and a unified diff of what was judged
(`judged`, else the completion) against the gold answer when the scorer gives one (`gold`).
The record's `extra` holds the scalar score keys (logs and texts stay in the file),
`n_best`, `n_best_passed`, `pass_at_n` and the file's path relative to the home. `n_best`
comes from the caller, else `settings.n_best` (training.yaml `eval:`), else the family's
default (`Family.eval_n_best() -> (n, temperature)`, dafny: `eval:` in
configs/dafny.yaml), else 1. A source with `sampled(k, temperature)` gives the k-th sample
source (`VllmCompletions`: same server, sampled); one without answers again as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import ModelEvalRecord
from verilearn_assets.core.family import EvalChain, Family, family
from verilearn_assets.core.llm.client import VllmClient, VllmContextOverflow
from verilearn_assets.core.llm.config import VllmConfig, load_vllm_config
from verilearn_assets.core.llm.fit import FAILURE_CLASS as CONTEXT_OVERFLOW
from verilearn_assets.core.records import SOURCES, SPLITS, Record, content_hash
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.eval.request import EvalRequest
from verilearn_assets.training.eval.result import EvalResult, write_eval_records
from verilearn_assets.training.eval.serving import resolve_model, serving

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (tasks done, tasks in all)
ANSWER_CHARS = 8000  # the completion kept in the record (its head)
DETAIL_KEYS = frozenset({"gold", "judged", "annotation"})
DETAIL_PREFIX = "verifier_"  # verifier_log, verifier_errors, verifier_cached, ...
"""Score keys kept in the details file only (texts, logs, cache flags: a re-run must give
the same records), never in `extra`; so are lists and dicts."""
EVALS_DIR = "evals"  # <home>/evals/<model>/<family>-<role>-<split>.jsonl


@dataclass(frozen=True)
class Completion:
    """What the model said to one prompt, and what it cost; `failure` when nothing could be
    asked (the prompt does not fit the window)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    finish_reason: str | None = None
    failure: str | None = None
    turns: int = 1  # model turns behind it (a chained role: 2)


class CompletionSource(Protocol):
    """Answers prompt rows (from `grpo.prompts`) in order; `name` goes to `sampling_key`."""

    name: str

    def complete(
        self, rows: Sequence[dict[str, Any]], progress: Progress | None = None
    ) -> list[Completion]: ...


# --- the served model -----------------------------------------------------------------------
class VllmCompletions:
    """One completion per prompt from a vLLM server, `settings.concurrency` in flight.

    Prompts are fitted to the served window by the context budget (`fit_chat`, the policy
    training uses on SFT rows); one that still does not fit is not sent and ends as
    `context_overflow`, as does one the server refuses as too long.
    """

    name = "vllm"

    def __init__(
        self, client_cfg: VllmConfig, settings: EvalSettings, stop: Sequence[str] = ()
    ) -> None:
        self.client_cfg = client_cfg
        self.settings = settings
        self.stop = list(stop)

    def sampling(self) -> dict[str, Any]:
        s = self.settings
        return {"temperature": s.temperature, "top_p": 1.0, "max_tokens": s.max_tokens}

    def sampled(self, k: int, temperature: float) -> VllmCompletions:
        """The k-th n-best sample: the same server, `temperature`, seed `seed + k`."""
        seed = self.settings.seed + k
        s = self.settings.model_copy(update={"temperature": temperature, "seed": seed})
        return VllmCompletions(self.client_cfg, s, self.stop)

    def complete(
        self, rows: Sequence[dict[str, Any]], progress: Progress | None = None
    ) -> list[Completion]:
        return asyncio.run(self._complete(rows, progress))

    async def _complete(
        self, rows: Sequence[dict[str, Any]], progress: Progress | None
    ) -> list[Completion]:
        out: list[Completion | None] = [None] * len(rows)
        gate = asyncio.Semaphore(self.settings.concurrency)
        done = 0
        async with VllmClient(self.client_cfg) as client:
            budget = client.budget(self.settings.max_tokens)

            async def one(i: int, row: dict[str, Any]) -> None:
                nonlocal done
                async with gate:
                    out[i] = await self._one(client, budget, row)
                done += 1
                if progress is not None:
                    progress(done, len(rows))

            await asyncio.gather(*(one(i, r) for i, r in enumerate(rows)))
        return [c for c in out if c is not None]

    async def _one(self, client: VllmClient, budget: Any, row: dict[str, Any]) -> Completion:
        messages = list(row["prompt"])
        if budget is not None:
            fit = budget.fit_chat(messages)
            if fit.overflow:
                log.warning("task %s: %s", row["task_id"], fit.reason)
                return Completion("", prompt_tokens=fit.prompt_tokens, failure=CONTEXT_OVERFLOW)
            messages = fit.messages
        stop = row.get("stop") or self.stop
        extra = {"stop": list(stop)} if stop else {}
        started = time.perf_counter()
        try:
            res = await client.chat(messages, seed=self.settings.seed, **self.sampling(), **extra)
        except VllmContextOverflow as exc:
            log.warning("task %s: %s", row["task_id"], exc)
            ms = (time.perf_counter() - started) * 1000
            return Completion("", latency_ms=ms, failure=CONTEXT_OVERFLOW)
        return Completion(
            res.text,
            prompt_tokens=res.prompt_tokens,
            completion_tokens=res.completion_tokens,
            latency_ms=round(res.latency_ms, 3),
            finish_reason=res.finish_reason,
        )


# --- which tasks ------------------------------------------------------------------------------
def family_stop(fam: Family) -> list[str]:
    hook = fam.grpo.stop if fam.grpo is not None else None
    return list(hook()) if hook is not None else []


def eval_chains(fam: Family) -> dict[str, EvalChain]:
    return dict(fam.grpo.eval_chains) if fam.grpo is not None else {}


def eval_roles(fam: Family) -> tuple[str, ...]:
    """Every role `verilearn eval --family` accepts for `fam`: the family's own list
    (`Family.eval_roles`), else its grpo roles, then chains."""
    if fam.eval_roles is not None:
        return fam.eval_roles
    if fam.grpo is None:
        return ()
    return (*fam.grpo.roles, *(r for r in eval_chains(fam) if r not in fam.grpo.roles))


def family_rows(
    home: Path,
    fam: Family,
    split: str,
    role: str,
    *,
    task_ids: Sequence[str] | None = None,
    limit: int | None = None,
) -> tuple[list[Record], list[dict[str, Any]]]:
    """The split's accepted tasks (every source) and their prompt rows for `role`, sorted by
    task id; `task_ids` keeps only those (each must be one of the role's accepted tasks)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
    grpo = fam.grpo
    if grpo is None:
        raise ValueError(f"family {fam.name!r} has no grpo hook (prompts and scorer) to evaluate")
    if role not in eval_roles(fam):
        raise ValueError(
            f"family {fam.name!r} has no role {role!r} (roles: {', '.join(eval_roles(fam))})"
        )
    prompt_role = eval_chains(fam)[role].first_role if role in eval_chains(fam) else role
    tasks = [
        t
        for source in SOURCES
        for t in fam.read_tasks(home, source, split)
        if getattr(t, "status", None) == "accepted"
    ]
    where = lake.lake_root(home) / fam.task_lake
    if not tasks:
        raise ValueError(
            f"split {split!r} has no accepted {fam.name} tasks under {where} "
            f"(materialize {fam.task_lake} first, e.g. `verilearn demo`)"
        )
    rows = sorted(grpo.prompts(home, tasks, prompt_role), key=lambda r: r["task_id"])
    if task_ids is not None:
        by_id = {r["task_id"]: r for r in rows}
        wanted = list(dict.fromkeys(task_ids))
        missing = [i for i in wanted if i not in by_id]
        if missing:
            raise ValueError(
                f"task id(s) {missing} are not accepted {fam.name} {role} tasks of split "
                f"{split!r} under {where}"
            )
        rows = [by_id[i] for i in wanted]
    if not rows:
        raise ValueError(f"split {split!r} has no accepted {fam.name} tasks of role {role!r}")
    return tasks, rows[:limit] if limit is not None else rows


# --- scoring and records -----------------------------------------------------------------------
def score_completions(
    home: Path,
    fam: Family,
    role: str,
    tasks: Sequence[Record],
    rows: Sequence[dict[str, Any]],
    completions: Sequence[Completion],
) -> list[dict[str, Any] | None]:
    """The family's verdict per completion (None for one never asked: context overflow)."""
    assert fam.grpo is not None
    asked = [i for i, c in enumerate(completions) if c.failure is None]
    out: list[dict[str, Any] | None] = [None] * len(rows)
    if not asked:
        return out
    scorer = fam.grpo.scorer(home, tasks, role)
    try:
        judge = getattr(scorer, "evaluate", None) or scorer.score
        scores = judge([rows[i]["task_id"] for i in asked], [completions[i].text for i in asked])
    finally:
        scorer.close()
    if len(scores) != len(asked):
        raise ValueError(f"{fam.name} scorer returned {len(scores)} scores for {len(asked)}")
    for i, s in zip(asked, scores, strict=True):
        missing = [k for k in ("outcome", "partial") if k not in s]
        if missing:
            raise KeyError(f"{fam.name} scorer: score of task {rows[i]['task_id']} lacks {missing}")
        out[i] = dict(s)
    return out


def run_chain(
    home: Path,
    fam: Family,
    role: str,
    tasks: Sequence[Record],
    rows: Sequence[dict[str, Any]],
    source: CompletionSource,
    progress: Progress | None,
) -> tuple[list[Completion], list[dict[str, Any] | None]]:
    """Both turns of a chained role; a task whose first turn was never asked (overflow)
    skips the second. Returns one merged completion (second turn's text, both turns'
    cost) and one score per task."""
    chain = eval_chains(fam)[role]
    first = source.complete(rows, progress)
    asked = [i for i, c in enumerate(first) if c.failure is None]
    texts = [first[i].text for i in asked]
    nxt = chain.next_prompts(home, tasks, [rows[i] for i in asked], texts)
    second_asked = source.complete(nxt, progress) if nxt else []
    second: dict[int, Completion] = dict(zip(asked, second_asked, strict=True))
    merged: list[Completion] = []
    for i, c in enumerate(first):
        s = second.get(i)
        if s is None:
            merged.append(c)
            continue
        merged.append(
            Completion(
                s.text,
                prompt_tokens=c.prompt_tokens + s.prompt_tokens,
                completion_tokens=c.completion_tokens + s.completion_tokens,
                latency_ms=round(c.latency_ms + s.latency_ms, 3),
                finish_reason=s.finish_reason,
                failure=s.failure,
                turns=c.turns + s.turns,
            )
        )
    ok = [i for i in asked if second[i].failure is None]
    scores: list[dict[str, Any] | None] = [None] * len(rows)
    if ok:
        got = chain.score(
            home,
            tasks,
            [rows[i]["task_id"] for i in ok],
            [first[i].text for i in ok],
            [second[i].text for i in ok],
        )
        for i, sc in zip(ok, got, strict=True):
            scores[i] = dict(sc, first_turn=first[i].text[:ANSWER_CHARS])
    return merged, scores


def _json_safe(value: Any) -> Any:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def to_record(
    mut: Any,
    fam: Family,
    role: str,
    task: Record,
    row: dict[str, Any],
    completion: Completion,
    score: dict[str, Any] | None,
    sampling_key: str,
) -> ModelEvalRecord:
    """One task's verdict: passed when the verifier's outcome is 1; the failure class is the
    scorer's `status` when it gives one."""
    passed = score is not None and float(score["outcome"]) == 1.0
    if completion.failure is not None:
        failure: str | None = completion.failure
    elif passed:
        failure = None
    else:
        status = (score or {}).get("status")
        failure = str(status) if status and status != "verified" else "not_verified"
    group = str(row.get("group") or "(none)")
    extra = {
        k: _json_safe(v)
        for k, v in (score or {}).items()
        if k not in DETAIL_KEYS
        and not k.startswith(DETAIL_PREFIX)
        and not isinstance(v, list | dict)
    }
    if completion.finish_reason is not None:
        extra["finish_reason"] = completion.finish_reason
    return ModelEvalRecord(
        id=ModelEvalRecord.make_id(mut.name, task.id, fam.name, role),
        model=mut.name,
        model_path=str(mut.path) if mut.path else None,
        run_id=mut.run_dir.name if mut.run_dir else None,
        family=fam.name,
        role=role,
        question_id=task.id,
        source=str(task.source),  # type: ignore[attr-defined]
        split=str(task.split),  # type: ignore[attr-defined]
        dataset=str(getattr(task, "dataset", None) or getattr(task, "repo", None) or fam.name),
        template=group,
        template_family=group,
        difficulty=f"{float(row.get('difficulty', 0.0)):.1f}",
        passed=passed,
        failure_class=failure,
        n_turns=completion.turns if completion.failure is None else completion.turns - 1,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        latency_ms=round(float(completion.latency_ms), 3),
        answer=completion.text[:ANSWER_CHARS],
        sampling_key=sampling_key,
        extra=extra,
    )


def family_sampling_key(source: CompletionSource, model: str, settings: EvalSettings) -> str:
    s = settings
    return content_hash("eval", source.name, model, s.temperature, s.max_tokens, s.seed)


def answer_and_score(
    home: Path,
    fam: Family,
    role: str,
    tasks: Sequence[Record],
    rows: Sequence[dict[str, Any]],
    source: CompletionSource,
    progress: Progress | None = None,
) -> tuple[list[Completion], list[dict[str, Any] | None]]:
    """One completion per row from `source` (both turns for a chained role), scored."""
    if role in eval_chains(fam):
        completions, scores = run_chain(home, fam, role, tasks, rows, source, progress)
    else:
        completions = source.complete(rows, progress)
        scores = []
    if len(completions) != len(rows):
        raise RuntimeError(
            f"evaluation on {fam.name}/{role}: {len(completions)} completions for "
            f"{len(rows)} prompts"
        )
    if role not in eval_chains(fam):
        scores = score_completions(home, fam, role, tasks, rows, completions)
    return completions, scores


def resolve_n_best(
    fam: Family, settings: EvalSettings, n_best: int | None, temperature: float | None
) -> tuple[int, float]:
    """(n, sampling temperature of candidates 2..n): the caller's, else the settings', else
    the family's default, else (1, 1.0)."""
    fam_n, fam_t = 1, 1.0
    if fam.eval_n_best is not None:
        fam_n, fam_t = fam.eval_n_best()
    n = n_best or settings.n_best or fam_n
    t = temperature if temperature is not None else settings.n_best_temperature
    if n < 1:
        raise ValueError(f"n_best must be at least 1, got {n}")
    return int(n), float(t if t is not None else fam_t)


def gold_diff(gold: str, judged: str) -> str:
    """Unified diff of what was judged against the gold answer ('' when equal)."""
    return "\n".join(
        difflib.unified_diff(
            gold.strip("\n").splitlines(),
            judged.strip("\n").splitlines(),
            "gold",
            "answer",
            lineterm="",
        )
    )


def candidate_entry(k: int, completion: Completion, score: dict[str, Any] | None) -> dict[str, Any]:
    """One n-best candidate as the details file keeps it (k = 0: the greedy verdict)."""
    out: dict[str, Any] = {
        "k": k,
        "text": completion.text[:ANSWER_CHARS],
        "failure": completion.failure,
        "passed": score is not None and float(score["outcome"]) == 1.0,
        "completion_tokens": completion.completion_tokens,
        "latency_ms": round(float(completion.latency_ms), 3),
    }
    if score is not None:
        out.update({k2: v for k2, v in score.items() if k2 != "gold"})
        if isinstance(score.get("gold"), str):
            judged = score.get("judged")
            out["diff"] = gold_diff(score["gold"], judged if isinstance(judged, str) else "")
    return out


def details_path(home: Path, model: str, family_name: str, role: str, split: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"
    return Path(home) / EVALS_DIR / safe / f"{family_name}-{role}-{split}.jsonl"


def write_details(path: Path, entries: Sequence[dict[str, Any]]) -> Path:
    """All tasks' n-best lists, one JSON line per task; temp file + rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".jsonl")
    with os.fdopen(fd, "w") as fh:
        for e in entries:
            fh.write(json.dumps(e, default=str) + "\n")
    os.replace(tmp, path)
    return path


# --- the run ----------------------------------------------------------------------------------
def evaluate_family(request: EvalRequest) -> EvalResult:
    """Serve `request.model` (or use `request.served`, or the scripted `request.source`),
    answer every accepted task of the family/role in the split (greedy: the verdict; plus
    `n_best - 1` samples), score with the family's verifier, write one record per task to
    the lake and the n-best details file, and return the `EvalResult`."""
    home = Path(request.home)
    split, role, source = request.split, request.role, request.source
    settings = request.settings
    fam = family(request.family_name())
    mut = resolve_model(request.model)
    n, temperature = resolve_n_best(fam, settings, request.n_best, request.n_best_temperature)
    tasks, rows = family_rows(
        home, fam, split, role, task_ids=request.task_ids, limit=request.limit or settings.limit
    )
    candidates: list[tuple[list[Completion], list[dict[str, Any] | None]]] = []
    with contextlib.ExitStack() as stack:
        if source is None:
            client_cfg = request.served or stack.enter_context(
                serving(mut, request.vllm_cfg or load_vllm_config())
            )
            source = VllmCompletions(client_cfg, settings, family_stop(fam))
        candidates.append(answer_and_score(home, fam, role, tasks, rows, source, request.progress))
        for k in range(1, n):
            sampled = getattr(source, "sampled", None)
            nth = sampled(k, temperature) if sampled is not None else source
            candidates.append(answer_and_score(home, fam, role, tasks, rows, nth))
    completions, scores = candidates[0]
    by_id = {t.id: t for t in tasks}
    key = family_sampling_key(source, mut.name, settings)
    details = details_path(home, mut.name, fam.name, role, split)
    records, entries = [], []
    for i, (row, c, s) in enumerate(zip(rows, completions, scores, strict=True)):
        listed = [candidate_entry(k, cs[0][i], cs[1][i]) for k, cs in enumerate(candidates)]
        n_ok = sum(e["passed"] for e in listed)
        rec = to_record(mut, fam, role, by_id[row["task_id"]], row, c, s, key)
        rec.extra.update(
            n_best=n,
            n_best_passed=n_ok,
            pass_at_n=n_ok > 0,
            details_file=str(details.relative_to(home)),
        )
        records.append(rec)
        entries.append(
            {
                "task_id": row["task_id"],
                "model": mut.name,
                "family": fam.name,
                "role": role,
                "split": split,
                "passed": rec.passed,
                "n_best": n,
                "n_best_temperature": temperature,
                "pass_at_n": n_ok > 0,
                "candidates": listed,
            }
        )
    write_details(details, entries)
    path = write_eval_records(home, split, records)
    return EvalResult(
        mut.name, split, records, path, family=fam.name, role=role, group_label=fam.eval_group_label
    )
