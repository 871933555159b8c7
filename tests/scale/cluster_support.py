"""A real local cluster for the scale tests: Redis, Postgres and Celery workers on loopback.

Started through `make cluster-up` (the same target a developer runs) on free ports, in a
throwaway home with a narrowed catalog, and stopped through `make cluster-down`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import yaml
from dagster import DagsterEventType, DagsterInstance, materialize

from verilearn_assets.core import lake

REPO = Path(__file__).resolve().parents[2]
# One small bundled table per split (the catalog assigns one dataset to each split here:
# stackloss → train, heart → dev, iris → test); each gets template and procedural questions,
# so every template/procedural partition passes its floors.
DATASETS = ("stackloss", "heart", "iris")
PARTITIONS = ("template|dev", "procedural|test")
QUESTIONS, EPISODES = "analysis/questions", "analysis/episodes"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def narrowed_configs(conf: Path) -> Path:
    """The shipped configs with a 3-table catalog, bwrap jails and a short program search."""
    shutil.copytree(REPO / "configs", conf)

    def edit(name: str, change) -> None:
        path = conf / name
        doc = yaml.safe_load(path.read_text())
        change(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))

    def catalog(doc: dict) -> None:
        doc["datasets"] = [d for d in doc["datasets"] if d["name"] in DATASETS]
        doc["splits"] = {"train": 0.34, "dev": 0.33, "test": 0.33}

    edit("datasets.yaml", catalog)
    edit("sandbox.yaml", lambda d: d.update(backend="bwrap", slots=2))
    edit("questions.yaml", lambda d: d["procedural"].update(max_programs=6))
    # The floors judge a real catalog; three small tables are about equality, not volume.
    edit("questions.yaml", lambda d: [_small_floors(f) for f in d["floors"].values()])
    return conf


@dataclass
class Cluster:
    base: Path
    home: Path
    conf: Path
    env: dict[str, str]
    workers: int

    @property
    def cluster_dir(self) -> Path:
        return self.home / "cluster"

    @property
    def logs(self) -> Path:
        return self.home / "logs" / "cluster"

    def make(self, target: str) -> str:
        proc = subprocess.run(
            ["make", "-s", target],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"make {target} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc.stdout

    def worker_pid(self, index: int) -> int:
        return int((self.cluster_dir / "celery" / f"worker{index}.pid").read_text())


@contextmanager
def running_cluster(workers: int = 2, base_mode: int = 0o755) -> Iterator[Cluster]:
    """A cluster in a fresh home under a directory of `base_mode`: world-traversable by
    default; 0o700 is a clone under /root, which Postgres (run as the `postgres` user when
    the tests run as root) cannot enter. Stopped and cleaned (`make cluster-clean`) after."""
    base = Path(tempfile.mkdtemp(prefix="verilearn-scale-", dir="/tmp"))
    base.chmod(base_mode)
    home = base / "home"
    home.mkdir(mode=0o755)
    conf = narrowed_configs(base / "conf")
    env = dict(os.environ)
    env.update(
        VERILEARN_HOME=str(home),
        DAGSTER_HOME=str(home / "dagster"),
        VERILEARN_CONFIG_DIR=str(conf),
        VERILEARN_BROKER_URL=f"redis://127.0.0.1:{(redis := free_port())}/0",
        VERILEARN_BACKEND_URL=f"redis://127.0.0.1:{redis}/1",
        VERILEARN_POSTGRES_URL=f"postgresql://verilearn@127.0.0.1:{free_port()}/verilearn",
        VERILEARN_CELERY_WORKERS=str(workers),
        VERILEARN_EXECUTOR="celery",
    )
    cluster = Cluster(base, home, conf, env, workers)
    try:
        cluster.make("cluster-up")
        yield cluster
    finally:
        try:
            cluster.make("cluster-clean")
        finally:
            shutil.rmtree(base, ignore_errors=True)


def children(pid: int) -> list[int]:
    """Direct children of `pid` (Celery's pool processes under a worker's main process)."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def wait_for(predicate, timeout_s: float, what: str, every_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}")


def launch_run(cluster: Cluster, job: str, partition: str, log: Path) -> subprocess.Popen:
    """One distributed run in its own process (the CLI entry point): Dagster's log handlers
    are per process, so concurrent runs are concurrent processes, never threads."""
    command = [sys.executable, "-m", "verilearn_assets.scale.celery", job, partition]
    with open(log, "w") as out:
        return subprocess.Popen(
            command, cwd=REPO, env=cluster.env, stdout=out, stderr=subprocess.STDOUT
        )


