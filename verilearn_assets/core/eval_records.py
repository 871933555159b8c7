"""`ModelEvalRecord`: one question answered by one model, as stored in `lake/model_eval/`.

Its own light module (pydantic only) so the warehouse can type an empty `model_eval` view
without importing the evaluation machinery.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from verilearn_assets.core.records import Record, content_hash

EVAL_ASSET = "model_eval"  # lake path: lake/model_eval/split=<s>/


class ModelEvalRecord(Record):
    """One question answered by one model: the verdict and what it cost."""

    id: str  # content_hash(model, question_id)
    model: str  # run id of a trained model, the dir name of a base model, or a served name
    model_path: str | None = None  # the directory served, when launched from one
    run_id: str | None = None  # the training run that made the model (None: a base model)
    family: str
    question_id: str
    source: str
    split: str
    dataset: str
    template: str | None = None
    template_family: str  # template name, else '+'-joined operator families, else '(none)'
    difficulty: str
    passed: bool
    failure_class: str | None = None  # wrong_answer, format_error, max_turns, ...
    format_errors: int = 0  # rejected replies (no or several python blocks)
    n_turns: int = 0  # assistant messages, rejected ones included
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    answer: str | None = None
    sampling_key: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)

    @staticmethod
    def make_id(model: str, question_id: str) -> str:
        return content_hash("model_eval", model, question_id)
