"""A model's rule in the `llm` source (`sources/llm.py::parse_rule`) is read as ast-grep reads
a rule file, by the parser `verilearn refactor apply` uses (`verify/rule_files.py`): several
documents, `utils`, `transform`, `rewriters`, any language alias in any case. Hostile or
careless answers are refused naming the document and the field, or rejected by the jail;
a multi-document proposal goes through the real source (a scripted model, the real jail).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from refactor_support import refactor_config

from verilearn_assets.refactor.rollout.prompts import load_prompts, render_messages
from verilearn_assets.refactor.rollout.teachers import program_answer
from verilearn_assets.refactor.sources.catalog import load_corpus
from verilearn_assets.refactor.sources.llm import generate_llm_tasks, parse_rule
from verilearn_assets.refactor.verify.actions import ActionRejected
from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace
from verilearn_assets.refactor.verify.verdict import reached, verify_step

PATHCONF = [r for r in load_corpus() if r.name == "pathconf"]

# two documents, a util and a transform: `x == None` and `x != None` both rewritten
TWO_DOCS = """id: eq-none
language: Python
utils:
  none-eq:
    pattern: $A == None
rule:
  matches: none-eq
transform:
  SUBJECT:
    substring: {source: $A}
fix: $SUBJECT is None
---
id: ne-none
language: py
rule:
  pattern: $A != None
fix: $A is not None
"""
# the same refactoring in other words: other aliases, kind + pattern, a rewriter
TWO_DOCS_OTHER = """id: a
language: PYTHON
rule:
  kind: comparison_operator
  pattern: $L == None
fix: $L is None
---
id: b
language: Py
rewriters:
  - id: keep
    rule: {pattern: $X}
    fix: $X
rule:
  kind: comparison_operator
  pattern: $L != None
fix: $L is not None
"""


def answer(rule: str, words: str | None = "Compare with None using `is` / `is not`.") -> str:
    head = f"<instruction>{words}</instruction>\n" if words else ""
    return f"{head}<rule>\n{rule}</rule>"


def test_what_ast_grep_accepts_is_accepted() -> None:
    action = parse_rule(answer(TWO_DOCS), "python")
    assert isinstance(action.rule, list) and len(action.rule) == 2
    assert [d.language for d in action.rule_file.documents] == ["python", "python"]
    assert action.rule[0]["utils"] == {"none-eq": {"pattern": "$A == None"}}
    assert "transform" in action.rule[0]
    other = parse_rule(answer(TWO_DOCS_OTHER), "python")
    assert "rewriters" in other.rule[1]
    # one document stays one mapping; a fix object with a template is a fix
    single = "id: x\nlanguage: Py\nrule: {pattern: list()}\nfix: {template: '[]'}\n"
    assert parse_rule(answer(single)).rule["fix"] == {"template": "[]"}


def test_prose_and_fences_around_the_yaml_are_left_out() -> None:
    text = (
        "Sure! Here is my proposal.\n<instruction>Write empty lists as [].</instruction>\n"
        "Some thoughts before the rule.\n<rule>\nThe rule, as ast-grep takes it:\n"
        "```yaml\nid: x\nlanguage: python\nrule:\n  pattern: list()\nfix: '[]'\n```\n"
        "That should do it.\n</rule>\nThanks!"
    )
    action = parse_rule(text, "python")
    assert action.rule == {"id": "x", "language": "python", "rule": {"pattern": "list()"},
                           "fix": "[]"}  # fmt: skip
    # prose inside the block without a fence is not YAML a rule file takes: said so
    with pytest.raises(ActionRejected, match=r"document 1: unknown field"):
        parse_rule("<rule>\nHere it is:\nid: x\nlanguage: python\n</rule>")


BASE = "id: x\nlanguage: python\nrule: {pattern: f()}\n"  # a document without its fix
OTHER_LANGUAGE = "id: x\nlanguage: rust\nrule: {pattern: f()}\nfix: g()\n"
UNKNOWN_LANGUAGE = "id: x\nlanguage: klingon\nrule: {pattern: f()}\nfix: g()\n"
TAGGED = "id: x\nlanguage: python\nrule: !!python/object:os.system {}\nfix: g()\n"
NO_RULE = "---\nid: y\nlanguage: python\nfix: z\n"


@pytest.mark.parametrize(
    ("rule", "failure", "message"),
    [
        ("", "parse", "no <rule>"),
        (BASE, "schema", r"document 1: missing field `fix`"),
        (BASE + "fix: ''\n", "schema", r"document 1: field `fix` is empty"),
        (BASE + "fix: {template: '  '}\n", "schema", r"`fix` is empty"),
        (BASE + "fix: yes\n", "schema", r"document 1: field `fix` must be a string, not bool"),
        (BASE + "fix: {template: 3}\n", "schema", r"field `fix.template` must be a string"),
        (TWO_DOCS + NO_RULE, "schema", r"document 3: missing field `rule`"),
        (OTHER_LANGUAGE, "schema", r"document 1: field `language` is rust, but the repository"),
        (TWO_DOCS.replace("language: py\n", "language: GoLang\n"), "schema", r"document 2: .*go"),
        (UNKNOWN_LANGUAGE, "schema", r"document 1: .*klingon"),
        (TAGGED, "disallowed", r"explicit YAML tag"),
        (BASE + "fix: g()\nfiles: [/etc/*]\n", "disallowed", r"document 1: files"),
        ("---\n---\n", "schema", r"no rule document"),
        ("id: x\nlanguage: python\nrule: {pattern: [f()}\n", "schema", r"not valid YAML"),
    ],
)
def test_bad_rules_are_refused_naming_document_and_field(
    rule: str, failure: str, message: str
) -> None:
    with pytest.raises(ActionRejected, match=message) as caught:
        parse_rule(answer(rule) if rule else "<instruction>x</instruction>", "python")
    assert caught.value.failure == failure


class ScriptedProposer:
    """What a model says, in order (the only allowed double)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)

    async def __call__(self, messages: list[dict], seed: int) -> str:
        return self.answers.pop(0)


