"""Evaluate a model on a split's tasks, any family and role (pure of Dagster).

`evaluate_model` routes by family: analysis (the default) runs the multi-turn student loop
below; every other family (and role) goes through its contract's GRPO hook in
`eval_family.py` — one greedy completion per task, scored by the family's verifier.

For analysis, the model under test is served on vLLM (launched here from a model directory, or an
existing server named in configs/vllm.yaml) and runs the same `vllm` teacher loop the
episodes come from, in the same sandbox, judged by the same strict answer comparison. One
`ModelEvalRecord` per question goes to the lake (`model_eval`, partition `split=<s>`), where
`mart_model_pass_rate` puts every evaluated model side by side. The `model_eval` asset and
`verilearn eval` both call `evaluate_model`, so the CLI's figures are the asset's.

pass@k: with `n_best` > 1 (`eval.n_best`, `verilearn eval --n`), every family answers each
task n times (the first at the evaluation's sampling: the verdict the record keeps; the
others at `n_best_temperature`, seeds `seed + k`); the record's `extra` keeps the counts
(`n_best`, `n_best_passed`) from which `EvalResult.pass_k` and `mart_model_pass_rate` give
pass@k and pass^k (`training/eval/pass_at_k.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import statistics
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verilearn_assets.analysis.grpo import question_shots
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.teacher.config import (
    SamplingConfig,
    TeacherConfig,
    load_teacher_config,
)
from verilearn_assets.analysis.teacher.loop import run_episode
from verilearn_assets.analysis.teacher.policy import VllmPolicy
from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import EVAL_ASSET, ModelEvalRecord
from verilearn_assets.core.family import families
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.llm.client import VllmClient
from verilearn_assets.core.llm.config import VllmConfig, load_vllm_config
from verilearn_assets.core.llm.launcher import REPO_ROOT, free_port, server_from_config
from verilearn_assets.core.records import SPLITS
from verilearn_assets.core.sandbox.config import SandboxConfig, load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxPool
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.eval.pass_at_k import aggregate, record_counts
from verilearn_assets.training.eval.single_turn import (
    CompletionSource,
    evaluate_family,
    resolve_n_best,
)

log = logging.getLogger(__name__)

ANALYSIS = "analysis"
QUESTIONS_ASSET = "analysis/questions"
RESULT_FILE = "result.json"  # written by every training run beside its model dir

Progress = Callable[[int, int], None]  # (questions done, questions in all)


@dataclass
class EvalResult:
    """What one evaluation run gives back (the records are also in the lake)."""

    model: str
    split: str
    records: list[ModelEvalRecord]
    lake_path: Path | None = None
    errors: list[str] = field(default_factory=list)
    family: str = "analysis"
    role: str = "default"

    @property
    def n(self) -> int:
        return len(self.records)

    @property
    def n_passed(self) -> int:
        return sum(r.passed for r in self.records)

    @property
    def pass_rate(self) -> float:
        return self.n_passed / self.n if self.n else 0.0

    @property
    def format_error_rate(self) -> float:
        """Share of questions whose trace had at least one rejected reply."""
        return sum(r.format_errors > 0 for r in self.records) / self.n if self.n else 0.0

    def failures(self) -> dict[str, int]:
        return dict(Counter(r.failure_class or "?" for r in self.records if not r.passed))

    def summary(self) -> dict[str, Any]:
        def mean(xs: Sequence[float]) -> float:
            return round(statistics.fmean(xs), 3) if xs else 0.0

        return {
            "model": self.model,
            "split": self.split,
            "family": self.family,
            "role": self.role,
            "questions": self.n,
            "passed": self.n_passed,
            "pass_rate": round(self.pass_rate, 4),
            "format_error_rate": round(self.format_error_rate, 4),
            "failures": self.failures(),
            "mean_turns": mean([r.n_turns for r in self.records]),
            "mean_completion_tokens": mean([r.completion_tokens for r in self.records]),
            "mean_latency_ms": mean([r.latency_ms for r in self.records]),
            "errors": len(self.errors),
            **self.extra_means(),
            **self.pass_k(),
        }

    def pass_k(self) -> dict[str, Any]:
        """Per-task sample counts (n-best) as mean pass@k and pass^k for k <= n
        (`training.eval.pass_at_k`): {"n_samples", "pass_at_k": {k: v}, "pass_hat_k": {k: v}}."""
        agg = aggregate(
            record_counts(r.extra, r.passed, f"record {r.question_id}") for r in self.records
        )
        rnd = {k: round(v, 4) for k, v in agg["pass_at_k"].items()}
        hat = {k: round(v, 4) for k, v in agg["pass_hat_k"].items()}
        return {"n_samples": agg["n"], "pass_at_k": rnd, "pass_hat_k": hat}

    def pass_k_line(self) -> str:
        """pass@k and pass^k for every k <= n on one line (the CLI prints it)."""
        p = self.pass_k()
        at = ", ".join(f"pass@{k} {v:.3f}" for k, v in p["pass_at_k"].items())
        hat = ", ".join(f"pass^{k} {v:.3f}" for k, v in p["pass_hat_k"].items())
        return f"n={p['n_samples']} samples per task: {at}; {hat}"

    def extra_means(self) -> dict[str, float]:
        """Mean of every numeric or boolean score key the family's scorer gave (dafny
        writer: exact_match, bleu, covered), as `mean_<key>`."""
        keys = sorted({k for r in self.records for k, v in r.extra.items() if _numeric(v)})
        out = {}
        for k in keys:
            vals = [float(r.extra[k]) for r in self.records if _numeric(r.extra.get(k))]
            out[f"mean_{k}"] = round(statistics.fmean(vals), 4)
        return out

    def by_template(self) -> list[tuple[str, int, int]]:
        """(template family, questions, passed), sorted by template family."""
        groups: dict[str, list[bool]] = {}
        for r in self.records:
            groups.setdefault(r.template_family, []).append(r.passed)
        return [(k, len(v), sum(v)) for k, v in sorted(groups.items())]

    def template_markdown(self) -> str:
        head = "template family" if self.family == "analysis" else "group"
        lines = [
            f"| {head} | questions | passed | pass rate |",
            "| --- | --- | --- | --- |",
        ]
        for name, n, ok in self.by_template():
            lines.append(f"| {name} | {n} | {ok} | {ok / n:.1%} |")
        return "\n".join(lines)


def _numeric(v: Any) -> bool:
    return isinstance(v, bool | int | float)


# --- which model ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelUnderTest:
    """A model as evaluation sees it: a directory to launch, or a name a server serves."""

    name: str  # the id recorded in every ModelEvalRecord
    path: Path | None = None  # a full HF model dir or a LoRA adapter dir (None: served name)
    run_dir: Path | None = None  # the training run holding it, if any

    @property
    def is_adapter(self) -> bool:
        return self.path is not None and (self.path / "adapter_config.json").is_file()


def find_run_dir(model_dir: Path) -> Path | None:
    """The training run directory holding `model_dir` (its `result.json` names it)."""
    for candidate in (model_dir, *list(model_dir.parents)[:2]):
        result = candidate / RESULT_FILE
        if result.is_file():
            return candidate
    return None


def resolve_model(model: str | Path) -> ModelUnderTest:
    """A directory (model or adapter; relative paths are tried from the cwd, then the repo)
    or, failing that, a served model name."""
    for base in (Path.cwd(), REPO_ROOT):
        path = (base / model).resolve()
        if path.is_dir():
            if not ((path / "config.json").is_file() or (path / "adapter_config.json").is_file()):
                raise ValueError(
                    f"{path}: neither a model directory (config.json) "
                    "nor a LoRA adapter (adapter_config.json)"
                )
            run_dir = find_run_dir(path)
            return ModelUnderTest(run_dir.name if run_dir else path.name, path, run_dir)
    name = str(model)
    if "/" in name or name.startswith("."):
        raise ValueError(f"{model}: no such model directory")
    return ModelUnderTest(name)


def adapter_base(adapter_dir: Path) -> Path:
    """The base model a LoRA adapter was trained on (from its adapter_config.json)."""
    cfg_path = adapter_dir / "adapter_config.json"
    try:
        base = json.loads(cfg_path.read_text())["base_model_name_or_path"]
    except (OSError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"{cfg_path}: cannot read base_model_name_or_path: {exc}") from exc
    path = Path(base) if Path(base).is_absolute() else (REPO_ROOT / base)
    if not (path / "config.json").is_file():
        raise ValueError(f"{cfg_path}: base model {base!r} is not a local model directory")
    return path


def adapter_rank(adapter_dir: Path) -> int:
    return int(json.loads((adapter_dir / "adapter_config.json").read_text()).get("r", 16))


@contextmanager
def serving(mut: ModelUnderTest, vllm_cfg: VllmConfig) -> Iterator[VllmConfig]:
    """A client config for `mut`: launch an owned server for a directory (stopped on exit),
    or use the servers of configs/vllm.yaml for a served name."""
    if mut.path is None:
        if not vllm_cfg.base_urls:
            raise ValueError(
                f"model {mut.name!r} is not a directory and configs/vllm.yaml lists no "
                "base_urls to find it on (pass a model directory instead)"
            )
        yield VllmConfig.model_validate({**vllm_cfg.model_dump(), "model": mut.name})
        return
    local = vllm_cfg.server
    extra: list[str] = []
    path = mut.path
    if mut.is_adapter:  # vLLM serves the base with the adapter under the model's name
        path = adapter_base(mut.path)
        extra += [
            "--enable-lora",
            "--lora-modules",
            f"{mut.name}={mut.path}",
            "--max-lora-rank",
            str(max(8, adapter_rank(mut.path))),
        ]
    server = server_from_config(
        local.model_copy(update={"port": free_port(local.host)}),
        f"{mut.name}-base" if mut.is_adapter else mut.name,
        model_path=path,
        extra_args=extra,
    )
    with server:
        log.info("serving %s from %s at %s", mut.name, path, server.base_url)
        data = vllm_cfg.model_dump()
        data.update(base_urls=[server.base_url], model=mut.name, launch=False)
        yield VllmConfig.model_validate(data)


# --- which questions ------------------------------------------------------------------------
def template_family(q: QuestionRecord) -> str:
    """Same rule as stg_questions.sql: template, else sorted operator families, else '(none)'."""
    if q.template:
        return q.template
    if q.op_families:
        return "+".join(sorted(q.op_families))
    return "(none)"


def split_questions(
    home: Path,
    split: str,
    *,
    question_ids: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[QuestionRecord]:
    """The split's accepted questions (every source), optionally the named ones, sorted by id."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
    root = lake.lake_root(home)
    found: list[QuestionRecord] = []
    for source in ("template", "procedural", "llm"):
        recs = lake.read_records(QUESTIONS_ASSET, QuestionRecord, root, source=source, split=split)
        found.extend(r for r in recs if r.status == "accepted")  # type: ignore[attr-defined]
    questions = sorted({q.id: q for q in found}.values(), key=lambda q: q.id)
    if question_ids is not None:
        wanted = list(dict.fromkeys(question_ids))
        by_id = {q.id: q for q in questions}
        missing = [i for i in wanted if i not in by_id]
        if missing:
            raise ValueError(
                f"question id(s) {missing} are not accepted questions of split {split!r} "
                f"under {root / QUESTIONS_ASSET}"
            )
        questions = [by_id[i] for i in wanted]
    if not questions:
        raise ValueError(
            f"split {split!r} has no accepted questions under {root / QUESTIONS_ASSET} "
            "(materialize analysis/questions first, e.g. `verilearn demo`)"
        )
    return questions[:limit] if limit is not None else questions


