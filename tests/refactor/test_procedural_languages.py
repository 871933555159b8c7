"""Procedural generation in every corpus language (issue 26): the JavaScript, Go, Rust,
Java and C demo corpora yield function-scoped and rename tasks, run by the real generator
in the bwrap jail with each corpus's own test runner; a rename that would also rename
another binding of its name is refused in every language.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from refactor_support import refactor_config

from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.rollout.prompts import load_prompts, render_messages
from verilearn_assets.refactor.rollout.teachers import program_answer
from verilearn_assets.refactor.sources.candidate import Candidate, matching_files, run_candidate
from verilearn_assets.refactor.sources.catalog import Repo, load_catalog, read_corpus
from verilearn_assets.refactor.sources.procedural import (
    procedural_candidates,
    rename_rule,
    rename_targets,
)
from verilearn_assets.refactor.sources.quality import diff_lines, finalize
from verilearn_assets.refactor.sources.structure import function_spans
from verilearn_assets.refactor.verify import toolchains
from verilearn_assets.refactor.verify.runner import TestSpec, cleanup, prepare_workspace, run_tests

CORPORA = {"jsinventory": "javascript", "gotally": "go", "rustshelf": "rust",
           "javagrades": "java", "cringbuf": "c"}  # fmt: skip


@pytest.fixture(scope="module")
def repos() -> dict[str, Repo]:
    found = {r.name: r for r in read_corpus().repos if r.name in CORPORA}
    assert sorted(found) == sorted(CORPORA)
    missing = [lang for lang in CORPORA.values() if lang not in toolchains.installed()]
    if missing:
        pytest.skip(f"toolchains not installed: {missing} (make refactor-toolchains)")
    return found


@pytest.fixture(scope="module")
def jail(tmp_path_factory: pytest.TempPathFactory) -> RefactorConfig:
    return refactor_config("bwrap", tmp_path_factory.mktemp("procedural-languages"))


def _tests_pass(repo: Repo, config: RefactorConfig) -> bool:
    ws = prepare_workspace(f"before-{repo.name}", repo.path, config)
    try:
        return run_tests(ws, TestSpec(argv=list(repo.test_command)), use_cache=False).status == (
            "passed"
        )
    finally:
        cleanup(ws)


@pytest.mark.parametrize("name", list(CORPORA))
def test_each_corpus_yields_a_scoped_and_a_rename_task(
    name: str, repos: dict[str, Repo], jail: RefactorConfig
) -> None:
    """The generator's first function-scoped candidate and first two renames, run in the
    jail: the scoped one and at least one rename accepted (each step changed the code, the
    corpus's tests pass after), kept by `finalize` (the scoped target changes only lines
    of its function, the rename renames the definition and binds nothing else); the tests
    passed before too. A rename the tests refuse stays rejected with their verdict (Java's
    `add` also renames `List.add`: its tests do not build)."""
    repo = repos[name]
    assert _tests_pass(repo, jail)
    rules = load_catalog()
    gen = jail.generation.model_copy(
        update={"max_function_scoped_per_repo": 1, "max_renames_per_repo": 2}
    )
    matched = matching_files(repo, rules, jail)
    made = list(procedural_candidates(repo, matched, {r.id: r for r in rules}, gen, 0))
    scoped = [c for c in made if "@" in c.steps[0][0].id]
    renames = [c for c in made if c.steps[0][0].id.startswith("rename-")]
    assert len(scoped) == 1 and len(renames) == 2, [c.steps[0][0].id for c in made]
    tasks = [run_candidate(c, jail, list(repo.test_command)) for c in (*scoped, *renames)]
    kept = finalize(tasks, {repo.name: repo.path})
    assert (kept[0].status, kept[0].reason) == ("accepted", ""), kept[0].reason
    accepted = [t for t in kept[1:] if t.status == "accepted"]
    assert accepted and all(t.reason == "" for t in accepted), [t.reason for t in kept]
    assert all(t.reason.startswith("tests failed") for t in kept[1:] if t.status != "accepted")
    scoped_task, rename_task = kept[0], accepted[0]
    (path,) = scoped[0].steps[0][1]
    function = scoped[0].steps[0][0].id.split("@")[1]
    spans = function_spans((repo.path / path).read_bytes(), function, CORPORA[name])
    changed = diff_lines(scoped_task.target_diff)
    assert list(changed) == [path] and changed[path]
    assert all(any(a <= n <= b for a, b in spans) for n in changed[path])
    # the program teacher reads the scope from the rule (a language's function kinds)
    messages = render_messages(load_prompts(), scoped_task, "", 1, 1, "", repo.path)
    think, _, _ = program_answer(messages, scoped_task, 1)
    assert f"inside the function {function} of {path}" in think
    assert rename_task.instruction.startswith("Rename the ")
    assert rename_task.difficulty.matches > 1  # the definition and its uses


# corpus → (file, text replaced, by, the name a rename takes, its kind, the binding line's
# text); each edit binds the name a second time (a local, a loop variable, a parameter)
# and keeps the tests passing; Java's corpus has one already
COLLISIONS = {
    "jsinventory": ("src/report.js", "  var found = [];\n",
                    "  var found = [];\n  var total = 0;\n", "total", "function",
                    "  var total = 0;"),
    "gotally": ("tally/text.go",
                "\tfor _, w := range want {\n\t\tif strings.Index(text, w) >= 0 {\n"
                "\t\t\tout = append(out, w)",
                "\tfor _, Count := range want {\n\t\tif strings.Index(text, Count) >= 0 {\n"
                "\t\t\tout = append(out, Count)", "Count", "function",
                "\tfor _, Count := range want {"),
    "rustshelf": ("src/label.rs", "pub fn mark(count: usize) -> String {\n    let number = count",
                  "pub fn mark(spine: usize) -> String {\n    let number = spine", "spine",
                  "function", "pub fn mark(spine: usize) -> String {"),
    "javagrades": ("src/grades/Letters.java", "", "", "letter", "method",
                   "    public static boolean passing(String letter) {"),
    "cringbuf": ("src/text.c", "char c) {", "char ring_sum) {", "ring_sum", "function",
                 "int count_char(const char *text, char ring_sum) {"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CORPORA))
def test_a_rename_that_would_rename_another_binding_is_refused(
    name: str, repos: dict[str, Repo], jail: RefactorConfig, tmp_path: Path
) -> None:
    """The cheapest wrong rename: the rule renames the other binding with the definition,
    consistently, so the code still builds and the tests pass; the generator never offers
    it (`rename_targets`) and `finalize` rejects it, naming the binding."""
    language = CORPORA[name]
    rel, old, new, target, kind, marker = COLLISIONS[name]
    copy = tmp_path / name
    shutil.copytree(repos[name].path, copy)
    text = (copy / rel).read_text()
    if name == "cringbuf":  # the parameter's one use
        text = text.replace("*p == c)", "*p == ring_sum)")
    assert old in text
    (copy / rel).write_text(text.replace(old, new, 1))
    bound = (copy / rel).read_text().splitlines().index(marker) + 1
    repo = repos[name].model_copy(update={"path": copy})
    assert target not in {t.old for t in rename_targets(repo)}
    package = "tally" if language == "go" else None
    new_name = f"{target}_v2" if language in ("rust", "c") else f"{target}V2"
    rule = rename_rule(target, new_name, kind, language, package)
    task = run_candidate(
        Candidate(repo, "procedural", ((rule, ()),)), jail, list(repo.test_command)
    )
    assert task.status == "accepted", task.reason  # the tests cannot tell
    (kept,) = finalize([task], {repo.name: copy})
    assert kept.status == "rejected"
    assert kept.reason.startswith(f"renames {target}, but the name also binds: "), kept.reason
    assert f"at {rel}:{bound}" in kept.reason, (kept.reason, bound)


# corpus → (rule, the file it changes, a function of that file, a name the corpus defines)
LIES = {
    "jsinventory": ("js-var-to-let", "src/pricing.js", "total", "cheapest"),
    "cringbuf": ("c-return-paren", "src/ring.c", "ring_new", "ring_sum"),
}


@pytest.mark.parametrize("name", list(LIES))
def test_targets_contradicting_their_instruction_are_rejected_in_any_language(
    name: str, repos: dict[str, Repo], jail: RefactorConfig
) -> None:
    """The cheapest lies that pass the tests: a whole-file rule said to touch one function,
    a rewrite said to be a rename. Both are accepted by the runner (the tests pass) and
    rejected by `finalize`, which reads the function's span and the definition with
    ast-grep in the corpus's language."""
    repo = repos[name]
    rule_id, path, function, defined = LIES[name]
    rule = next(r for r in load_catalog() if r.id == rule_id)
    text = rule.instruction.rstrip(".")
    language = CORPORA[name]
    new = f"{defined}_v2" if language == "c" else f"{defined}V2"
    lies = {
        "scope": f"{text}, but only in the function {function} of {path}.",
        "rename": f"Rename the function {defined} to {new} everywhere in the repository.",
    }
    for what, words in lies.items():
        lie = rule.model_copy(
            update={
                "id": f"{rule.id}-{what}-lie",
                "examples": rule.examples.model_copy(update={"instruction": words}),
            }
        )
        task = run_candidate(
            Candidate(repo, "procedural", ((lie, (path,)),)), jail, list(repo.test_command)
        )
        assert task.status == "accepted", task.reason
        (kept,) = finalize([task], {repo.name: repo.path})
        assert kept.status == "rejected", what
        if what == "scope":
            (a, b), *_ = function_spans((repo.path / path).read_bytes(), function, language)
            stray = sorted(n for n in diff_lines(task.target_diff)[path] if not a <= n <= b)
            assert stray and kept.reason == (
                f"says only in the function {function} of {path} but changes lines {stray}"
            )
        else:
            assert kept.reason == (
                f"asks to rename {defined} to {new} but the definition is not renamed"
            )
