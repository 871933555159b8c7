"""The Dafny family's blocking gate rules: pure `RuleContext -> RuleOutcome` functions.

Re-verification runs the real verifier (one process, no cache) on a seeded sample, so the
gate catches a corpus, a cache or a toolchain that drifted since the tasks were built.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from verilearn_assets.core.contract import RuleContext, RuleOutcome
from verilearn_assets.core.records import SOURCES, SPLITS
from verilearn_assets.dafny.config import cache_dir, load_dafny_config
from verilearn_assets.dafny.records import DafnyTask, DafnyTrajectory
from verilearn_assets.dafny.rewards import PARTIAL_CAP
from verilearn_assets.dafny.verify.anticheat import forbidden_constructs
from verilearn_assets.dafny.verify.cache import VerdictCache
from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig


def _accepted(ctx: RuleContext) -> list[DafnyTask]:
    return [t for t in ctx.tasks() if isinstance(t, DafnyTask) and t.status == "accepted"]


def _sample(tasks: Sequence[DafnyTask], n: int, ctx: RuleContext, seed: int) -> list[DafnyTask]:
    rng = random.Random(f"{seed}:{ctx.source}:{ctx.split}")
    ordered = sorted(tasks, key=lambda t: t.id)
    return rng.sample(ordered, min(n, len(ordered)))


def _fresh_verifier() -> DafnyVerifier:
    cfg = load_dafny_config().verifier
    return DafnyVerifier(VerifierConfig(**{**cfg.model_dump(), "processes": 1, "cache": False}))


def gold_reverifies(ctx: RuleContext) -> RuleOutcome:
    gate = load_dafny_config().gate
    sample = _sample(_accepted(ctx), gate.reverify, ctx, gate.seed)
    failures = []
    if sample:
        with _fresh_verifier() as v:
            for task, r in zip(
                sample, v.verify_many([t.gold_program for t in sample]), strict=True
            ):
                if r.status != "verified":
                    failures.append(f"task {task.id} ({task.name}): gold program is {r.status}")
    return RuleOutcome(rule="dafny_gold_reverifies", checked=len(sample), failures=failures)


def one_split(ctx: RuleContext) -> RuleOutcome:
    """No program (and so no accepted task) in two splits, across every source. Rejected
    records never train, so a proposal the model repeats in two splits and that failed
    both times is no leak."""
    here = {t.program: t for t in _accepted(ctx)}
    failures = []
    for split in SPLITS:
        if split == ctx.split:
            continue
        for source in SOURCES:
            for other in ctx.family.read_tasks(ctx.home, source, split):
                assert isinstance(other, DafnyTask)
                if other.status == "accepted" and other.program in here:
                    failures.append(
                        f"program {other.program!r}: task {here[other.program].id} in "
                        f"{ctx.split} and task {other.id} in {split} ({source})"
                    )
                    here.pop(other.program)
    return RuleOutcome(rule="dafny_one_split", checked=len(here) + len(failures), failures=failures)


# In a gold program's header (which no candidate may change) an attribute such as
# `{:opaque}` is the program's own; these classes taint a proof wherever they appear.
_NEVER_IN_GOLD = {"assume", "axiom", "verify", "extern", "bodiless_loop", "bodiless_forall"}


def no_cheat_in_targets(ctx: RuleContext) -> RuleOutcome:
    """No accepted target holds anything the anti-cheat screen refuses, and no gold program
    rests on an assumption (`assume`, an axiom, an unverified or external declaration, a
    bodiless loop or forall)."""
    tasks = _accepted(ctx)
    failures = []
    for task in tasks:
        gold = [f for f in forbidden_constructs(task.gold_program) if f.cheat in _NEVER_IN_GOLD]
        found = forbidden_constructs(task.target) + gold
        if found:
            names = sorted({f.cheat for f in found})
            failures.append(f"task {task.id} ({task.name}): {', '.join(names)} in the target")
    return RuleOutcome(rule="dafny_no_cheat_in_targets", checked=len(tasks), failures=failures)


def cache_agrees(ctx: RuleContext) -> RuleOutcome:
    """Cached verdicts of a sample of gold programs equal a fresh verification."""
    gate = load_dafny_config().gate
    cache = VerdictCache(cache_dir(ctx.home))
    failures = []
    checked = 0
    sample = _sample(_accepted(ctx), gate.cache_agreement, ctx, gate.seed + 1)
    if sample:
        with _fresh_verifier() as v:
            hits = [(t, cache.get(v.key(t.gold_program))) for t in sample]
            hits = [(t, h) for t, h in hits if h is not None]
            fresh = v.verify_many([t.gold_program for t, _ in hits], use_cache=False)
            for (task, hit), now in zip(hits, fresh, strict=True):
                checked += 1
                if (hit.status, hit.error_lines()) != (now.status, now.error_lines()):
                    failures.append(
                        f"task {task.id} ({task.name}): cached {hit.status} "
                        f"{hit.error_lines()}, fresh {now.status} {now.error_lines()}"
                    )
    return RuleOutcome(
        rule="dafny_cache_agrees",
        checked=checked,
        failures=failures,
        stats={"sampled": len(sample)},
    )


def trajectories_consistent(ctx: RuleContext) -> RuleOutcome:
    """Verified flags, rewards and task links agree with each other."""
    tasks = {t.id: t for t in ctx.tasks()}
    trajs = [t for t in ctx.rollouts() if isinstance(t, DafnyTrajectory)]
    failures = []
    for t in trajs:
        task = tasks.get(t.task_id)
        if task is None or getattr(task, "status", None) != "accepted":
            failures.append(f"trajectory {t.id}: task {t.task_id} is not an accepted task here")
        if t.verified != (t.status == "verified"):
            failures.append(f"trajectory {t.id}: verified={t.verified} but status {t.status}")
        if t.verified and t.reward != 1.0:
            failures.append(f"trajectory {t.id}: verified with reward {t.reward}")
        if not t.verified and not (0.0 <= t.partial_reward <= PARTIAL_CAP):
            failures.append(f"trajectory {t.id}: partial reward {t.partial_reward} over the cap")
    return RuleOutcome(rule="dafny_trajectories_consistent", checked=len(trajs), failures=failures)
