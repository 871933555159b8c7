"""The `llm` source: a model proposes new spec + body programs; a proposal becomes writer
and annotator tasks only when Dafny proves it and no anti-cheat construct appears.

`propose` is any callable from chat messages to text (the vLLM client in the asset, a
scripted model in tests). Every proposal is kept: rejected ones as rejected tasks with the
reason (no fenced program, the anti-cheat screen on the whole program — `assume`,
attributes off the allowlist, bodiless loops/foralls/declarations, … —, a vacuous spec
(`requires false`, no postcondition but `ensures true`), no method, the verifier's
verdict, or `context_overflow` when the request cannot fit the model's window). A proven
proposal then goes through `template_tasks`, so its spec must also reject the generated
wrong bodies (the empty body among them: a postcondition the empty body satisfies is
weak) and an annotator task needs something to annotate.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from verilearn_assets.core.llm.fit import FAILURE_CLASS, ContextOverflow
from verilearn_assets.core.records import content_hash
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import examples_from_program
from verilearn_assets.dafny.lang.lexer import code_tokens
from verilearn_assets.dafny.lang.syntax import callables, strip_comments
from verilearn_assets.dafny.records import DafnyExample, DafnyTask
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.anticheat import screen as screen_program
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

Propose = Callable[[list[dict[str, str]]], str]
SYSTEM = (
    "You write small, complete Dafny 2.3 programs that verify: one method with requires/"
    "ensures clauses, a body, and every loop invariant or assertion it needs; helper "
    "functions must have bodies. Never use assume, {:axiom}, {:verify false} or {:extern}. "
    "Answer with the program in one ```dafny block."
)


def proposal_messages(shots: Sequence[str], seed: int) -> list[dict[str, str]]:
    """A request for one new program, with gold programs from the train split as examples."""
    msgs = [{"role": "system", "content": SYSTEM}]
    for program in shots:
        msgs += [
            {"role": "user", "content": "Write a new small verified Dafny program."},
            {"role": "assistant", "content": prompts.fenced(program)},
        ]
    topic = random.Random(seed).choice(["loops", "arrays", "sequences", "recursion", "sets"])
    msgs.append({"role": "user", "content": f"Write a new small verified Dafny program ({topic})."})
    return msgs


def vacuity(signature: str) -> str | None:
    """Why a method's spec says nothing (None: it says something): a `requires false`
    makes every body correct, and a postcondition that is absent or `true` asks nothing."""
    toks = [t.text for t in code_tokens(signature)]
    clauses: list[tuple[str, list[str]]] = []
    for t in toks:
        if t in ("requires", "ensures", "modifies", "reads", "decreases"):
            clauses.append((t, []))
        elif clauses:
            clauses[-1][1].append(t)
    if any(kind == "requires" and expr == ["false"] for kind, expr in clauses):
        return "requires false"
    if all(expr == ["true"] for kind, expr in clauses if kind == "ensures"):
        return "no postcondition beyond ensures true"
    return None


def screen(text: str) -> tuple[str, str | None]:
    """The proposed program and why it is refused before verification (None: keep)."""
    if "```" not in text:
        return text, "no fenced dafny block"
    program = prompts.answer(text).strip() + "\n"
    cheats = screen_program(program, "program")
    if cheats:
        return program, "anti-cheat: " + "; ".join(f"{c.cheat} ({c.detail})" for c in cheats)
    try:
        decls = callables(strip_comments(program))
    except ValueError as exc:
        return program, f"unparseable: {exc}"
    methods = [d for d in decls if d.kind == "method" and d.body]
    if not methods:
        return program, "no method with a body"
    vacuous = [f"{d.name}: {why}" for d in methods if (why := vacuity(d.signature))]
    if vacuous:
        return program, "vacuous spec: " + "; ".join(vacuous)
    return program, None


def llm_tasks(
    propose: Propose,
    n: int,
    split: str,
    verifier: DafnyVerifier,
    shots: Sequence[str] = (),
    seed: int = 0,
) -> list[DafnyTask]:
    """`n` proposals → tasks (accepted pairings of proven programs, and rejections)."""
    tasks: list[DafnyTask] = []
    kept: list[tuple[str, str]] = []  # (program name, program)
    for i in range(n):
        try:
            text = propose(proposal_messages(shots, seed + i))
        except ContextOverflow as exc:  # this proposal only; the next one is asked
            why = str(exc) if str(exc).startswith(FAILURE_CLASS) else f"{FAILURE_CLASS}: {exc}"
            tasks.append(_rejected(f"llm-overflow-{i}", "", split, why, i))
            continue
        program, reason = screen(text)
        name = f"llm-{content_hash('dafny-llm', program, length=10)}"
        if reason is None:
            verdict = verifier.verify(program)
            if verdict.status != "verified":
                reason = f"proposal does not verify: {verdict.status}"
        if reason is None:
            kept.append((name, program))
        else:
            tasks.append(_rejected(name, program, split, reason, i))
    examples: list[DafnyExample] = []
    for name, program in kept:
        examples += [
            e.model_copy(update={"origin": "llm"})
            for e in examples_from_program(program, name, "plain")
        ]
    for t in template_tasks(examples, {e.id: split for e in examples}, verifier):
        tasks.append(
            t.model_copy(
                update={"source": "llm", "id": DafnyTask.make_id("llm", t.role, t.example_id)}
            )
        )
    return tasks


def _rejected(name: str, program: str, split: str, reason: str, i: int) -> DafnyTask:
    return DafnyTask(
        id=DafnyTask.make_id("llm", "writer", name, str(i)),
        source="llm",
        split=split,  # type: ignore[arg-type]
        status="rejected",
        rejection_reason=reason,
        role="writer",
        example_id=name,
        name=name,
        program=name,
        n_lines=program.count("\n") + 1,
        prefix="",
        suffix="",
        spec="",
        body="",
        target="",
        annotated_body="",
        gold_program=program,
        gold_status="not verified"
        if reason.startswith(("anti", "no ", "unp", FAILURE_CLASS))
        else "failed",
        input_program=program,
    )
