"""Build a tiny random-weight Qwen2-style chat model that vLLM's CPU backend can serve.

Why: tests need a *real* vLLM server, and no model weights can be fetched here. A model we
build ourselves is small (a few MB), starts in seconds and answers in milliseconds; its text
is gibberish, which is fine for exercising the serving path (tokens, seeds, concurrency).

Choices that matter to vLLM on CPU: head dimension 64 (smaller ones are refused by the CPU
attention kernels), a byte-level BPE tokenizer (any text round-trips), and a chat template
(the OpenAI chat endpoint needs one). Everything is seeded so the same seed gives the same
files on the same software versions.

Runs inside the vLLM environment (it needs torch, tokenizers and transformers):
    .venv-vllm/bin/python -m verilearn_assets.core.llm.tiny_model OUT_DIR [--seed N]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
from collections.abc import Iterator
from pathlib import Path

BOS = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [BOS, IM_START, IM_END]

# ChatML-style: every turn is <|im_start|>role\ncontent<|im_end|>\n; generation stops at <|im_end|>.
# Tool outputs keep their own `tool` role (a student must not learn to speak as the user or
# the tool). Each assistant turn's content *and its <|im_end|>* sit inside
# {% generation %}…{% endgeneration %}: transformers' `return_assistant_tokens_mask` (TRL's
# `assistant_only_loss`) then trains exactly what the model says, including when to stop.
# The newline after <|im_end|> stays outside: the server stops at <|im_end|>, it never
# generates that newline. The markers render nothing, so serving sees plain ChatML.
_CONTENT = (
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% elif message['content'] is not none %}{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
)
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' %}"
    "{% generation %}" + _CONTENT + "{{ '<|im_end|>' }}{% endgeneration %}{{ '\\n' }}"
    "{% else %}" + _CONTENT + "{{ '<|im_end|>\\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# Local text to learn merges from: docstrings of a fixed list of standard-library modules.
CORPUS_MODULES = (
    "abc argparse asyncio base64 bisect calendar collections contextlib csv dataclasses "
    "datetime decimal difflib email enum fractions functools gzip hashlib heapq html http "
    "inspect io itertools json logging math operator os pathlib pickle pprint queue random re "
    "shutil socket sqlite3 statistics string subprocess tarfile tempfile textwrap threading "
    "time typing unittest urllib uuid zipfile"
).split()


def corpus_texts() -> Iterator[str]:
    """Module, class and function docstrings, in a fixed order."""
    for name in CORPUS_MODULES:
        module = importlib.import_module(name)
        doc = inspect.getdoc(module)
        if doc:
            yield doc
        for attr in sorted(vars(module)):
            if attr.startswith("_"):
                continue
            obj = getattr(module, attr)
            if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj):
                doc = inspect.getdoc(obj)
                if doc:
                    yield doc


def build_tokenizer(vocab_size: int):  # -> tokenizers.Tokenizer
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus_texts()), trainer=trainer)
    return tok


def build_tiny_model(
    out_dir: Path,
    seed: int = 0,
    *,
    vocab_size: int = 2048,
    hidden_size: int = 128,
    num_layers: int = 2,
    num_heads: int = 2,
    head_dim: int = 64,
    max_position_embeddings: int = 2048,
) -> Path:
    """Write config, safetensors weights, tokenizer and chat template to `out_dir`."""
    import torch
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    if head_dim < 64:
        raise ValueError(f"head_dim={head_dim}: vLLM's CPU attention needs head_dim >= 64")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    raw = build_tokenizer(vocab_size)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, bos_token=BOS, eos_token=IM_END, pad_token=BOS
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.model_max_length = max_position_embeddings
    tokenizer.save_pretrained(out_dir)

    config = Qwen2Config(
        vocab_size=raw.get_vocab_size(),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        head_dim=head_dim,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=raw.token_to_id(BOS),
        eos_token_id=raw.token_to_id(IM_END),
        pad_token_id=raw.token_to_id(BOS),
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(out_dir)

    corpus_sha = hashlib.sha256("\n".join(corpus_texts()).encode()).hexdigest()
    (out_dir / "verilearn_tiny_model.json").write_text(
        json.dumps(
            {
                "seed": seed,
                "vocab_size": raw.get_vocab_size(),
                "hidden_size": hidden_size,
                "num_layers": num_layers,
                "num_heads": num_heads,
                "head_dim": head_dim,
                "corpus_modules": list(CORPUS_MODULES),
                "corpus_sha256": corpus_sha,
                "torch": torch.__version__,
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    return out_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = build_tiny_model(args.out_dir, seed=args.seed)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
