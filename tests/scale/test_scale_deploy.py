"""configs/deploy.yaml and what is generated from it (no cluster needed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from cluster_support import REPO

from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.deploy import (
    QUEUE_TAG,
    CeleryConfig,
    DeployError,
    cluster_env,
    instance_yaml,
    load_deploy_config,
    op_tags_for,
    redact,
    worker_config_module,
)


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "conf"
    d.mkdir()
    shutil.copy(REPO / "configs" / "deploy.yaml", d / "deploy.yaml")
    for key in ("EXECUTOR", "BROKER_URL", "BACKEND_URL", "POSTGRES_URL", "CELERY_WORKERS"):
        monkeypatch.delenv(f"VERILEARN_{key}", raising=False)
    return d


def test_shipped_config_is_the_embedded_default(conf: Path):
    cfg = load_deploy_config(conf)
    assert cfg.executor == "in_process"
    assert {cfg.celery.default_queue, cfg.celery.sandbox_queue, cfg.celery.vllm_queue} <= set(
        cfg.celery.queues
    )


def test_unknown_key_names_file_and_field(conf: Path):
    doc = yaml.safe_load((conf / "deploy.yaml").read_text())
    doc["celery"]["brokr"] = "redis://x"
    (conf / "deploy.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as info:
        load_deploy_config(conf)
    assert "deploy.yaml" in str(info.value) and "celery.brokr" in str(info.value)


def test_environment_overrides_and_bad_executor(conf: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VERILEARN_EXECUTOR", "celery")
    monkeypatch.setenv("VERILEARN_POSTGRES_URL", "postgresql://u:pw@127.0.0.1:6000/db")
    cfg = load_deploy_config(conf)
    assert cfg.executor == "celery" and cfg.postgres.url.endswith(":6000/db")
    monkeypatch.setenv("VERILEARN_EXECUTOR", "threads")
    with pytest.raises(DeployError, match="executor"):
        load_deploy_config(conf)


def test_instance_yaml_is_postgres_storage_with_the_psycopg2_driver(conf: Path, tmp_path: Path):
    cfg = load_deploy_config(conf)
    text = instance_yaml(cfg, tmp_path / "home")
    assert text.startswith("# Generated")
    doc = yaml.safe_load(text)
    url = doc["storage"]["postgres"]["postgres_url"]
    assert url.startswith("postgresql+psycopg2://") and url.endswith(
        cfg.postgres.url.split("://", 1)[1]
    )
    assert doc["local_artifact_storage"]["config"]["base_dir"] == str(
        tmp_path / "home" / "dagster" / "storage"
    )


def test_worker_module_matches_executor_settings(conf: Path):
    cfg = load_deploy_config(conf)
    ns: dict = {}
    exec(compile(worker_config_module(cfg), "dagster_celery_config.py", "exec"), ns)
    assert ns["broker_url"] == cfg.celery.broker and ns["result_backend"] == cfg.celery.backend
    assert ns["task_acks_late"] and ns["task_reject_on_worker_lost"]
    assert ns["task_default_queue"] == cfg.celery.default_queue
    assert ns["broker_transport_options"]["visibility_timeout"] == cfg.celery.visibility_timeout_s


def test_queue_tags_route_sandbox_and_vllm_steps():
    cfg = CeleryConfig(
        queues=["cpu", "docker", "gpu"],
        default_queue="cpu",
        sandbox_queue="docker",
        vllm_queue="gpu",
    )
    assert op_tags_for(["sandbox"], cfg) == {QUEUE_TAG: "docker"}
    assert op_tags_for(["sandbox", "vllm"], cfg) == {QUEUE_TAG: "gpu"}
    assert op_tags_for([], cfg) == {QUEUE_TAG: "cpu"}
    with pytest.raises(ValueError, match="container_pool"):
        op_tags_for(["container_pool"], cfg)  # resource keys are not needs


def test_a_routed_queue_no_worker_serves_is_refused(conf: Path):
    doc = yaml.safe_load((conf / "deploy.yaml").read_text())
    doc["celery"]["queues"] = ["default", "sandbox"]
    (conf / "deploy.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="vllm_queue 'vllm' is not in celery.queues"):
        load_deploy_config(conf)


def test_cluster_env_reads_ports_from_urls_and_refuses_remote_hosts(conf: Path, monkeypatch):
    monkeypatch.setenv("VERILEARN_BROKER_URL", "redis://127.0.0.1:7001/0")
    monkeypatch.setenv("VERILEARN_BACKEND_URL", "redis://127.0.0.1:7001/1")
    env = cluster_env(load_deploy_config(conf), Path("/h"))
    assert env["REDIS_PORT"] == "7001" and env["CLUSTER_DIR"] == "/h/cluster"
    monkeypatch.setenv("VERILEARN_POSTGRES_URL", "postgresql://u@db.example:5432/x")
    with pytest.raises(DeployError, match="loopback"):
        cluster_env(load_deploy_config(conf), Path("/h"))


def test_redact_hides_the_password_only():
    assert redact("postgresql://u:s3cret@127.0.0.1:5/db") == "postgresql://u:***@127.0.0.1:5/db"
    assert redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