def student_config(settings: EvalSettings, teacher: TeacherConfig, model: str) -> TeacherConfig:
    """The teacher loop's config with the student's sampling: the same prompts and bounds the
    training episodes saw (`max_turns` is in the system prompt), greedy by default."""
    return teacher.model_copy(
        update={
            "teacher": "vllm",
            "model": model,
            "max_turns": settings.max_turns or teacher.max_turns,
            "seed": settings.seed,
            "concurrency": settings.concurrency,
            "sampling": SamplingConfig(
                temperature=settings.temperature, top_p=1.0, max_tokens=settings.max_tokens
            ),
        }
    )


def sampled_config(
    cfg: TeacherConfig, settings: EvalSettings, k: int, temperature: float
) -> TeacherConfig:
    """The k-th n-best sample's loop config: `temperature`, seed `seed + k` (as
    `eval_family.VllmCompletions.sampled`), the same prompts and bounds."""
    sampling = cfg.sampling.model_copy(update={"temperature": temperature})
    return cfg.model_copy(update={"seed": settings.seed + k, "sampling": sampling})


def to_record(
    episode: Any, question: QuestionRecord, mut: ModelUnderTest, sampling_key: str
) -> ModelEvalRecord:
    return ModelEvalRecord(
        id=ModelEvalRecord.make_id(mut.name, question.id, question.family),
        model=mut.name,
        model_path=str(mut.path) if mut.path else None,
        run_id=mut.run_dir.name if mut.run_dir else None,
        family=question.family,
        role="default",
        question_id=question.id,
        source=question.source,
        split=question.split,
        dataset=question.dataset,
        template=question.template,
        template_family=template_family(question),
        difficulty=question.difficulty,
        passed=bool(episode.verified),
        failure_class=episode.failure_class,
        format_errors=sum(m.kind == "rejected_reply" for m in episode.messages),
        n_turns=episode.n_turns,
        prompt_tokens=episode.prompt_tokens,
        completion_tokens=episode.completion_tokens,
        latency_ms=round(float(episode.duration_ms), 3),
        answer=episode.answer,
        sampling_key=sampling_key,
    )


