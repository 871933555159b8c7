"""One real vLLM CPU server per test session, serving the tiny random-weight model.

Registered for every test directory by `tests/conftest.py`.

Needs `.venv-vllm` (`make vllm-env`). Without it the vLLM tests skip, unless
VERILEARN_REQUIRE_VLLM=1 (as `make test` sets), in which case they fail.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from verilearn_assets.core.llm.config import LocalServerConfig, VllmConfig
from verilearn_assets.core.llm.launcher import (
    REPO_ROOT,
    VllmEnvironmentMissing,
    VllmServer,
    free_port,
    resolve_python,
)
from verilearn_assets.core.llm.launcher import (
    tiny_model_dir as tiny_model_path,  # the session fixture below has the function's name
)

MODEL_NAME = "tiny-qwen2"


def _unavailable(reason: str) -> None:
    """Fail when VERILEARN_REQUIRE_VLLM=1, else skip with the reason."""
    if os.environ.get("VERILEARN_REQUIRE_VLLM") == "1":
        pytest.fail(f"{reason} (and VERILEARN_REQUIRE_VLLM=1 requires it)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    try:
        return resolve_python()
    except VllmEnvironmentMissing as exc:
        _unavailable(str(exc))
        raise  # unreachable: _unavailable always raises


@pytest.fixture(scope="session")
def tiny_model_dir(request: pytest.FixtureRequest) -> Path:
    """`$VERILEARN_TINY_MODEL` or the `make tiny-model` directory; built here if missing
    (only then is the vLLM environment, which builds it, required)."""
    model_dir = tiny_model_path()
    if not (model_dir / "config.json").is_file():
        vllm_python: Path = request.getfixturevalue("vllm_python")
        done = subprocess.run(
            [str(vllm_python), "-m", "verilearn_assets.core.llm.tiny_model", str(model_dir)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.fail(f"building the tiny model failed:\n{done.stderr[-3000:]}")
    return model_dir


@dataclass
class RunningVllm:
    server: VllmServer
    base_url: str
    model: str
    startup_s: float

    def config(self, **overrides: Any) -> VllmConfig:
        """A client config for this server; short backoffs so retry tests stay quick."""
        data: dict[str, Any] = {
            "base_urls": [self.base_url],
            "model": self.model,
            "sampling": {"temperature": 1.0, "max_tokens": 8},
            "timeouts": {"connect_s": 2, "request_s": 60, "health_s": 2},
            "retry": {
                "max_attempts": 4,
                "initial_backoff_s": 0.05,
                "max_backoff_s": 0.5,
                "jitter_s": 0.05,
            },
        }
        for key, value in overrides.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        return VllmConfig.model_validate(data)


@pytest.fixture(scope="session")
def vllm_server(
    tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningVllm]:
    """Start the real server on a free loopback port; stop it after the session."""
    server = VllmServer(
        tiny_model_dir,
        port=free_port(),
        served_model_name=MODEL_NAME,
        max_model_len=2048,
        kv_cache_gib=1,
        extra_args=LocalServerConfig().extra_args,  # the shipped server flags
        log_path=tmp_path_factory.mktemp("vllm") / "server.log",
        startup_timeout_s=float(os.environ.get("VERILEARN_VLLM_STARTUP_TIMEOUT", "420")),
    )
    url = server.start()
    try:
        startup = server.wait_healthy()
        print(f"\nvLLM server {url} healthy after {startup:.1f}s (log {server.log_path})")
        yield RunningVllm(server=server, base_url=url, model=MODEL_NAME, startup_s=startup)
    finally:
        server.stop()
