"""Shared set-up of the GRPO and reward tests: a home holding one real table and one
question verified in the real sandbox (its answer, alternative and hooks are genuine)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from verilearn_assets.analysis.config import QuestionsConfig
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.sources.candidate import AlternativeCode, Candidate
from verilearn_assets.analysis.verify.verifier import Verifier
from verilearn_assets.core import lake
from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.ingest.tables import ASSET as TABLES
from verilearn_assets.core.records import AnswerSchema, TableRecord, content_hash

# a = 1..39 (mean 20, which is in the data): "above the mean" is 19 rows, 20 with ">="
FRAME = pd.DataFrame({"a": list(range(1, 40)), "g": ["x", "y", "z"] * 13})

STEP1 = 'm = df["a"].mean()'
STEP2 = 'above = df[df["a"] > m]'
STEP3 = "final = int(len(above))"
REFERENCE = f"""{STEP1}
hook(m, {STEP1!r}, name="mean_a")
{STEP2}
hook(above, {STEP2!r}, name="above", depends_on=["mean_a"])
{STEP3}
hook(final, {STEP3!r}, name="final", depends_on=["above"])
submit(final)
"""
ALTERNATIVE = 'submit(int((df["a"] >= df["a"].mean()).sum()))\n'
ANSWER = 19
ALT_ANSWER = 20


def candidate() -> Candidate:
    return Candidate(
        source="template",
        template="count_above_mean",
        question="How many rows have a value of 'a' above the mean of 'a'?",
        question_mechanical="count rows with a > mean(a)",
        answer_schema=AnswerSchema(kind="integer"),
        code=REFERENCE,
        alternatives=[AlternativeCode(description="at or above the mean", code=ALTERNATIVE)],
        n_steps=3,
        difficulty="easy",
    )


def write_table(home: Path, split: str = "train") -> TableRecord:
    """The table as Parquet inside the home, registered in the lake's `tables` asset."""
    rel = Path("tables") / "t.parquet"
    (home / rel).parent.mkdir(parents=True, exist_ok=True)
    FRAME.to_parquet(home / rel, index=False)
    table = TableRecord(
        id=content_hash("grpo-test-table", FRAME.to_csv()),
        dataset="grpo_demo",
        name="t",
        split=split,
        path=str(rel),
        n_rows=len(FRAME),
        n_columns=FRAME.shape[1],
        sha256="0" * 64,
        columns=profile_frame(FRAME),
    )
    lake.write_records(TABLES, [table], TableRecord, lake.lake_root(home), split=split)
    return table.model_copy(update={"path": str(home / rel)})


async def verified_question(pool, table: TableRecord) -> QuestionRecord:
    """The candidate through the real Verifier (fresh sandbox runs)."""
    record = await Verifier(pool, QuestionsConfig()).verify(table, candidate())
    assert record.status == "accepted", record.rejection_reason
    return record


def write_question(home: Path, question: QuestionRecord) -> None:
    lake.write_records(
        "analysis/questions",
        [question],
        QuestionRecord,
        lake.lake_root(home),
        source=question.source,
        split=question.split,
    )


def reply(code: str) -> str:
    """A completion as a model would write it: a reasoning line and one python block."""
    return f"I compute it from the table.\n\n```python\n{code.rstrip()}\n```"


def bwrap_config_dir(target: Path) -> Path:
    """A copy of configs/ whose sandbox uses bubblewrap: a real jail that starts in seconds
    (a Docker slot takes ~15 s on this shared machine)."""
    import shutil

    import yaml

    from verilearn_assets.core.config import config_dir

    shutil.copytree(config_dir(), target, dirs_exist_ok=True)
    sandbox = yaml.safe_load((target / "sandbox.yaml").read_text())
    sandbox["backend"] = "bwrap"
    (target / "sandbox.yaml").write_text(yaml.safe_dump(sandbox))
    return target


class FirstOfGroupScorer:
    """A reward that accepts exactly one completion per group (the first of each task id
    in a batch): the smallest signal GRPO can learn from, with no verifier behind it."""

    def __init__(self, home: Path, tasks, role: str) -> None:
        self.closed = False

    def score(self, task_ids, completions) -> list[dict[str, float]]:
        seen: set[str] = set()
        out = []
        for t in task_ids:
            v = 0.0 if t in seen else 1.0
            seen.add(t)
            out.append({"outcome": v, "partial": v})
        return out

    def close(self) -> None:
        self.closed = True


def tensors(model_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(next(Path(model_dir).glob("*.safetensors"))))
