"""Every step of the code location goes to the Celery queue its needs name, and no other.

Walks `verilearn_assets.definitions` (every asset and asset-check step of every job, and
every asset and check definition besides) and derives what each step needs from what it
really uses, not from its tags: the resources it requires, the gate rule it evaluates, and
the few steps that open a jail or a vLLM server inside themselves (listed here). A worker
without Docker listens on `default` only, so a sandbox step tagged `default` (or untagged)
would land on it. No cluster needed.
"""

from __future__ import annotations

from dagster import AssetCheckResult, AssetKey, asset_check

from resources.container_pool import ContainerPoolResource
from verilearn_assets.core.deploy import QUEUE_TAG, load_deploy_config
from verilearn_assets.definitions import defs
from verilearn_assets.gate.adapter import check_key
from verilearn_assets.gate.registry import registered_rules

# Resources whose steps run a sandbox: the container pool and the jailed DafnyServer pool.
# `vllm` (VllmResource) is an HTTP client of the servers in configs/vllm.yaml: any worker
# can reach them, so it implies no queue (docs/scale.md, "Queues").
SANDBOX_RESOURCES = frozenset({"container_pool", "dafny"})
# Steps whose jail or vLLM server is opened inside the step, with no resource to show it.
INTERNAL = {
    "refactor__tasks": {"sandbox"},  # ast-grep validates every rule in a jail
    "refactor__trajectories": {"sandbox"},  # actions applied in a jailed workspace
    "refactor__trajectories_refactor_steps_reproduce": {"sandbox"},  # re-applied in a jail
    "dafny__tasks_dafny_gold_reverifies": {"sandbox"},  # a fresh jailed verifier
    "dafny__tasks_dafny_cache_agrees": {"sandbox"},
    "grpo_model": {"sandbox"},  # rewards: the family's verifier (sandbox / Dafny / ast-grep)
    "model_eval": {"sandbox", "vllm"},  # launches the model under test; student loop in a slot
}


def all_steps() -> dict[str, object]:
    """Step name -> op/node definition, for every node of every job and every asset and
    check definition (one that no job selects is still a step of the implicit job)."""
    steps: dict[str, object] = {}
    for job in defs.get_repository_def().get_all_jobs():
        for node in job.graph.node_dict.values():
            steps[node.name] = node.definition
            assert node.tags.get(QUEUE_TAG) == node.definition.tags.get(QUEUE_TAG), node.name
    for d in [*defs.assets, *defs.asset_checks]:
        if getattr(d, "node_def", None) is not None:
            steps.setdefault(d.node_def.name, d.node_def)
    return steps


def rule_needs() -> dict[str, set[str]]:
    """Check step name -> the sandbox need its gate rule declares (pool or own jail)."""
    by_key = {check_key(r.family, r.rule): r.rule for r in registered_rules()}
    out: dict[str, set[str]] = {}
    for checks in defs.asset_checks:
        for key in checks.check_keys:
            rule = by_key.get(key)
            if rule is not None and (rule.needs_pool or rule.needs_jail):
                out[checks.node_def.name] = {"sandbox"}
    return out


def misrouted(steps: dict[str, object]) -> list[str]:
    """'step: needs X, routed to Y' for every step not on the queue its needs name."""
    cfg = load_deploy_config().celery
    by_rule = rule_needs()
    wrong = []
    for name, node_def in sorted(steps.items()):
        needs = set(INTERNAL.get(name, set())) | by_rule.get(name, set())
        if set(node_def.required_resource_keys) & SANDBOX_RESOURCES:
            needs.add("sandbox")
        expected = (
            cfg.vllm_queue
            if "vllm" in needs
            else cfg.sandbox_queue
            if "sandbox" in needs
            else cfg.default_queue
        )
        got = node_def.tags.get(QUEUE_TAG, cfg.default_queue)
        if got != expected:
            wrong.append(f"{name}: needs {sorted(needs) or 'nothing'}, routed to {got!r}")
    return wrong


def test_every_step_is_routed_by_what_it_needs_and_nothing_else_is():
    steps = all_steps()
    assert len(steps) > 50  # the whole code location, not an empty walk
    assert set(INTERNAL) <= set(steps), sorted(set(INTERNAL) - set(steps))
    assert misrouted(steps) == []
    cfg = load_deploy_config().celery
    queues = {d.tags.get(QUEUE_TAG, cfg.default_queue) for d in steps.values()}
    assert queues == {cfg.default_queue, cfg.sandbox_queue, cfg.vllm_queue}


def test_an_untagged_pooled_check_is_caught():
    """The walk fails for the mistake it exists for: a pooled check added without a tag."""

    @asset_check(asset=AssetKey(["analysis", "questions"]), name="new_pooled_rule")
    def new_pooled_rule(container_pool: ContainerPoolResource) -> AssetCheckResult:
        return AssetCheckResult(passed=True)

    steps = {new_pooled_rule.node_def.name: new_pooled_rule.node_def}
    (line,) = misrouted(steps)
    assert "needs ['sandbox'], routed to 'default'" in line
