"""configs/vllm.yaml loading: strict keys, URL normalization, the shipped file itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.llm.client import VllmClient, VllmError
from verilearn_assets.core.llm.config import VllmConfig, load_vllm_config
from verilearn_assets.core.llm.launcher import VllmServer, server_from_config


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "vllm.yaml").write_text(text)
    return tmp_path


def test_shipped_config_needs_no_model_but_knows_the_tiny_one(repo_root: Path) -> None:
    cfg = load_vllm_config(repo_root / "configs")
    assert not cfg.launch and cfg.base_urls == [] and not cfg.has_server
    server = server_from_config(cfg.server, cfg.model)
    assert server.model_path == repo_root / cfg.server.model_path
    assert server.model_name == cfg.model


def test_misspelt_key_names_file_and_field(tmp_path: Path) -> None:
    d = write(tmp_path, "model: m\nbase_urls: [http://h:1]\nmax_concurency_per_server: 3\n")
    with pytest.raises(ConfigError) as err:
        load_vllm_config(d)
    assert "vllm.yaml" in str(err.value) and "max_concurency_per_server" in str(err.value)


def test_nested_misspelt_key_is_rejected(tmp_path: Path) -> None:
    d = write(tmp_path, "model: m\nbase_urls: [http://h:1]\nretry: {max_atempts: 2}\n")
    with pytest.raises(ConfigError, match=r"retry\.max_atempts"):
        load_vllm_config(d)


def test_no_server_and_no_launch_loads_but_a_client_refuses(tmp_path: Path) -> None:
    d = write(tmp_path, "model: m\nlaunch: false\n")
    cfg = load_vllm_config(d)
    assert not cfg.has_server
    with pytest.raises(VllmError, match="no vLLM server configured"):
        VllmClient(cfg)


def test_base_urls_are_normalized_and_deduplicated() -> None:
    cfg = VllmConfig(model="m", base_urls=["http://a:1/", "http://b:2/v1"])
    assert cfg.base_urls == ["http://a:1", "http://b:2"]
    assert cfg.global_cap == 2 * cfg.max_concurrency_per_server
    with pytest.raises(ValueError, match="duplicate server"):
        VllmConfig(model="m", base_urls=["http://a:1", "http://a:1/v1"])
    with pytest.raises(ValueError, match="must start with http"):
        VllmConfig(model="m", base_urls=["a:1"])


def test_launcher_refuses_a_directory_without_a_model(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="no config.json"):
        VllmServer(tmp_path).start()


def test_launcher_names_the_missing_python(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(RuntimeError, match="make vllm-env"):
        VllmServer(tmp_path, python_exe=tmp_path / "nope" / "python").start()