def test_a_multi_document_proposal_and_hostile_ones_through_the_source(tmp_path: Path) -> None:
    """Real entry point, real jail: the two-document rule is accepted (triangulated by the
    same refactoring written otherwise); a rule matching nothing, a rule deleting code, a
    rule of another language and a rule whose second document breaks the tests are not."""
    config = refactor_config("bwrap", tmp_path)
    deletes = "id: d\nlanguage: python\nrule: {pattern: 'dict()'}\nfix: ''\n"
    nothing = "id: n\nlanguage: python\nrule: {pattern: no_such_call_anywhere()}\nfix: f()\n"
    rust = "id: r\nlanguage: rs\nrule: {pattern: 'Vec::new()'}\nfix: 'vec![]'\n"
    breaks = TWO_DOCS.replace("fix: $A is not None", "fix: $A is None")  # inverts a test
    script = ScriptedProposer(
        [
            answer(TWO_DOCS), answer(TWO_DOCS_OTHER, words=None),
            answer(deletes, "Remove the dict() calls."),
            answer(nothing, "Call f instead."),
            answer(rust, "Use vec![]."),
            answer(breaks, "Compare with None using is."),
        ]
    )  # fmt: skip
    tasks = asyncio.run(generate_llm_tasks(PATHCONF, script, load_prompts(), config, per_repo=5))
    assert script.answers == []
    by_words = {t.instruction: t for t in tasks}
    ok = by_words["Compare with None using `is` / `is not`."]
    assert ok.status == "accepted", ok.reason
    assert ok.files == sorted(
        f"pathconf/{m}.py" for m in ("convert", "loader", "search", "validate")
    )
    assert "is not None" in ok.target_diff and "!= None" not in ok.target_diff.split("+++")[-1]
    (action,) = ok.reference_actions
    assert isinstance(action["rule"], list) and len(action["rule"]) == 2
    assert action["rule"][1]["id"] == f"{ok.rules[0]}-2"  # our ids, not the model's
    reasons = {t.instruction: t.reason for t in tasks if t.status == "rejected"}
    assert reasons["Remove the dict() calls."].startswith(
        "proposal: rule: document 1: field `fix` is empty"
    )
    assert reasons["Call f instead."].startswith("step 1: no_change")
    assert "field `language` is rust" in reasons["Use vec![]."]
    assert reasons["Compare with None using is."].startswith("tests failed")
    # the program teacher replays the two-document rule: it cites the shown code (both
    # documents' places), and its step reaches the target with the tests passing
    ws = prepare_workspace("llm-two-docs", PATHCONF[0].path, config)
    try:
        messages = render_messages(load_prompts(), ok, "", 1, 2, "", tree=ws.tree)
        think, step, _ = program_answer(messages, ok, 1)
        assert "!= None" in think and "== None" in think, think
        assert apply_action(ws, step).status == "ok"
        verdict = verify_step(ws, ok, use_cache=False)
        assert verdict.scope is None and verdict.status == "passed", verdict.tests
        assert reached(ok, verdict.tree)
    finally:
        cleanup(ws)
