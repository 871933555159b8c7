"""Pool behaviour on both real backends: notebook semantics, faults, labels, concurrency."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import docker
import pytest
from backends import require_backend
from sandbox_helpers import LoopThread, test_config

from verilearn_assets.core.isolation.docker import labelled
from verilearn_assets.core.sandbox.jail import LABEL
from verilearn_assets.core.sandbox.pool import SandboxError, SandboxPool


def test_cells_share_state_and_show_last_value(pool, table_parquet: str) -> None:
    async def go():
        async with pool.pool.task(table_parquet) as task:
            first = await task.run_cell("total = int(df['a'].sum())\ntotal * 2")
            second = await task.run_cell("print('seen', total)\nsubmit(total)\nsubmit([1, 2])")
            return first, second

    first, second = pool.run(go())
    assert first.status == "ok" and first.value_repr == str(sum(range(100)) * 2)
    assert second.stdout == f"seen {sum(range(100))}\n"
    assert second.submissions == [str(sum(range(100))), "[1,2]"]


def test_program_result_collects_hooks_and_answer(pool, table_csv: str) -> None:
    result = pool.program(
        [
            "g = hook(df.groupby('b')['a'].sum(), \"g = df.groupby('b')['a'].sum()\")",
            "best = hook(g.idxmax(), 'best = g.idxmax()', depends_on=['g'])\nsubmit(best)",
        ],
        table_csv,
    )
    assert result.status == "ok" and result.answer == '"x"' and result.attempts == 1
    assert [h.name for h in result.hooks] == ["g", "best"]
    assert result.hooks[1].depends_on == ["g"]
    assert "Series" in result.hooks[0].summary


FORGE_BAD_RECORDS = """
emit = hook.__self__._emit  # cell code can reach the event channel and forge records
emit({'ev': 'hook', 'hook': {'name': 'half', 'value_hash': 'ab'}})  # no code_line
hook(1, 'x = 1', name='good')
emit({'ev': 'hook', 'hook': 'not a record'})
emit({'ev': 'submit', 'value': '{not json'})
submit(3)
"""


def test_malformed_records_are_dropped_into_typed_fields(pool, table_csv: str) -> None:
    result = pool.program(FORGE_BAD_RECORDS, table_csv)
    cell = result.cells[0]
    assert cell.status == "ok" and [h.name for h in cell.hooks] == ["good"]
    assert cell.submissions == ["3"] and result.answer == "3"
    assert len(cell.malformed_hooks) == 2 and len(cell.malformed_submissions) == 1
    assert cell.malformed_hooks[0].startswith("hook 0: code_line:")  # names the field
    assert cell.malformed_hooks[1].startswith("hook 2: record:")
    assert cell.malformed_submissions[0].startswith("submission 0:")
    # the task aggregates them, and stderr still tells a human reading the trace
    assert result.malformed_hooks == cell.malformed_hooks
    assert result.malformed_submissions == cell.malformed_submissions
    for reason in cell.malformed_hooks + cell.malformed_submissions:
        assert f"[sandbox] dropped a malformed {reason}\n" in cell.stderr


def test_bad_table_is_a_clear_error(pool, tmp_path) -> None:
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="broken.parquet"):
        pool.program("1", str(bad))
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        pool.program("1", str(tmp_path / "missing.csv"))
    assert pool.program("submit(df is None)", None).answer == "true"


def test_more_tasks_than_slots_share_them_with_back_pressure(pool, table_csv: str) -> None:
    n = 6  # slots = 2

    async def go():
        t0 = time.monotonic()
        results = await asyncio.gather(
            *(
                pool.pool.run_program(f"import time\ntime.sleep(0.3)\nsubmit({i})", table_csv)
                for i in range(n)
            )
        )
        return results, time.monotonic() - t0

    results, elapsed = pool.run(go())
    assert [json.loads(r.answer) for r in results] == list(range(n))
    assert elapsed >= 0.3 * n / 2  # never more than 2 tasks at once


def test_dead_slot_is_detected_replaced_and_task_retried(pool, table_csv: str) -> None:
    # Between tasks: a slot killed from outside is replaced at its next use.
    pool.pool.kill_slot_for_test(0)
    pool.pool.kill_slot_for_test(1)
    assert pool.program("submit(1)", table_csv).answer == "1"

    # Mid-task: the slot dies under the program; it is replaced and the program re-run.
    result = pool.run(run_and_kill_busy_slot(pool.pool, table_csv, kills=1))
    assert result.status == "ok" and result.answer == '"done"' and result.attempts == 2


async def run_and_kill_busy_slot(sandbox: SandboxPool, table: str, kills: int):
    """Run a slow program and kill whichever slot runs it, `kills` times: at once, as soon
    as a slot is busy (the slot dies mid-task whether or not the program has begun), with
    the program's 4 s as the margin for a slow Docker daemon."""
    task = asyncio.create_task(
        sandbox.run_program("import time\ntime.sleep(4)\nsubmit('done')", table)
    )
    for _ in range(kills):
        deadline = time.monotonic() + 60
        while not sandbox.busy_slots():
            assert time.monotonic() < deadline, "program never started"
            await asyncio.sleep(0.02)
        busy = sandbox.busy_slots()
        for index in busy:
            await asyncio.to_thread(sandbox.kill_slot_for_test, index)
        while set(busy) & set(sandbox.busy_slots()):  # wait for the failed attempt to end
            await asyncio.sleep(0.02)
    return await task


