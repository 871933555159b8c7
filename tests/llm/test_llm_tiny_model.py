"""The tiny model is deterministic in its seed and has what vLLM's CPU backend needs."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from verilearn_assets.core.llm.launcher import REPO_ROOT

pytestmark = pytest.mark.vllm

# One interpreter builds three models (imports once); prints nothing on success.
BUILD_THREE = """
import sys
from pathlib import Path
from verilearn_assets.core.llm.tiny_model import build_tiny_model
root = Path(sys.argv[1])
build_tiny_model(root / "a", seed=0)
build_tiny_model(root / "b", seed=0)
build_tiny_model(root / "c", seed=1)
"""


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_same_seed_same_files_other_seed_other_weights(vllm_python: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(vllm_python), "-c", BUILD_THREE, str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    a, b, c = (tmp_path / n for n in "abc")
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert digest(a / name) == digest(b / name), name
    assert digest(a / "model.safetensors") != digest(c / "model.safetensors")
    assert digest(a / "tokenizer.json") == digest(c / "tokenizer.json")  # seed is for weights

    config = json.loads((a / "config.json").read_text())
    assert config["model_type"] == "qwen2"
    assert config["head_dim"] == 64  # the CPU attention kernels refuse smaller
    assert config["hidden_size"] == config["num_attention_heads"] * config["head_dim"]
    vocab = json.loads((a / "tokenizer.json").read_text())["model"]["vocab"]
    assert len(vocab) == config["vocab_size"]
    assert "<|im_start|>" in (a / "chat_template.jinja").read_text()
    meta = json.loads((a / "verilearn_tiny_model.json").read_text())
    assert meta["seed"] == 0 and meta["corpus_sha256"]


def test_tests_and_benchmarks_find_the_model_where_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verilearn_assets.core.llm.launcher import tiny_model_dir

    monkeypatch.setenv("VERILEARN_TINY_MODEL", str(tmp_path / "built-elsewhere"))
    assert tiny_model_dir() == tmp_path / "built-elsewhere"
    monkeypatch.delenv("VERILEARN_TINY_MODEL")
    assert tiny_model_dir() == REPO_ROOT / ".verilearn" / "models" / "tiny-qwen2"