def write_eval_records(home: Path, split: str, records: Sequence[ModelEvalRecord]) -> Path:
    """Replace this model's records for these tasks in this family and role in the split's
    partition (`ModelEvalRecord.scope`); other models', families' and roles' records stay,
    so base and trained models sit side by side and a re-run gives the same lake."""
    root = lake.lake_root(home)
    fresh = {r.scope for r in records}
    stored = lake.read_records(EVAL_ASSET, ModelEvalRecord, root, split=split)
    kept = [r for r in stored if r.scope not in fresh]  # type: ignore[attr-defined]
    rows = sorted([*kept, *records], key=lambda r: (*r.scope, r.id))  # type: ignore[attr-defined]
    return lake.write_records(EVAL_ASSET, rows, ModelEvalRecord, root, split=split)


async def run_questions(
    questions: Sequence[QuestionRecord],
    tables: dict[str, Any],
    vllm_cfg: VllmConfig,
    cfg: TeacherConfig,
    sandbox: SandboxConfig,
    mut: ModelUnderTest,
    progress: Progress | None = None,
    shots: Callable[[QuestionRecord], Sequence[QuestionRecord]] | None = None,
) -> tuple[list[ModelEvalRecord], list[str]]:
    """Every question through the student loop, shown the solved examples `shots(q)` the
    teacher's episodes show (`analysis.grpo.question_shots`; default none); a question
    whose run raised is an error (named), never a silent pass or fail."""
    records: list[ModelEvalRecord] = []
    errors: list[str] = []
    gate = asyncio.Semaphore(cfg.concurrency)
    key = cfg.sampling_key("vllm")
    done = 0
    async with VllmClient(vllm_cfg) as client, SandboxPool(sandbox) as pool:
        policy = VllmPolicy(client, cfg.sampling, cfg.seed)

        async def one(q: QuestionRecord) -> None:
            nonlocal done
            async with gate:
                try:
                    examples = shots(q) if shots is not None else ()
                    episode = await run_episode(
                        q, tables[q.table], policy, pool, cfg, examples=examples
                    )
                    records.append(to_record(episode, q, mut, key))
                except Exception as exc:  # named and counted; the caller decides
                    log.error("question %s: evaluation failed: %s", q.id, exc)
                    errors.append(f"question {q.id}: {type(exc).__name__}: {exc}")
            done += 1
            if progress is not None:
                progress(done, len(questions))

        await asyncio.gather(*(one(q) for q in questions))
    return sorted(records, key=lambda r: r.question_id), errors


