"""`ModelEvalRecord`: one task answered by one model in one role, as stored in `lake/model_eval/`.

Its own light module (pydantic only) so the warehouse can type an empty `model_eval` view
without importing the evaluation machinery.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from verilearn_assets.core.records import Record, content_hash

EVAL_ASSET = "model_eval"  # lake path: lake/model_eval/split=<s>/


class ModelEvalRecord(Record):
    """One task answered by one model in one role: the verdict and what it cost.

    Analysis questions run the multi-turn student loop; every other family is one greedy
    completion scored by its GRPO verifier (`training/eval/single_turn.py`), whose score keys
    (dafny writer: exact_match, bleu, covered, …) go to `extra`.
    """

    id: str  # content_hash(model, family, role, question_id)
    model: str  # run id of a trained model, the dir name of a base model, or a served name
    model_path: str | None = None  # the directory served, when launched from one
    run_id: str | None = None  # the training run that made the model (None: a base model)
    family: str
    role: str = "default"  # the role evaluated (dafny: writer/annotator/cascade)
    question_id: str  # the task id (analysis: the question id)
    source: str
    split: str
    dataset: str
    template: str | None = None
    template_family: str  # template name / operator families / the family's group (rule, …)
    difficulty: str  # analysis: easy/medium/hard; other families: their numeric difficulty
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
    def make_id(model: str, question_id: str, family: str, role: str = "default") -> str:
        return content_hash("model_eval", model, family, role, question_id)

    @property
    def scope(self) -> tuple[str, str, str, str]:
        """What a re-evaluation replaces: this model's verdict on this task in this role."""
        return (self.model, self.family, self.role, self.question_id)
