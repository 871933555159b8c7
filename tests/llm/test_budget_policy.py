"""The compression policy on its own: what a wide table and a long episode keep and lose.

Counts come from the tiny model's real tokenizer (the files the test server serves), so
every "fits" below is measured, not estimated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from wide_table import wide_table

from verilearn_assets.analysis.records import Message
from verilearn_assets.analysis.rollout.context import CellOutput, budget_messages
from verilearn_assets.analysis.rollout.policy import chat_messages
from verilearn_assets.analysis.rollout.prompts import (
    Observation,
    question_prompt,
    system_prompt,
    system_rules,
    tool_message,
)
from verilearn_assets.core import lake
from verilearn_assets.core.llm.budget_records import BudgetCounts, ContextBudgetRecord, lake_asset
from verilearn_assets.core.llm.fit import FAILURE_CLASS, BudgetConfig, ContextBudget, for_server
from verilearn_assets.core.llm.segments import (
    BudgetMessage,
    FewShotSegment,
    Keep,
    parse_tool_text,
    plain,
)
from verilearn_assets.core.llm.tokens import EstimateCounter, TokenCounter, load_counter
from verilearn_assets.core.records import AnswerSchema, TableRecord

REPO = Path(__file__).resolve().parents[2]
QUESTION = question_prompt(
    "What is the mean of 'c0' where 'c1' is positive?", AnswerSchema(kind="number")
)


@pytest.fixture(scope="module")
def counter(tiny_model_dir: Path) -> TokenCounter:
    c = load_counter(tiny_model_dir)
    assert c.exact, c.name
    return c


def first_turns(table: TableRecord) -> list[Message]:
    return [
        Message(turn=0, role="system", kind="prompt", content=system_prompt(table, 12)),
        Message(turn=1, role="user", kind="prompt", content=QUESTION),
    ]


def column_lines(system: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r"^- '(c\d+)': .*$", system, re.M)}


def test_wide_table_drops_statistics_first_then_rare_columns(counter: TokenCounter) -> None:
    table = wide_table()
    msgs = first_turns(table)
    original = msgs[0].content
    budget = ContextBudget(window=1 << 17, max_tokens=1024, counter=counter)
    full = budget.fit(budget_messages(msgs, table, 12, {}))
    assert full.messages_compressed == 0 and full.contents[0] == original  # fits: untouched
    needed = full.prompt_tokens

    stats_only = ContextBudget(window=needed - 500, max_tokens=256, counter=counter)
    fit = stats_only.fit(budget_messages(msgs, table, 12, {}))
    assert not fit.overflow and fit.prompt_tokens <= fit.limit < fit.original_tokens
    system = fit.contents[0]
    assert system.startswith(system_rules(12))  # the instructions are never cut
    assert fit.contents[1] == QUESTION  # nor the question
    lines = column_lines(system)
    assert len(lines) == 500  # every column still listed on its own line...
    stripped = [c for c, line in lines.items() if "missing" not in line]
    assert stripped  # ...but some lost their statistics, the mostly-missing ones first
    rare = {f"c{i}" for i in range(4, 500, 5)}
    assert set(stripped) <= rare or rare <= set(stripped)
    assert "per-column statistics dropped for" in system
    assert fit.messages_compressed == 1 and fit.tokens_removed["table"] > 0

    tight = ContextBudget(window=2048, max_tokens=256, counter=counter)
    fit = tight.fit(budget_messages(msgs, table, 12, {}))
    assert not fit.overflow and fit.prompt_tokens <= 2048 - 256
    system = fit.contents[0]
    assert system.startswith(system_rules(12)) and fit.contents[1] == QUESTION
    listed = set(re.findall(r"\b(c\d+)\b", system))
    # at 2k tokens 500 columns cannot all be named: the rare ones go first, with a count
    missing = {f"c{i}" for i in range(500)} - listed
    assert missing and (missing <= rare or rare <= missing)
    complete_gone = sorted((int(c[1:]) for c in missing - rare), reverse=True)
    complete_all = sorted((i for i in range(500) if f"c{i}" not in rare), reverse=True)
    assert complete_gone == complete_all[: len(complete_gone)]  # then from the end
    note = re.search(r"(\d+) columns not listed \(inspect df.columns\)", system)
    assert note and int(note.group(1)) == len(missing)
    assert re.search(r"More columns \(name: kind\): 'c\d+': numeric", system)


def long_episode(turns: int = 30) -> tuple[list[Message], dict[int, CellOutput], TableRecord]:
    """`turns` cells with 4,000-character outputs; cell 3 records a hook, cell 7 fails,
    one reply is rejected, and the last cell submits."""
    table = wide_table(12)
    msgs = first_turns(table)
    outputs: dict[int, CellOutput] = {}

    def add(role: str, kind: str, content: str) -> int:
        msgs.append(Message(turn=len(msgs), role=role, kind=kind, content=content))
        return len(msgs) - 1

    add("assistant", "rejected_reply", "I will think about it. " * 40)
    add("user", "reprompt", "Your last reply could not be run: no python block.")
    for i in range(turns):
        hook = i == 3
        code = f"x{i} = df.describe()\nprint(x{i}.to_string())" + (
            f"\nhook(x{i}, 'x{i} = df.describe()', name='summary{i}')" if hook else ""
        )
        if i == turns - 1:
            code += "\nsubmit(1.5)"
        add("assistant", "reply", f"Step {i}.\n\n```python\n{code}\n```")
        failed = i == 7
        obs = Observation(
            status="error" if failed else "ok",
            duration_ms=12.0,
            stdout=f"row {i} " + "0123456789 " * 400,
            stderr="Traceback ...\nKeyError: 'nope'" if failed else "",
            value_repr=None,
            submissions=["1.5"] if i == turns - 1 else [],
        )
        turn = add("tool", "tool_output", tool_message(obs, 4000))
        outputs[turn] = CellOutput(obs, (f"summary{i}",) if hook else (), 4000)
    return msgs, outputs, table


def test_long_episode_summarizes_old_outputs_and_keeps_records(counter: TokenCounter) -> None:
    msgs, outputs, table = long_episode()
    budget = ContextBudget(window=2048, max_tokens=256, counter=counter)
    fit = budget.fit(budget_messages(msgs, table, 12, outputs))
    assert not fit.overflow and fit.prompt_tokens <= budget.limit
    assert fit.original_tokens > 10 * budget.limit  # ~30 x 4,000 characters of output
    got = fit.contents
    assert got[0].startswith(system_rules(12)) and got[1] == QUESTION
    tools = [i for i, m in enumerate(msgs) if m.kind == "tool_output"]
    last, hooked, failed = tools[-1], tools[3], tools[7]
    # the last output keeps its status line and its submission, whatever else is cut
    assert got[last].startswith("[cell ok]") and "submitted: 1.5" in got[last]
    # older outputs become one-line summaries; at 2k tokens the oldest plain turns (no
    # hook, submission or error) are then dropped, oldest first, and a marker says so
    protected = {hooked, hooked - 1, failed, last, last - 1}
    dropped = [i for i, c in enumerate(got) if c is None]
    assert dropped and not set(dropped) & protected
    droppable = [i for i in range(2, len(msgs)) if msgs[i].kind in ("reply", "tool_output")]
    droppable = [i for i in droppable if i not in protected]
    assert dropped == droppable[: len(dropped)]
    after = min(i for i in range(dropped[0], len(msgs)) if got[i] is not None)
    assert got[after].startswith("[context budget: ") and "earlier messages omitted]" in got[after]
    kept_tools = [i for i in tools[:-1] if got[i] is not None]
    assert all("chars of output cut" in got[i] for i in kept_tools)
    assert "hooks: summary3" in got[hooked]  # hook records survive a summary
    assert "error: KeyError: 'nope'" in got[failed]  # and so does the error
    # the rejected reply went first; hook/submit lines of compacted replies stay
    rejected = next(i for i, m in enumerate(msgs) if m.kind == "rejected_reply")
    assert got[rejected].startswith("[a reply of") and "could not be run" in got[rejected]
    assert "hook(x3, 'x3 = df.describe()', name='summary3')" in got[hooked - 1]
    assert fit.tokens_removed["tool_output"] > 0 and fit.messages_by_kind["tool_output"] == 30
    mark = re.compile(r"^\[context budget: \d+ earlier messages omitted\]\n")
    changed = [c is None or mark.sub("", c) != m.content for c, m in zip(got, msgs, strict=True)]
    assert fit.messages_compressed == sum(changed)


def test_a_question_longer_than_the_window_overflows(counter: TokenCounter) -> None:
    table = wide_table(3)
    msgs = first_turns(table)
    msgs[1] = msgs[1].model_copy(update={"content": "Why is " + "very " * 3000 + "long?"})
    fit = ContextBudget(window=2048, max_tokens=256, counter=counter).fit(
        budget_messages(msgs, table, 12, {})
    )
    assert fit.overflow and fit.prompt_tokens > fit.limit
    assert fit.contents[1] == msgs[1].content  # the question was not cut to make it fit
    assert fit.reason.startswith(f"{FAILURE_CLASS}: the prompt needs")
    counts = BudgetCounts()
    counts.add(fit)
    assert counts.overflows == 1 and counts.metadata()["context_overflows"] == 1


def test_fit_chat_applies_the_same_policy_to_plain_messages(counter: TokenCounter) -> None:
    """What training reuses for SFT rows: system, task and final answer stay whole."""
    chat = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": QUESTION},
    ]
    for i in range(8):
        chat += [
            {"role": "assistant", "content": f"Step {i}\n```python\nprint(df)\n```"},
            {"role": "user", "content": "[cell ok, 3 ms]\nstdout:\n" + "42 " * 1500},
        ]
    chat.append({"role": "assistant", "content": "```python\nsubmit(42)\n```"})
    fit = ContextBudget(window=2048, max_tokens=0, counter=counter).fit_chat(chat)
    assert not fit.overflow and fit.prompt_tokens <= 2048
    assert [m["content"] for m in fit.messages][:2] == [c["content"] for c in chat[:2]]
    assert fit.messages[-1] == chat[-1]
    assert "characters truncated" in fit.messages[3]["content"]


def test_estimate_is_an_upper_bound_of_the_byte_level_tokenizer(counter: TokenCounter) -> None:
    msgs, outputs, table = long_episode(4)
    chat = chat_messages(msgs)
    assert EstimateCounter().count_chat(chat) >= counter.count_chat(chat)
    budget = for_server(None, 64, BudgetConfig(max_model_len=4096))
    assert budget is not None and budget.counter.name.startswith("estimate:")
    assert budget.window == 4096 and budget.window_source == "config"
    assert for_server(None, 64) is None  # nobody says what the window is: no budget
    with pytest.raises(ValueError, match="max_tokens 4096 leaves no room"):
        for_server({"max_model_len": 4096}, 4096)


def test_budget_records_round_trip_through_the_lake(counter: TokenCounter, tmp_path: Path) -> None:
    msgs, outputs, table = long_episode(10)
    budget = ContextBudget(window=2048, max_tokens=256, counter=counter)
    counts = BudgetCounts()
    for n in (6, 14, len(msgs)):  # the prompt grows turn by turn, as in a real episode
        counts.add(budget.fit(budget_messages(msgs[:n], table, 12, outputs)))
    rows = counts.records("analysis", "episodes", "llm", "dev")
    by_kind = {r.kind: r for r in rows}
    assert by_kind[FAILURE_CLASS].overflows == 0
    assert sum(r.tokens_removed for r in rows) == sum(counts.tokens_removed.values()) > 0
    assert {r.requests for r in rows} == {3}
    where = lake_asset("analysis", "episodes")
    lake.write_records(where, rows, ContextBudgetRecord, tmp_path, source="llm", split="dev")
    back = lake.read_records(where, ContextBudgetRecord, tmp_path, source="llm", split="dev")
    assert sorted(back, key=lambda r: r.kind) == sorted(rows, key=lambda r: r.kind)
    # the mart reads that layout: one row per kind, figures as counted
    sql = (REPO / "dbt_like_sql/marts/mart_context_budget.sql").read_text()
    # an own connection, closed: duckdb's module-level default one lives until exit
    # and is reported as leaked then
    with duckdb.connect() as con:
        mart = con.sql(sql.replace("{{ lake }}", str(tmp_path))).fetchall()
    assert [(r[0], r[1], r[4], r[7], r[8]) for r in mart] == sorted(
        (r.family, r.asset, r.kind, r.tokens_removed, r.overflows) for r in rows
    )


def test_few_shot_examples_go_before_the_task_is_touched(counter: TokenCounter) -> None:
    example = "Example question: how many rows?\n```python\nsubmit(len(df))\n```\n" * 30
    msgs = [
        BudgetMessage("system", [Keep("Answer with code.", "instructions")]),
        BudgetMessage("user", [FewShotSegment(example)]),
        BudgetMessage("assistant", [FewShotSegment(example)]),
        BudgetMessage("user", [Keep(QUESTION, "task")]),
    ]
    whole = ContextBudget(window=1 << 15, max_tokens=0, counter=counter).fit(msgs)
    assert whole.messages_compressed == 0 and len(whole.messages) == 4
    limit = whole.prompt_tokens - 10  # one example must go, the oldest first
    fit = ContextBudget(window=limit, max_tokens=0, counter=counter).fit(msgs)
    assert not fit.overflow and fit.contents[1] is None and fit.contents[2] is not None
    assert fit.contents[3] == QUESTION and "1 earlier messages omitted" in fit.contents[2]
    assert fit.messages_by_kind == {"fewshot": 1} and fit.tokens_removed["fewshot"] > 0
    assert [m["role"] for m in fit.messages] == ["system", "assistant", "user"]


# ------------------------------------------------------------------ dafny and refactor prompts
@dataclass
class DafnySource:
    """What a dafny prompt is built from (a task or a trajectory)."""

    prefix: str
    suffix: str
    spec: str
    body: str


def dafny_source(n_helpers: int) -> DafnySource:
    helpers = "".join(
        f"function Helper{i}(x: int): int {{ x * {i} + {i % 7} }}\n" for i in range(n_helpers)
    )
    return DafnySource(
        prefix=helpers,
        suffix="",
        spec="method Triple(x: int) returns (r: int)\n  ensures r == 3 * x\n",
        body="{\n  r := x + x + x;\n}\n",
    )


def test_dafny_prompts_drop_example_pairs_then_cut_the_context(counter: TokenCounter) -> None:
    from verilearn_assets.dafny import prompts
    from verilearn_assets.dafny.rollout.vllm_teacher import task_messages

    task = dafny_source(120)
    shots = [(prompts.user_prompt(dafny_source(20), "writer"), prompts.fenced("{ r := 3*x; }"))] * 3
    chat = prompts.messages(task, "annotator", task.body, shots=shots)
    msgs = task_messages(chat, task)
    assert plain(msgs) == chat  # level 0 is the prompt byte for byte
    whole = ContextBudget(window=1 << 15, max_tokens=0, counter=counter).fit(msgs)
    shot_tokens = whole.prompt_tokens - counter.count_chat([chat[0], chat[-1]])
    # just short of room for every example: the oldest pair goes whole, the context stays
    fit = ContextBudget(window=whole.prompt_tokens - 5, max_tokens=0, counter=counter).fit(msgs)
    assert not fit.overflow and fit.contents[1] is None and fit.contents[2] is None
    assert fit.contents[3] is not None and fit.contents[-1].endswith(chat[-1]["content"])
    assert fit.messages_by_kind == {"fewshot": 2}
    # far shorter: every example gone, then the context middle-truncated; the signature,
    # the specification and the body to annotate stay whole
    small = whole.prompt_tokens - shot_tokens - 400
    fit = ContextBudget(window=small, max_tokens=0, counter=counter).fit(msgs)
    assert not fit.overflow and fit.prompt_tokens <= small
    assert fit.contents[1:-1] == [None] * 6
    last = fit.contents[-1]
    assert "characters truncated" in last and "Helper0(" in last and task.spec.rstrip() in last
    assert task.body.strip() in last and fit.messages[0]["content"] == chat[0]["content"]
    assert fit.tokens_removed["context"] > 0 and fit.tokens_removed["fewshot"] > 0
    # the ladder cannot cut the task itself: a window under it is an overflow
    floor = counter.count_chat([chat[0], {"role": "user", "content": task.spec}])
    assert ContextBudget(window=floor, max_tokens=0, counter=counter).fit(msgs).overflow


def test_refactor_prompts_drop_old_state_items_and_keep_the_task(counter: TokenCounter) -> None:
    from verilearn_assets.refactor.records import Difficulty, RefactorTask
    from verilearn_assets.refactor.rollout.prompts import load_prompts, render_messages
    from verilearn_assets.refactor.rollout.state import State, render
    from verilearn_assets.refactor.rollout.teachers import actor_messages

    note = "x" * 200
    state = State(
        goals=["Replace == None with is None everywhere."],
        constraints=["keep the tests passing"],
        hypotheses=[f"hypothesis {i} {note}" for i in range(8)],
        decisions=[f"decision {i} {note}" for i in range(8)],
        open_issues=[f"issue {i} {note}" for i in range(8)],
        history=[f"step {i}: {note}" for i in range(3)],
        next_focus="run the tests",
    )
    task = RefactorTask(
        id="t",
        repo="pathconf",
        licence="MIT",
        files=["pathconf/loader.py"],
        instruction="Compare values to None with `is` instead of `==`.",
        target_diff="",
        target_tree="",
        step_trees=[],
        test_command=["pytest", "-q"],
        reference_actions=[],
        rules=[],
        source="template",
        split="dev",
        status="accepted",
        difficulty=Difficulty(matches=1, files_touched=1, rule_complexity=1, steps=1),
    )
    files = ", ".join(f"pathconf/module_{i}.py" for i in range(300))
    last = f"action ok, files changed: {files}, tests passed"
    chat = render_messages(load_prompts(), task, render(state), 2, 3, last)
    msgs = actor_messages(chat, state)
    assert plain(msgs) == chat
    whole = counter.count_chat(chat)
    fit = ContextBudget(window=whole - 300, max_tokens=0, counter=counter).fit(msgs)
    assert not fit.overflow and fit.messages_by_kind == {"state": 1}
    user = fit.contents[1]
    assert "hypothesis 0 " not in user and "hypothesis 7 " in user  # oldest first
    assert "older state items omitted]" in user and files in user  # the result still whole
    # a window the state alone cannot make: every droppable item gone, then the file list
    # cut in the middle; goals, constraints, the task and the tests' verdict stay
    fit = ContextBudget(window=1200, max_tokens=0, counter=counter).fit(msgs)
    assert not fit.overflow and fit.prompt_tokens <= 1200
    user = fit.contents[1]
    assert "characters truncated" in user and "tests passed" in user
    assert all(g in user for g in (*state.goals, *state.constraints, task.instruction))
    assert "decision 7" not in user and "step 2:" not in user and "issue 7" not in user
    assert fit.tokens_removed["state"] > 0 and fit.tokens_removed["tool_output"] > 0


def test_sft_fit_keeps_every_assistant_turn_and_record(counter: TokenCounter) -> None:
    obs = Observation("ok", 3.0, "\n".join(f"{i} {i * 0.5}" for i in range(600)), "", None, [])
    err = Observation("error", 2.0, "", "Traceback\nKeyError: 'c9'", None, [])
    done = Observation("ok", 1.0, "", "", None, ["42.0"])
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    for o in (obs, err, obs, done):
        chat += [
            {"role": "assistant", "content": "Look.\n```python\nprint(df)\n```"},
            {"role": "tool", "content": tool_message(o, 8000)},
        ]
    chat.append({"role": "assistant", "content": "```python\nsubmit(42.0)\n```"})
    view = parse_tool_text(tool_message(err, 8000))
    assert view.status_line == "[cell error]" and view.error == "KeyError: 'c9'"
    assert parse_tool_text(tool_message(done, 8000)).submissions == ("42.0",)
    floor = counter.count_chat([m for m in chat if m["role"] != "tool"])
    window = floor + 250  # room for one-line summaries, not for the outputs
    assert counter.count_chat(chat) > 4 * window
    fit = ContextBudget(window=window, max_tokens=0, counter=counter).fit_sft(chat)
    assert not fit.overflow and len(fit.messages) == len(chat)  # nothing dropped
    for before, after in zip(chat, fit.messages, strict=True):
        if before["role"] != "tool":
            assert after == before
    tools = [m["content"] for m in fit.messages if m["role"] == "tool"]
    size = sum(len(body) for _, body in parse_tool_text(chat[3]["content"]).sections)
    assert tools[0] == f"[cell ok; {size} chars of output cut]"  # oldest: one line
    assert tools[1].startswith("[cell error]") and "KeyError: 'c9'" in tools[1]
    assert tools[-1].endswith("submitted: 42.0")
    assert set(fit.tokens_removed) == {"tool_output"}
