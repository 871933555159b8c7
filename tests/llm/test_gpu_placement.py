"""GPU placement of the servers we start: vllm.yaml `server:` and vllm_actors.yaml carry
tensor parallelism, quantization, GPU memory share and GPU ids into the vLLM argv and the
server's CUDA_VISIBLE_DEVICES; on this CPU the argv stays as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.llm.config import LocalServerConfig, load_vllm_config
from verilearn_assets.core.llm.launcher import VllmServer, actor_server, server_from_config
from verilearn_assets.refactor.rollout.teachers import load_actors

GPU_FLAGS = ("--tensor-parallel-size", "--quantization", "--gpu-memory-utilization")


def _argv(server: VllmServer) -> list[str]:
    server.port = server.port or 1  # start() picks one; the argv needs a number
    return server.command(Path("python"))


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_cpu_defaults_leave_the_argv_and_environment_alone(repo_root: Path) -> None:
    cfg = load_vllm_config(repo_root / "configs")
    server = server_from_config(cfg.server, cfg.model)
    argv = _argv(server)
    assert not any(f in argv for f in GPU_FLAGS)
    assert _flag(argv, "--distributed-executor-backend") == "uni"
    visible = server._environment().get("CUDA_VISIBLE_DEVICES")
    assert visible == os.environ.get("CUDA_VISIBLE_DEVICES")  # inherited, not set


def test_server_config_reaches_the_argv_and_the_visible_gpus(tmp_path: Path) -> None:
    (tmp_path / "vllm.yaml").write_text(
        "model: big\nserver:\n  dtype: bfloat16\n  tensor_parallel_size: 2\n"
        "  quantization: awq\n  gpu_memory_utilization: 0.85\n  device_ids: [2, 3]\n"
    )
    cfg = load_vllm_config(tmp_path)
    server = server_from_config(cfg.server, cfg.model, extra_args=["--enable-lora"])
    argv = _argv(server)
    assert _flag(argv, "--tensor-parallel-size") == "2"
    assert _flag(argv, "--quantization") == "awq"
    assert _flag(argv, "--gpu-memory-utilization") == "0.85"
    assert _flag(argv, "--dtype") == "bfloat16"
    # one worker per GPU: the single-process "uni" executor is left out
    assert "--distributed-executor-backend" not in argv
    assert argv[-3:] == ["--max-num-batched-tokens", "16384", "--enable-lora"]
    assert server._environment()["CUDA_VISIBLE_DEVICES"] == "2,3"


def test_every_shipped_actor_starts_as_its_config_says(repo_root: Path) -> None:
    local = load_vllm_config(repo_root / "configs").server
    actors = load_actors(repo_root / "configs").actors
    assert any(a.tensor_parallel_size > 1 for a in actors) and any(a.quantization for a in actors)
    for actor in actors:
        server = actor_server(actor, local, repo_root / local.model_path)
        argv = _argv(server)
        assert server.model_name == actor.model
        assert _flag(argv, "--port") == str(int(actor.base_urls[0].rsplit(":", 1)[1]))
        tp = _flag(argv, "--tensor-parallel-size")
        assert int(tp or 1) == actor.tensor_parallel_size, actor.name
        assert _flag(argv, "--quantization") == actor.quantization, actor.name
        gmu = _flag(argv, "--gpu-memory-utilization")
        assert (float(gmu) if gmu else None) == actor.gpu_memory_utilization, actor.name
        visible = server._environment().get("CUDA_VISIBLE_DEVICES")
        if actor.device_ids:
            assert visible == ",".join(map(str, actor.device_ids)), actor.name


def test_too_few_gpus_for_the_tensor_parallel_size_is_refused(tmp_path: Path) -> None:
    (tmp_path / "vllm.yaml").write_text(
        "model: big\nserver:\n  tensor_parallel_size: 2\n  device_ids: [0]\n"
    )
    with pytest.raises(ConfigError, match="tensor_parallel_size 2 needs as many GPUs"):
        load_vllm_config(tmp_path)
    with pytest.raises(ValueError, match="distinct and non-negative"):
        LocalServerConfig(device_ids=[1, 1])
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        LocalServerConfig(gpu_memory_utilization=1.5)
