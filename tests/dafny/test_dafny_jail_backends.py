"""The real verifier on each jail backend (bwrap, Docker): the same verdicts, cheats refused
through the teacher cascade as on the default jail, and the jail's limits on the server
itself. (What a program could reach or exhaust in that jail: tests/isolation.)"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import dafny_programs as P
import pytest
from backends import require_backend
from redteam_cases import BODY_CHEATS, VERIFIER_CHEATS

from verilearn_assets.core.isolation.spec import SANDBOX_UID
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rollout.cascade import cascade_sample
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.jail import LABEL, JailLimits
from verilearn_assets.dafny.verify.toolchain import detect
from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig

LIMITS = JailLimits(memory_mb=1024, pids=200, cpu_s=900)  # not the defaults: seen as set
ASSUME_FALSE = P.VERIFIED.replace("if a > b { m := a; } else { m := b; }", "assume false;")


@pytest.fixture(scope="module", params=["bwrap", "docker"])
def jailed(request: pytest.FixtureRequest) -> Iterator[DafnyVerifier]:
    require_backend(request.param)
    config = VerifierConfig(
        jail=request.param, processes=1, vc_time_limit_s=10, cache=False, limits=LIMITS
    )
    with DafnyVerifier(config) as verifier:
        assert verifier.jail == request.param
        yield verifier


def test_the_same_verdicts_in_server_and_cli_mode(jailed: DafnyVerifier) -> None:
    cases = [
        (P.VERIFIED, "verified"),
        (P.VERIFICATION_ERROR, "verification_error"),
        (P.PARSE_ERROR, "parse_error"),
        (P.RESOLUTION_ERROR, "resolution_error"),  # the server's answer + a parse-only CLI run
        (ASSUME_FALSE, "verification_error"),  # /noCheating:1 reaches the jailed verifier
    ]
    for mode in ("server", "cli"):
        results = jailed.verify_many([p for p, _ in cases], mode=mode, use_cache=False)
        got = [(r.mode, r.status) for r in results]
        assert got == [(mode, s) for _, s in cases], [r.output[-300:] for r in results]
        assert all(r.verifier["jail"] == jailed.jail for r in results)


@pytest.fixture(scope="module")
def tasks(jailed: DafnyVerifier) -> dict[str, DafnyTask]:
    ex = [e for e in load_bundled() if e.name == "multiply.Multiply"]
    out = template_tasks(ex, split_examples(ex), jailed)
    assert [t.status for t in out] == ["accepted", "accepted"], [t.rejection_reason for t in out]
    return {t.role: t for t in out}


class Says:
    """The scripted writer: one body; the annotator gives back the body it is shown."""

    name = "jail-backends"

    def __init__(self, body: str) -> None:
        self.body = body

    def write(self, task: DafnyTask) -> str:
        return prompts.fenced(self.body)

    def annotate(self, task: DafnyTask, body: str) -> str:
        return prompts.fenced(body)


CHEATS = [c for c in BODY_CHEATS if c.name in ("while_true", "while_true_lines", "assume_false")]


@pytest.fixture(scope="module")
def honest_wrong_reward(jailed: DafnyVerifier, tasks: dict[str, DafnyTask]) -> float:
    """The gold body verifies; the gold body one step off is a credited failure."""
    task = tasks["writer"]
    gold = cascade_sample(task, Says(task.annotated_body), jailed)
    assert gold.status == "verified" and gold.reward == 1.0, gold.stages[-1]
    off = task.annotated_body.replace("p := p + a;", "p := p + a + 1;")
    wrong = cascade_sample(task, Says(off), jailed)
    assert wrong.status == "verification_error", wrong.status
    return wrong.reward


@pytest.mark.parametrize("cheat", CHEATS + VERIFIER_CHEATS, ids=lambda c: c.name)
def test_cheats_score_no_more_than_an_honest_wrong_answer(
    jailed: DafnyVerifier, tasks: dict[str, DafnyTask], honest_wrong_reward: float, cheat
) -> None:
    task = tasks["writer"]
    result = cascade_sample(task, Says(cheat.build(task.annotated_body, task.body)), jailed)
    assert result.status != "verified", (cheat.name, result.stages[-1])
    assert result.reward <= honest_wrong_reward, (cheat.name, result.status, result.reward)


def test_the_server_runs_within_the_limits(jailed: DafnyVerifier) -> None:
    """The configured limits bound the server's jail (its cgroup under bwrap, the
    container under Docker), which sees no network and keeps no capability."""
    jailed.verify(P.VERIFIED, use_cache=False)
    process = jailed.server_pool().all[0].process
    if jailed.jail == "docker":
        process.container.reload()  # type: ignore[attr-defined]
        host = process.container.attrs["HostConfig"]  # type: ignore[attr-defined]
        assert host["Memory"] == LIMITS.memory_mb << 20 and host["PidsLimit"] == LIMITS.pids
        cpu = {u["Name"]: u["Hard"] for u in host["Ulimits"]}["cpu"]
        assert cpu == LIMITS.cpu_s
        assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
        assert host["CapDrop"] == ["ALL"] and process.container.labels[LABEL] == "process"  # type: ignore[attr-defined]
        # not root's uid when the caller is root: the sandbox's, as every other jail
        user = process.container.attrs["Config"]["User"]  # type: ignore[attr-defined]
        assert user == f"{SANDBOX_UID}:{SANDBOX_UID}"
        return
    paths = {p.parent.name: p for p in process.cgroup.paths}  # type: ignore[attr-defined]
    if not paths:
        pytest.skip("no cgroup here (not root): the rlimits alone bound the jail")
    memory = paths.get("memory") or next(iter(paths.values()))
    limit_file = "memory.limit_in_bytes" if "memory" in paths else "memory.max"
    assert int((memory / limit_file).read_text()) == LIMITS.memory_mb << 20
    pids = paths.get("pids") or memory
    assert (pids / "pids.max").read_text().strip() == str(LIMITS.pids)
    limits = open(f"/proc/{process.pid}/limits").read()  # type: ignore[attr-defined]
    (cpu,) = [line.split()[3:5] for line in limits.splitlines() if line.startswith("Max cpu")]
    assert cpu == [str(LIMITS.cpu_s)] * 2, limits


def test_closing_the_verifier_leaves_no_container() -> None:
    """Every container the Docker jail started (servers and CLI runs) is gone at close."""
    require_backend("docker")
    from verilearn_assets.core.isolation.docker import docker_client, labelled, owner_label

    client = docker_client()
    mine = f"{owner_label(LABEL)}={os.uname().nodename}:{os.getpid()}"
    try:
        before = {c.id for c in labelled(client, mine)}  # other tests'
        config = VerifierConfig(jail="docker", processes=1, cache=False, mode="cli")
        with DafnyVerifier(config) as verifier:
            assert verifier.verify(P.VERIFIED).status == "verified"
            server = verifier.verify(P.VERIFIED, mode="server", use_cache=False)
            assert server.status == "verified"
            during = {c.id for c in labelled(client, mine)} - before
            assert len(during) == 1  # the server's; the CLI run's is gone already
        after = {c.id for c in labelled(client, mine)}
        assert after - before == set()
    finally:
        client.close()


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_a_hung_or_dead_server_is_replaced_never_verified(backend: str) -> None:
    """Past the wall clock the jailed server is killed and replaced (`timeout`); a server
    that dies on every request is a `crash` after one retry, on either backend."""
    require_backend(backend)
    config = VerifierConfig(jail=backend, processes=1, vc_time_limit_s=60, timeout_s=5, cache=False)
    with DafnyVerifier(config) as verifier:
        assert verifier.verify(P.VERIFIED).status == "verified"
        before = verifier.server_pool().idents()
        assert verifier.verify(P.TIMEOUT).status == "timeout"
        assert verifier.server_pool().idents() != before
        assert verifier.verify(P.VERIFIED).status == "verified"  # the new server answers
    broken = dataclasses.replace(detect(), server_exe="/nonexistent/DafnyServer.exe")
    with DafnyVerifier(config, toolchain=broken) as verifier:
        result = verifier.verify(P.VERIFIED)
        assert result.status == "crash" and "after one retry" in result.output, result.output
