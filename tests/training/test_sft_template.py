"""The tiny model's chat template trains exactly what the assistant says, and when it stops."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoTokenizer
from trl.chat_template_utils import (
    is_chat_template_prefix_preserving,
    is_chat_template_stop_token_trained,
)

from verilearn_assets.core.family import SftRow
from verilearn_assets.training.sft.data import chat_messages
from verilearn_assets.training.sft.trainability import has_generation_markers


def _spans(mask: list[int]) -> list[tuple[int, int]]:
    spans, start = [], None
    for i, m in enumerate([*mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((start, i))
            start = None
    return spans


def test_assistant_spans_carry_labels_with_their_end_of_turn(
    tiny_model_dir: Path, sft_rows_real: list[SftRow]
) -> None:
    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    assert has_generation_markers(tok.chat_template)
    row = sft_rows_real[0]
    msgs = chat_messages(row)
    assert [m["role"] for m in msgs].count("tool") >= 1  # a real episode, tool turns kept
    out = tok.apply_chat_template(
        msgs, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = out["input_ids"], out["assistant_masks"]
    assert len(ids) == len(mask)
    spans = _spans(mask)
    said = [m["content"] for m in msgs if m["role"] == "assistant"]
    # one labelled span per assistant turn: its content and its <|im_end|>, nothing else
    assert [tok.decode(ids[a:b]) for a, b in spans] == [s + "<|im_end|>" for s in said]
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert all(ids[b - 1] == im_end for _, b in spans)
    # every other token (system, user, tool turns, role headers) is unlabelled
    unlabelled = tok.decode([t for t, m in zip(ids, mask, strict=True) if not m])
    for m in msgs:
        if m["role"] != "assistant":
            assert m["content"] in unlabelled
    assert "<|im_start|>tool\n" in unlabelled and "<|im_start|>assistant\n" in unlabelled
    # TRL's own checks agree: the end-of-turn token is trained, prefixes are preserved
    assert is_chat_template_stop_token_trained(tok) and is_chat_template_prefix_preserving(tok)
    # the rendered text is plain ChatML: what vLLM serves is what trains
    text = tok.apply_chat_template(msgs, tokenize=False)
    assert "generation" not in text
    assert text == "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in msgs)
