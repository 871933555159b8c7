"""How many tokens a chat prompt costs on the served model.

Exact when the model's own files are reachable: the directory vLLM serves, loaded with
`transformers.AutoTokenizer` (the loader vLLM itself uses, pinned to the vLLM
environment's version) and rendered with the model's chat template, so the count is the
server's `prompt_tokens`. Loading `tokenizer.json` with the bare `tokenizers` library is
not enough: transformers swaps in the model class's own pre-tokenizer (Qwen2 splits
digits one by one), which changed counts by up to 30% on numeric tool output.

Otherwise an estimate from UTF-8 bytes with a safety margin. `name` says which counter
was used, so a report never passes an estimate off as a measurement.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

ChatMessages = Sequence[Mapping[str, Any]]


class TokenizerFilesError(ValueError):
    """A tokenizer directory exists but cannot be loaded; names the directory."""


class TokenCounter(Protocol):
    name: str  # "tokenizer:<dir>" or "estimate:..."; recorded with every count
    exact: bool

    def count_chat(self, messages: ChatMessages) -> int: ...

    def count_text(self, text: str) -> int: ...


class HfChatCounter:
    """Counts with the served model's tokenizer and chat template, loaded as vLLM does."""

    exact = True

    def __init__(self, model_dir: str | Path) -> None:
        from transformers import AutoTokenizer  # heavy (seconds): only when a dir is given

        self.model_dir = Path(model_dir)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir))
        except (OSError, ValueError) as exc:
            raise TokenizerFilesError(f"{self.model_dir}: cannot load tokenizer ({exc})") from exc
        if not self.tokenizer.chat_template:
            raise TokenizerFilesError(
                f"{self.model_dir}: the tokenizer has no chat template (a chat server "
                f"refuses chat requests without one)"
            )
        # Our prompts are far longer than a tiny model's limit: counting them is the point.
        self.tokenizer.model_max_length = 1 << 40
        self.name = f"tokenizer:{self.model_dir}"

    def render(self, messages: ChatMessages) -> str:
        """The prompt text the server tokenizes (generation prompt appended)."""
        return self.tokenizer.apply_chat_template(
            [dict(m) for m in messages], add_generation_prompt=True, tokenize=False
        )

    def count_chat(self, messages: ChatMessages) -> int:
        return self.count_text(self.render(messages))

    def count_text(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


class EstimateCounter:
    """No tokenizer reachable: UTF-8 bytes per token with a margin, plus a per-message cost.

    The default of one byte per token is an upper bound for byte-level BPE tokenizers (a
    token covers at least one byte), so the estimate never lets an over-long prompt through
    there; raise `bytes_per_token` for a known model family to use more of its window.
    """

    exact = False

    def __init__(
        self, bytes_per_token: float = 1.0, margin: float = 0.1, per_message: int = 8
    ) -> None:
        if bytes_per_token <= 0 or margin < 0 or per_message < 0:
            raise ValueError("EstimateCounter: bytes_per_token > 0, margin >= 0, per_message >= 0")
        self.bytes_per_token = bytes_per_token
        self.margin = margin
        self.per_message = per_message
        self.name = f"estimate:{bytes_per_token:g} bytes/token +{margin:.0%}"

    def count_text(self, text: str) -> int:
        return math.ceil(len(text.encode()) / self.bytes_per_token * (1 + self.margin))

    def count_chat(self, messages: ChatMessages) -> int:
        body = sum(self.count_text(str(m["content"])) for m in messages)
        return body + self.per_message * (len(messages) + 1)


@functools.lru_cache(maxsize=8)
def hf_counter(model_dir: str) -> HfChatCounter:
    """One loaded tokenizer per directory per process."""
    return HfChatCounter(model_dir)


def has_tokenizer(model_dir: str | Path | None) -> bool:
    if model_dir is None:
        return False
    d = Path(model_dir)
    return (d / "tokenizer.json").is_file() or (d / "tokenizer_config.json").is_file()


def load_counter(
    model_dir: str | Path | None, *, bytes_per_token: float = 1.0, margin: float = 0.1
) -> TokenCounter:
    """The exact counter when `model_dir` holds a tokenizer, else the estimate."""
    if has_tokenizer(model_dir):
        return hf_counter(str(Path(model_dir).resolve()))
    return EstimateCounter(bytes_per_token, margin)