def evaluate_model(
    model: str | Path,
    split: str,
    home: Path,
    *,
    limit: int | None = None,
    question_ids: Sequence[str] | None = None,
    progress: Progress | None = None,
    settings: EvalSettings | None = None,
    vllm_cfg: VllmConfig | None = None,
    teacher: TeacherConfig | None = None,
    sandbox: SandboxConfig | None = None,
    served: VllmConfig | None = None,
    family: str = ANALYSIS,
    role: str = "default",
    source: CompletionSource | None = None,
    n_best: int | None = None,
    n_best_temperature: float | None = None,
) -> EvalResult:
    """Serve `model`, run it on `split`'s accepted tasks of `family` in `role`, write one
    record per task to the lake and return the summary.

    `model` is a model directory (full or LoRA adapter; a launched server serves it) or a
    model name served by configs/vllm.yaml's base_urls. Configs default to the files under
    the config directory; `served` is a client config for a server already serving the
    model under its name (the caller owns it). Analysis runs the student loop (raises when
    any question could not be run); any other family goes through its GRPO hook
    (`eval_family.evaluate_family`; `source` replaces the served model there, for tests).
    """
    if family != ANALYSIS:
        return evaluate_family(
            model,
            split,
            home,
            family,
            role,
            limit=limit,
            task_ids=question_ids,
            progress=progress,
            settings=settings,
            vllm_cfg=vllm_cfg,
            served=served,
            source=source,
            n_best=n_best,
            n_best_temperature=n_best_temperature,
        )
    if role != "default":
        raise ValueError(f"family analysis has one role, 'default' (got {role!r})")
    if source is not None:
        raise ValueError(
            "analysis runs the multi-turn student loop: a completion source "
            "does not apply (pass family=... for a single-turn family)"
        )
    home = Path(home)
    settings = settings or EvalSettings()
    mut = resolve_model(model)
    questions = split_questions(
        home, split, question_ids=question_ids, limit=limit or settings.limit
    )
    tables = {t.id: t for t in load_table_records(home, split)}
    missing = sorted({q.table for q in questions} - set(tables))
    if missing:
        raise ValueError(
            f"split {split!r}: question table(s) {missing} are not in the tables asset "
            f"under {lake.lake_root(home) / 'tables'}"
        )
    cfg = student_config(settings, teacher or load_teacher_config(), mut.name)
    shots = question_shots(home, cfg)  # the SFT rows' examples (teacher_prompts few_shot)
    vllm_cfg = vllm_cfg or load_vllm_config()
    sandbox = sandbox or load_sandbox_config()
    n, temperature = resolve_n_best(families()[ANALYSIS], settings, n_best, n_best_temperature)
    runs: list[list[ModelEvalRecord]] = []
    with contextlib.ExitStack() as stack:
        client_cfg = served or stack.enter_context(serving(mut, vllm_cfg))
        for k in range(n):  # k = 0: the verdict (eval sampling); then the samples
            cfg_k = cfg if k == 0 else sampled_config(cfg, settings, k, temperature)
            got, errors = asyncio.run(
                run_questions(
                    questions,
                    tables,
                    client_cfg,
                    cfg_k,
                    sandbox,
                    mut,
                    progress if k == 0 else None,
                    shots,
                )
            )
            if errors:
                raise RuntimeError(
                    f"evaluation of {mut.name} on {split} (sample {k}): {len(errors)} "
                    f"question(s) could not be run: {errors[:3]}"
                )
            runs.append(got)
    records = runs[0]
    for rec in records:
        n_ok = sum(r.passed for run in runs for r in run if r.question_id == rec.question_id)
        rec.extra.update(n_best=n, n_best_passed=n_ok, pass_at_n=n_ok > 0)
        if n > 1:
            rec.extra["n_best_temperature"] = temperature
    path = write_eval_records(home, split, records)
    return EvalResult(mut.name, split, records, path, errors)


