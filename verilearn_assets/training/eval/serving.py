"""The model under test: which model a name or directory is, and serving it on vLLM.

A model directory (a full HF model or a LoRA adapter) is launched on a vLLM server owned by
the evaluation; a name is looked up on the servers of configs/vllm.yaml. `served_logprob`
proves the served weights are the trained ones.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from verilearn_assets.core.llm.config import VllmConfig
from verilearn_assets.core.llm.launcher import REPO_ROOT, free_port, server_from_config

log = logging.getLogger(__name__)

RESULT_FILE = "result.json"  # written by every training run beside its model dir


@dataclass(frozen=True)
class ModelUnderTest:
    """A model as evaluation sees it: a directory to launch, or a name a server serves."""

    name: str  # the id recorded in every ModelEvalRecord
    path: Path | None = None  # a full HF model dir or a LoRA adapter dir (None: served name)
    run_dir: Path | None = None  # the training run holding it, if any

    @property
    def is_adapter(self) -> bool:
        return self.path is not None and (self.path / "adapter_config.json").is_file()


def find_run_dir(model_dir: Path) -> Path | None:
    """The training run directory holding `model_dir` (its `result.json` names it)."""
    for candidate in (model_dir, *list(model_dir.parents)[:2]):
        result = candidate / RESULT_FILE
        if result.is_file():
            return candidate
    return None


def resolve_model(model: str | Path) -> ModelUnderTest:
    """A directory (model or adapter; relative paths are tried from the cwd, then the repo)
    or, failing that, a served model name."""
    for base in (Path.cwd(), REPO_ROOT):
        path = (base / model).resolve()
        if path.is_dir():
            if not ((path / "config.json").is_file() or (path / "adapter_config.json").is_file()):
                raise ValueError(
                    f"{path}: neither a model directory (config.json) "
                    "nor a LoRA adapter (adapter_config.json)"
                )
            run_dir = find_run_dir(path)
            return ModelUnderTest(run_dir.name if run_dir else path.name, path, run_dir)
    name = str(model)
    if "/" in name or name.startswith("."):
        raise ValueError(f"{model}: no such model directory")
    return ModelUnderTest(name)


def adapter_base(adapter_dir: Path) -> Path:
    """The base model a LoRA adapter was trained on (from its adapter_config.json)."""
    cfg_path = adapter_dir / "adapter_config.json"
    try:
        base = json.loads(cfg_path.read_text())["base_model_name_or_path"]
    except (OSError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"{cfg_path}: cannot read base_model_name_or_path: {exc}") from exc
    path = Path(base) if Path(base).is_absolute() else (REPO_ROOT / base)
    if not (path / "config.json").is_file():
        raise ValueError(f"{cfg_path}: base model {base!r} is not a local model directory")
    return path


def adapter_rank(adapter_dir: Path) -> int:
    return int(json.loads((adapter_dir / "adapter_config.json").read_text()).get("r", 16))


@contextmanager
def serving(mut: ModelUnderTest, vllm_cfg: VllmConfig) -> Iterator[VllmConfig]:
    """A client config for `mut`: launch an owned server for a directory (stopped on exit),
    or use the servers of configs/vllm.yaml for a served name."""
    if mut.path is None:
        if not vllm_cfg.base_urls:
            raise ValueError(
                f"model {mut.name!r} is not a directory and configs/vllm.yaml lists no "
                "base_urls to find it on (pass a model directory instead)"
            )
        yield VllmConfig.model_validate({**vllm_cfg.model_dump(), "model": mut.name})
        return
    local = vllm_cfg.server
    extra: list[str] = []
    path = mut.path
    if mut.is_adapter:  # vLLM serves the base with the adapter under the model's name
        path = adapter_base(mut.path)
        extra += [
            "--enable-lora",
            "--lora-modules",
            f"{mut.name}={mut.path}",
            "--max-lora-rank",
            str(max(8, adapter_rank(mut.path))),
        ]
    server = server_from_config(
        local.model_copy(update={"port": free_port(local.host)}),
        f"{mut.name}-base" if mut.is_adapter else mut.name,
        model_path=path,
        extra_args=extra,
    )
    with server:
        log.info("serving %s from %s at %s", mut.name, path, server.base_url)
        data = vllm_cfg.model_dump()
        data.update(base_urls=[server.base_url], model=mut.name, launch=False)
        yield VllmConfig.model_validate(data)


# --- proof that the served weights are the trained ones ---------------------------------------
def served_logprob(client_cfg: VllmConfig, prompt: str, reply: str, n_reply_tokens: int) -> float:
    """Sum of the log-probabilities the served model gives the last `n_reply_tokens` tokens
    of `prompt + reply` (vLLM `prompt_logprobs` on /v1/completions, nothing generated)."""
    import httpx

    url = f"{client_cfg.base_urls[0]}/v1/completions"
    body = {
        "model": client_cfg.model,
        "prompt": prompt + reply,
        "max_tokens": 1,
        "temperature": 0.0,
        "prompt_logprobs": 0,
    }
    resp = httpx.post(url, json=body, timeout=client_cfg.timeouts.request_s)
    if resp.status_code != 200:
        raise RuntimeError(f"{url}: HTTP {resp.status_code}: {resp.text[:300]}")
    entries = resp.json()["choices"][0]["prompt_logprobs"]
    if n_reply_tokens >= len(entries):
        raise ValueError(f"reply of {n_reply_tokens} tokens in a prompt of {len(entries)}")
    total = 0.0
    for entry in entries[-n_reply_tokens:]:
        # with prompt_logprobs=0 each entry holds exactly the prompt's own token
        if not entry or len(entry) != 1:
            raise ValueError(f"{url}: expected one log-probability per prompt token, got {entry}")
        total += float(next(iter(entry.values()))["logprob"])
    return total