def _small_floors(floors: dict) -> None:
    """Keep one accepted question as the floor; the per-template, per-family and
    per-dataset floors are set for the whole catalog, not for three small tables."""
    floors.update(total=1)
    for key in ("per_template", "per_operator_family", "per_template_family", "per_dataset"):
        floors.pop(key, None)


_INGESTED: set[Path] = set()


def ingest(home: Path) -> None:
    """Typed tables of every catalog dataset into `home`'s lake (in process: the point here
    is the analysis job); once per home and session, but `VERILEARN_HOME` is set each call."""
    from verilearn_assets.core.ingest.catalog import load_datasets_config
    from verilearn_assets.definitions import RESOURCES
    from verilearn_assets.ingest.assets import INGEST_ASSETS

    os.environ["VERILEARN_HOME"] = str(home)
    if home in _INGESTED:
        return
    # this test's catalog, not the partitions fixed when another test first loaded the
    # code location with the shipped catalog
    for key in [e.name for e in load_datasets_config().enabled()]:
        result = materialize(INGEST_ASSETS, partition_key=key, resources=RESOURCES)
        assert result.success, key
    _INGESTED.add(home)


def frame(home: Path, asset: str, partition: str) -> pl.DataFrame:
    source, split = partition.split("|")
    root = lake.partition_dir(asset, lake.lake_root(home), source=source, split=split)
    parts = sorted(root.glob("*.parquet"))
    assert parts, f"no {asset} files for {partition} under {home}"
    return pl.concat([pl.read_parquet(p) for p in parts], how="diagonal_relaxed")


def questions_view(home: Path, partition: str) -> list[tuple]:
    df = frame(home, QUESTIONS, partition).sort("id")
    return df.select("id", "status", "answer", "answer_hashes").rows()


def episodes_view(home: Path, partition: str) -> list[tuple]:
    df = frame(home, EPISODES, partition).sort("id")
    return df.select("id", "question_id", "verified", "answer").rows()


def stray_files(home: Path) -> list[Path]:
    """Anything in the lake that is not a finished Parquet part or a partition's lock file
    (temporary files of a write)."""
    return [
        p
        for p in lake.lake_root(home).rglob("*")
        if p.is_file() and p.suffix != ".parquet" and p.name != lake.LOCK_NAME
    ]


def running_run(instance: DagsterInstance, partition: str) -> str | None:
    for run in instance.get_runs(limit=10):
        if run.tags.get("dagster/partition") == partition and not run.is_finished:
            return run.run_id
    return None


def celery_workers(instance: DagsterInstance, run_id: str, step: str | None = None) -> list[str]:
    """The Celery workers that took a step of the run (in order), from the engine events."""
    out = []
    for rec in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        md = rec.dagster_event.engine_event_data.metadata or {}
        if "Celery worker" in md and (step is None or rec.dagster_event.step_key == step):
            out.append(md["Celery worker"].value)
    return out


def submitted_queues(instance: DagsterInstance, run_id: str, step: str) -> list[str]:
    """The queues the orchestrator submitted `step` to, once per submission (a Dagster
    retry submits again; a broker re-delivery of the same task does not)."""
    prefix = f'Submitting celery task for step "{step}" to queue "'
    out = []
    for rec in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        message = rec.dagster_event.message or ""
        if message.startswith(prefix):
            out.append(message.removeprefix(prefix).split('"')[0])
    return out


def run_story(cluster: Cluster, instance: DagsterInstance, run_id: str, lines: int = 40) -> str:
    """What a failed assertion should show: the run's step events (with the Celery worker
    that took each step) and the tail of every worker's log."""
    out = [f"run {run_id} step events:"]
    for rec in instance.all_logs(run_id):
        ev = rec.dagster_event
        if ev is None or ev.step_key is None:
            continue
        worker = ""
        if ev.event_type == DagsterEventType.ENGINE_EVENT:
            md = ev.engine_event_data.metadata or {}
            worker = md["Celery worker"].value if "Celery worker" in md else ""
        out.append(f"  {rec.timestamp:.1f} {ev.event_type_value} {ev.step_key} {worker}".rstrip())
    for log in sorted(cluster.logs.glob("worker*.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        out += [f"--- {log.name} (last {lines} lines)", *tail]
    return "\n".join(out)