# --- the training gate, seen from evaluation ------------------------------------------------
class UngatedModel(ValueError):
    """The model's training run has no (or broken) evidence of gated training data."""


class NotABaseline(UngatedModel):
    """A model outside any training run that is neither the base model nor a listed baseline
    (a trained model copied elsewhere must not pass as "base")."""


def _baseline_dir(entry: str) -> Path | None:
    """An `eval.baselines` entry as a directory (relative: from the cwd, then the repo), or
    None when it names no directory (then it is a served model name)."""
    raw = Path(os.path.expandvars(os.path.expanduser(entry)))
    for base in (raw,) if raw.is_absolute() else (Path.cwd() / raw, REPO_ROOT / raw):
        if base.is_dir():
            return base.resolve()
    return None


def check_baseline(mut: ModelUnderTest, base_model: Path | str, baselines: Sequence[str]) -> None:
    """Allow a model without a training run only when it is the configured base model or
    listed in `eval.baselines` (a directory, or a served name); raise `NotABaseline`."""
    dirs = {d for d in (_baseline_dir(str(base_model)), *map(_baseline_dir, baselines)) if d}
    names = {b for b in baselines if _baseline_dir(b) is None}
    how = (
        "list it under eval.baselines in configs/training.yaml to evaluate it as a baseline "
        f"(the base model {base_model} is always one)"
    )
    if mut.path is not None:
        if mut.path.resolve() not in dirs:
            raise NotABaseline(
                f"{mut.path}: not in a training run directory (no {RESULT_FILE}) and not a "
                f"baseline: {how}"
            )
    elif mut.name not in names:
        raise NotABaseline(
            f"served model {mut.name!r}: no training run to check and not a baseline: {how}"
        )