def test_clear_error_when_the_retry_dies_too(pool, table_csv: str) -> None:
    with pytest.raises(SandboxError, match="died on both attempts"):
        pool.run(run_and_kill_busy_slot(pool.pool, table_csv, kills=2))
    assert pool.program("submit('healthy')", table_csv).answer == '"healthy"'


def test_tasks_are_logged_as_jsonl(tmp_path, table_csv: str) -> None:
    require_backend("bwrap")
    log_path = tmp_path / "logs" / "sandbox.jsonl"
    config = test_config("bwrap", slots=1, log_path=str(log_path))
    from verilearn_assets.core.sandbox.pool import run_programs_sync

    results = run_programs_sync(config, [("submit(3)", table_csv), ("1/0", None)])
    assert [r.status for r in results] == ["ok", "error"]
    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert sorted(line["status"] for line in lines) == ["error", "ok"]
    assert {line["backend"] for line in lines} == {"bwrap"}


def test_docker_cleanup_touches_only_its_own_pool(caplog) -> None:
    require_backend("docker")
    runner = LoopThread()
    client = docker.from_env()
    mine = SandboxPool(test_config("docker", slots=2), pool_id="vltest-mine")
    other = SandboxPool(test_config("docker", slots=1), pool_id="vltest-other")
    try:
        runner.run(mine.start())
        runner.run(other.start())
        assert mine.backend == "docker"
        # One container's client points at a dead endpoint: stopping it must fail, be
        # logged with its id, and not stop the rest.
        broken = mine.slot_handles()[0]
        broken.container.client = docker.DockerClient(
            base_url="unix:///nonexistent.sock", version="1.41"
        )
        with caplog.at_level(logging.ERROR, logger="verilearn.sandbox"):
            runner.run(mine.stop())
        assert broken.name in caplog.text and "failed to stop" in caplog.text
        left = labelled(client, f"{LABEL}=vltest-mine")
        assert left == []  # the label sweep removed the one that failed
        theirs = client.containers.list(
            ignore_removed=True, filters={"label": f"{LABEL}=vltest-other"}
        )
        assert len(theirs) == 1 and theirs[0].status == "running"
        assert runner.run(other.run_program("submit(2)", None)).answer == "2"
    finally:
        runner.run(other.stop())
        runner.close()
    assert labelled(client, f"{LABEL}=vltest-other") == []


def test_zygote_is_pid_one_and_runs_host_libraries(pool) -> None:
    import pandas
    import scipy
    import sklearn
    import statsmodels

    result = pool.program(
        "import pandas, scipy, statsmodels, sklearn, os\n"
        "submit([pandas.__version__, scipy.__version__, statsmodels.__version__, "
        "sklearn.__version__, os.getppid()])",
        None,
        60,
    )
    assert json.loads(result.answer) == [
        pandas.__version__,
        scipy.__version__,
        statsmodels.__version__,
        sklearn.__version__,
        1,
    ]
