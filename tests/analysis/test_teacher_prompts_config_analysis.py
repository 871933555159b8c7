"""The analysis prompts as configuration (`teacher_prompts.yaml` `analysis:`).

The defaults must render exactly what the code rendered before the prompts moved to the
config (GOLDEN: captured from that code for fixed questions); `hints` and `few_shot`
change what the model reads, and a few-shot pool can only ever hold train questions on
other tables.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from question_helpers import make_table

from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.analysis.rollout.config import (
    AnalysisPrompts,
    TeacherConfig,
    load_analysis_prompts,
    load_teacher_config,
)
from verilearn_assets.analysis.rollout.prompts import (
    FewShotPool,
    question_prompt,
    reprompt,
    system_prompt,
    task_prompt,
)
from verilearn_assets.analysis.rollout.runner import (
    load_few_shot_pool,
    planned_ids,
    policy_factory,
    run_partition,
)
from verilearn_assets.core import lake
from verilearn_assets.core.answers import answer_hash
from verilearn_assets.core.config import ConfigError, config_dir
from verilearn_assets.core.records import (
    AnswerSchema,
    ColumnProfile,
    TableRecord,
    canonical_json,
    content_hash,
)

GOLDEN = {
    "system_12": "You are a careful data analyst working in a Python sandbox.\nA pandas DataFrame `df` holds the table described below; pandas (as pd) and numpy (as np) are available.\nWork step by step. Every reply must contain one short line of reasoning followed by exactly one ```python code block. The block runs as the next cell; variables persist between cells, and you will see its printed output, errors and the value of its last expression.\nRecord important intermediate values on the line right after the one computing them: `hook(value, \"<that exact line of code>\", name=\"short_name\")`.\nWhen you know the answer, call `submit(answer)` exactly once; the episode ends there.\nYou have at most 12 cells.\n\nTable 'orders' from dataset 'shop': 120 rows × 3 columns.\nColumns:\n- 'price': numeric, Float64; 2.5% missing; 90 unique; min=1 median=10 mean=12.25 max=99.5 std=3.5\n- 'region': categorical, String; 0.0% missing; 3 unique; top values: 'north', 'south', 'east'\n- 'order_id': numeric, Int64; 0.0% missing; 120 unique; identifier-like; min=1 max=120",  # noqa: E501 (captured verbatim)
    "system_3": "You are a careful data analyst working in a Python sandbox.\nA pandas DataFrame `df` holds the table described below; pandas (as pd) and numpy (as np) are available.\nWork step by step. Every reply must contain one short line of reasoning followed by exactly one ```python code block. The block runs as the next cell; variables persist between cells, and you will see its printed output, errors and the value of its last expression.\nRecord important intermediate values on the line right after the one computing them: `hook(value, \"<that exact line of code>\", name=\"short_name\")`.\nWhen you know the answer, call `submit(answer)` exactly once; the episode ends there.\nYou have at most 3 cells.\n\nTable 'orders' from dataset 'shop': 120 rows × 3 columns.\nColumns:\n- 'price': numeric, Float64; 2.5% missing; 90 unique; min=1 median=10 mean=12.25 max=99.5 std=3.5\n- 'region': categorical, String; 0.0% missing; 3 unique; top values: 'north', 'south', 'east'\n- 'order_id': numeric, Int64; 0.0% missing; 120 unique; identifier-like; min=1 max=120",  # noqa: E501 (captured verbatim)
    "questions": {
        "number": "Question: What is the mean of 'price'?\n\nSubmit a number (relative tolerance 1e-06).",  # noqa: E501 (captured verbatim)
        "integer": "Question: How many rows have 'region' equal to 'north'?\n\nSubmit an integer.",
        "list": "Question: Which three regions have the most orders, most first?\n\nSubmit a list of a string (order matters).",  # noqa: E501 (captured verbatim)
        "mapping": "Question: For the top region, give its row count and its share of all rows.\n\nSubmit a dict with exactly these keys: 'n': an integer, 'share': a number (relative tolerance 0.0001).",  # noqa: E501 (captured verbatim)
    },
    "reprompt": "Your last reply could not be run: no ```python code block found. Reply with one line of reasoning and exactly one ```python code block. (2 more malformed replies end the episode.)",  # noqa: E501 (captured verbatim)
}

TABLE = TableRecord(
    id="t1",
    dataset="shop",
    name="orders",
    split="train",
    path="/x.parquet",
    n_rows=120,
    n_columns=3,
    sha256="0" * 64,
    columns=[
        ColumnProfile(
            name="price",
            kind="numeric",
            dtype="Float64",
            missing_pct=2.5,
            n_unique=90,
            mean=12.25,
            min=1.0,
            max=99.5,
            median=10.0,
            std=3.5,
        ),
        ColumnProfile(
            name="region",
            kind="categorical",
            dtype="String",
            missing_pct=0.0,
            n_unique=3,
            top_values=["north", "south", "east"],
        ),
        ColumnProfile(
            name="order_id",
            kind="numeric",
            dtype="Int64",
            missing_pct=0.0,
            n_unique=120,
            id_like=True,
            min=1.0,
            max=120.0,
        ),
    ],
)
SCHEMAS = {
    "number": AnswerSchema(kind="number", rel_tol=1e-6),
    "integer": AnswerSchema(kind="integer"),
    "list": AnswerSchema(kind="list", items=AnswerSchema(kind="string"), ordered=True),
    "mapping": AnswerSchema(
        kind="mapping",
        fields={
            "n": AnswerSchema(kind="integer"),
            "share": AnswerSchema(kind="number", rel_tol=1e-4),
        },
    ),
}
QUESTIONS = {
    "number": "What is the mean of 'price'?",
    "integer": "How many rows have 'region' equal to 'north'?",
    "list": "Which three regions have the most orders, most first?",
    "mapping": "For the top region, give its row count and its share of all rows.",
}
INT = AnswerSchema(kind="integer")


def question(table: TableRecord, code: str, answer: object, split: str = "train") -> QuestionRecord:
    answer_json = canonical_json(answer)
    return QuestionRecord(
        id=QuestionRecord.make_id("template", table.dataset, table.id, code),
        source="template",
        split=split,
        dataset=table.dataset,
        table=table.id,
        question=f"What does `{code.splitlines()[0]}` give?",
        question_mechanical="q",
        answer_schema=INT,
        answer=answer_json,
        answer_hashes=[answer_hash(answer_json, INT)],
        code=code,
        n_steps=1,
        difficulty="easy",
        template="scripted",
    )


def copied_configs(tmp_path: Path, **analysis: object) -> Path:
    """configs/ copied, with `analysis:` keys of teacher_prompts.yaml replaced."""
    conf = shutil.copytree(config_dir(), tmp_path / "conf")
    path = conf / "teacher_prompts.yaml"
    data = yaml.safe_load(path.read_text())
    data["analysis"].update(analysis)
    path.write_text(yaml.safe_dump(data))
    return conf


@pytest.mark.parametrize(
    "prompts",
    [AnalysisPrompts(), load_analysis_prompts(), load_teacher_config().prompts],
    ids=["defaults", "teacher_prompts.yaml", "teacher config"],
)
def test_default_prompts_render_the_old_prompts_byte_for_byte(prompts: AnalysisPrompts) -> None:
    assert system_prompt(TABLE, 12, prompts) == GOLDEN["system_12"]
    assert system_prompt(TABLE, 3, prompts) == GOLDEN["system_3"]
    for kind, schema in SCHEMAS.items():
        assert question_prompt(QUESTIONS[kind], schema, prompts) == GOLDEN["questions"][kind]
    assert reprompt("no ```python code block found", 2, prompts) == GOLDEN["reprompt"]
    # no few-shot examples: the first user message is the question alone
    q = question(TABLE, "submit(1)", 1)
    assert task_prompt(q, prompts) == question_prompt(q.question, INT)


def test_hints_off_drops_the_answer_shape_and_the_column_value_hints() -> None:
    off = AnalysisPrompts(hints=False)
    assert question_prompt(QUESTIONS["mapping"], SCHEMAS["mapping"], off) == (
        "Question: " + QUESTIONS["mapping"]
    )
    text = system_prompt(TABLE, 12, off)
    rules, overview = text.split("\n\n", 1)[0], text.split("\n\nTable ", 1)[1]
    assert GOLDEN["system_12"].startswith(rules)
    assert overview.splitlines()[2:] == [
        "- 'price': numeric, Float64; 2.5% missing; 90 unique",
        "- 'region': categorical, String; 0.0% missing; 3 unique",
        "- 'order_id': numeric, Int64; 0.0% missing; 120 unique",
    ]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"hint": False}, "analysis.hint", "Extra inputs are not permitted"),
        ({"few_shot": -1}, "analysis.few_shot", "greater than or equal to 0"),
        ({"few_shot_split": "dev"}, "analysis.few_shot_split", "train split only"),
        ({"few_shot_sources": ["human"]}, "analysis.few_shot_sources.0", "template"),
        ({"question": "Q: {question} {table}"}, "analysis.question", "unknown placeholder"),
        ({"system": "You have cells."}, "analysis.system", r"missing placeholder.*max_turns"),
        ({"reprompt": "bad {"}, "analysis.reprompt", "not a format string"),
        ({"hints": "maybe"}, "analysis.hints", "valid boolean"),
    ],
)
def test_bad_analysis_prompt_keys_are_named_with_the_file(
    tmp_path: Path, change: dict, field: str, message: str
) -> None:
    conf = copied_configs(tmp_path, **change)
    with pytest.raises(ConfigError, match=rf"teacher_prompts.yaml: field '{field}'.*{message}"):
        load_teacher_config(conf)


def test_hints_on_off_in_yaml_and_prompts_never_in_teacher_yaml(tmp_path: Path) -> None:
    conf = copied_configs(tmp_path)
    text = (conf / "teacher_prompts.yaml").read_text().replace("hints: true", "hints: off")
    (conf / "teacher_prompts.yaml").write_text(text)
    assert load_teacher_config(conf).prompts.hints is False
    (conf / "teacher.yaml").write_text("prompts:\n  hints: false\n")
    with pytest.raises(ConfigError, match="teacher.yaml: field 'prompts'.*teacher_prompts.yaml"):
        load_teacher_config(conf)


def test_a_prompt_variant_is_another_sampling_key() -> None:
    """The cheat: an arm with hints off skipping its questions as done because the default
    prompt's episodes exist. Another prompt is another episode id; the default keeps the
    key the code always computed."""
    base = TeacherConfig()
    assert base.sampling_key() == content_hash("sampling", "program", None, None, None)
    variants = [
        TeacherConfig(prompts=AnalysisPrompts(hints=False)),
        TeacherConfig(prompts=AnalysisPrompts(few_shot=2)),
        TeacherConfig(prompts=AnalysisPrompts(reprompt="Again: {reason}")),
    ]
    keys = {base.sampling_key(), *(v.sampling_key() for v in variants)}
    assert len(keys) == 4
    q = question(TABLE, "submit(1)", 1)
    assert not set(planned_ids(q, base)) & set(planned_ids(q, variants[0]))


def test_few_shot_pool_refuses_other_splits_and_never_shows_the_own_table() -> None:
    other = TABLE.model_copy(update={"id": "t2", "name": "other"})
    third = TABLE.model_copy(update={"id": "t3", "name": "third"})
    own = [question(TABLE, f"submit({i})", i) for i in range(3)]
    elsewhere = [question(t, f"submit({i})", i) for t in (other, third) for i in range(2)]
    dev = question(other, "submit(9)", 9, split="dev")
    with pytest.raises(ValueError, match=rf"not of the train split: {dev.id} \(split dev\)"):
        FewShotPool([*elsewhere, dev])
    # the cheapest leak: the pool holds the task itself (its own answer as an example)
    pool = FewShotPool([*own, *elsewhere])
    for q in own:
        shots = pool.examples(q, 4)
        assert len(shots) == 4 and all(s.table != TABLE.id for s in shots)
        assert shots == pool.examples(q, 4)  # the same examples on every run
    with pytest.raises(ValueError, match=rf"question {own[0].id}: few_shot is 5 .* only 4"):
        pool.examples(own[0], 5)
    text = task_prompt(own[0], AnalysisPrompts(few_shot=1), pool.examples(own[0], 1))
    shot = pool.examples(own[0], 1)[0]
    assert text == (
        "Solved examples on other tables (the same rules apply):\n\n"
        f"Example 1, table {shot.table} of dataset {shot.dataset}:\nQuestion: {shot.question}\n"
        f"Solution:\n```python\n{shot.code}\n```\nAnswer: {shot.answer}\n\n"
        + question_prompt(own[0].question, INT)
    )


def test_a_misfiled_dev_question_in_the_train_lake_is_an_error(tmp_path: Path) -> None:
    dev = question(TABLE, "submit(2)", 2, split="dev")
    part = lake.partition_dir("analysis/questions", tmp_path, source="template", split="train")
    part.mkdir(parents=True)
    QuestionRecord.to_frame([dev]).write_parquet(part / "part-0.parquet")
    cfg = TeacherConfig(prompts=AnalysisPrompts(few_shot=1))
    with pytest.raises(ValueError, match=f"{dev.id} \\(split dev\\)"):
        load_few_shot_pool(cfg, tmp_path)
    empty = tmp_path / "empty"
    with pytest.raises(ValueError, match="few_shot is 1 but .* only 0 accepted"):
        load_few_shot_pool(cfg, empty)


def test_episodes_carry_the_configured_prompts(pool_runner, tmp_path: Path) -> None:
    """A real partition run (program teacher, real sandbox): the default prompts as the code
    always sent them; then hints off + one shot from the train lake, never the own table."""
    tables = [
        make_table(pd.DataFrame({"x": [1, 2, 3, 4, 5, 6], "g": list("aabbcc")}), tmp_path, "one"),
        make_table(pd.DataFrame({"y": [2, 4, 6, 8, 10, 12]}), tmp_path, "two"),
    ]
    qs = [question(tables[0], "n = len(df)\nsubmit(n)", 6)]
    qs.append(question(tables[1], "s = int(df['y'].sum())\nsubmit(s)", 42))
    root = tmp_path / "home" / "lake"
    lake.write_records(
        "analysis/questions", qs, QuestionRecord, root, source="template", split="train"
    )
    by_id = {t.id: t for t in tables}

    def run(cfg: TeacherConfig):
        return pool_runner.run(
            run_partition(
                qs, by_id, policy_factory(cfg), pool_runner.pool, cfg,
                source="template", split="train", root=root,
            )
        )  # fmt: skip

    default = load_teacher_config()
    first = run(default)
    variant = default.model_copy(update={"prompts": AnalysisPrompts(hints=False, few_shot=1)})
    second = run(variant)
    assert (first.written, first.verified, second.written, second.verified) == (2, 2, 2, 2)
    episodes = lake.read_records(
        "analysis/episodes", Episode, root, source="template", split="train"
    )
    by_key: dict[str, list[Episode]] = {}
    for e in episodes:
        by_key.setdefault(e.sampling_key, []).append(e)
    assert set(by_key) == {default.sampling_key(), variant.sampling_key()}
    for e in by_key[default.sampling_key()]:
        q = next(q for q in qs if q.id == e.question_id)
        assert e.messages[0].content == system_prompt(by_id[q.table], default.max_turns)
        assert e.messages[1].content == f"Question: {q.question}\n\nSubmit an integer."
    for e in by_key[variant.sampling_key()]:
        q = next(q for q in qs if q.id == e.question_id)
        shot = next(s for s in qs if s.id != q.id)  # the one train question on another table
        user = e.messages[1].content
        assert user.startswith("Solved examples on other tables")
        assert f"table {shot.table} of" in user and f"table {q.table} of" not in user
        assert user.endswith(f"\n\nQuestion: {q.question}") and "Submit" not in user
        assert "min=" not in e.messages[0].content