def gate_evidence(
    mut: ModelUnderTest, *, base_model: Path | str, baselines: Sequence[str] = ()
) -> Any | None:
    """The run's `GateEvidence`, or None for a baseline (the base model, or a model listed in
    `eval.baselines`).

    Raises `NotABaseline` for a model outside any run that is not a baseline, and
    `UngatedModel` naming the file and field when a trained model's result.json shows no
    gated data: rows passed in by hand, another asset, nothing used, or a partition that
    is gone. A GRPO run carries the evidence of the SFT run it continued plus the task
    partitions its prompts came from (`training/grpo/trainer.py::grpo_evidence`).
    """
    if mut.run_dir is None:
        check_baseline(mut, base_model, baselines)
        return None
    from verilearn_assets.training.run_dir import RunResult  # the training side's own schema

    path = mut.run_dir / RESULT_FILE
    try:
        result = RunResult.model_validate_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise UngatedModel(f"{path}: unreadable run result: {exc}") from exc
    ev = result.evidence
    if ev is None:
        raise UngatedModel(
            f"{path}: field 'evidence' is empty: run {result.run_id} was not trained on a "
            "gated sft_dataset partition (rows passed in directly?)"
        )
    if ev.asset != "sft_dataset":
        raise UngatedModel(f"{path}: evidence.asset is {ev.asset!r}, not 'sft_dataset'")
    if ev.rows_used < 1 and ev.tasks_used < 1:  # GRPO from the base model: tasks, no rows
        raise UngatedModel(f"{path}: evidence.rows_used is {ev.rows_used}: trained on nothing")
    if ev.tasks_used and not (ev.family and ev.task_split and ev.task_sources):
        raise UngatedModel(
            f"{path}: evidence.tasks_used is {ev.tasks_used} but family/task_split/"
            "task_sources do not name the task partitions they came from"
        )
    if not Path(ev.partition_path).is_dir():
        raise UngatedModel(
            f"{path}: evidence.partition_path {ev.partition_path} does not exist: the gated "
            "data it names is gone"
        )
    return ev


# --- proof that the served weights are the trained ones ---------------------------------------
def served_logprob(client_cfg: VllmConfig, prompt: str, reply: str, n_reply_tokens: int) -> float:
    """Sum of the log-probabilities the served model gives the last `n_reply_tokens` tokens
    of `prompt + reply` (vLLM `prompt_logprobs` on /v1/completions, nothing generated)."""
    import httpx

    url = f"{client_cfg.base_urls[0]}/v1/completions"
    body = {
        "model": client_cfg.model,
        "prompt": prompt + reply,
        "max_tokens": 1,
        "temperature": 0.0,
        "prompt_logprobs": 0,
    }
    resp = httpx.post(url, json=body, timeout=client_cfg.timeouts.request_s)
    if resp.status_code != 200:
        raise RuntimeError(f"{url}: HTTP {resp.status_code}: {resp.text[:300]}")
    entries = resp.json()["choices"][0]["prompt_logprobs"]
    if n_reply_tokens >= len(entries):
        raise ValueError(f"reply of {n_reply_tokens} tokens in a prompt of {len(entries)}")
    total = 0.0
    for entry in entries[-n_reply_tokens:]:
        # with prompt_logprobs=0 each entry holds exactly the prompt's own token
        if not entry or len(entry) != 1:
            raise ValueError(f"{url}: expected one log-probability per prompt token, got {entry}")
        total += float(next(iter(entry.values()))["logprob"])
    return total
