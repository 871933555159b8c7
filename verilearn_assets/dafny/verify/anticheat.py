"""Rejecting candidates that could verify without doing the work.

A candidate is a model's answer: a method body (writer, annotator) or a whole program (an
`llm` proposal), and the program it makes with the reference it must keep. Every rule
reads the *tokens* of the candidate (`lang/lexer.py`), never the text of comments, strings or
char literals, so `var note := "we never assume anything"` passes and `var c := '"'; var
u := "/*"; assume false; var t := "*/";` does not. Each way to fool the verifier has its
own failure class, so reports show which trick a model tried:

- `assume`: an `assume` statement (any form: `assume false;`, `assume {:axiom} P;`);
- `axiom`: an `{:axiom}` attribute; `verify`: a `{:verify …}` attribute whatever its
  argument (`{:verify false}`, `{:verify (false)}`); `extern`: `{:extern …}`;
- `attribute`: any other attribute outside `ALLOWED_ATTRIBUTES` (`{:opaque}`, `{:fuel}`,
  `{:inline}`, `{:nowarn}` …): an allowlist, so a new proof-changing attribute is refused
  before anyone knows of it;
- `bodiless_loop`: a `while` without a body (Dafny 2.3 verifies it and assumes the negated
  guard: `while true` proves `false`);
- `bodiless_forall`: a `forall` statement without a body (with `ensures`: an axiom);
- `nonterminating`: `decreases *` (partial correctness: a loop that never ends proves any
  postcondition);
- `expect`: an `expect` statement (Dafny 4 assumes what it checks at run time);
- `unlexable`: a character Dafny does not lex (a Cyrillic `а` in `аssume`), or an
  unterminated string, char or comment;
- `no_body` / `injection`: a body answer that is not one `{ … }` block, or that has code
  after its closing brace or declarations inside (an early `}` injecting declarations);
- `bodiless_decl`: a function/lemma/method without a body that the reference lacks (an
  unproved lemma is an axiom in disguise), or whose reference body the candidate left out
  (Dafny 2.3 accepts a bodiless method without proving its ensures);
- `spec_changed`: a signature, requires/ensures/modifies/reads/decreases clause of a
  callable, or any other declaration (the header) differs from the reference, compared
  on tokens; a removed or renamed one counts too. New declarations *with* bodies (helper
  lemmas, functions) are allowed in whole programs: Dafny checks them.

`screen(candidate, role)` is the pure, verifier-free entry point (cheap: the benchmark
times it per candidate); `check_candidate(reference, program)` compares a whole program
with its reference; `forbidden_constructs(text)` lists the token rules that fire at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from verilearn_assets.dafny.lang.lexer import Token, code_tokens
from verilearn_assets.dafny.lang.syntax import (
    DECL_KINDS,
    Decl,
    closing,
    declarations,
    normalize,
    statement_head,
    strip_comments,
)

CheatClass = Literal[
    "assume",
    "axiom",
    "verify",
    "extern",
    "attribute",
    "bodiless_loop",
    "bodiless_forall",
    "nonterminating",
    "expect",
    "unlexable",
    "no_body",
    "injection",
    "bodiless_decl",
    "spec_changed",
]
CHEAT_CLASSES: tuple[str, ...] = CheatClass.__args__  # type: ignore[attr-defined]
# Attributes a candidate may write: they steer the prover's search (triggers, induction
# hints), never what it proves. Everything else is refused.
ALLOWED_ATTRIBUTES = frozenset({"trigger", "induction"})
_NAMED_ATTRIBUTES = {"axiom": "axiom", "verify": "verify", "extern": "extern"}
_CALLABLES = ("function", "predicate", "lemma", "method", "constructor")
# Keywords that start a declaration: none may appear inside a body answer.
_DECL_WORDS = frozenset(DECL_KINDS) | {"include", "import", "refines"}
Role = Literal["writer", "annotator", "body", "program"]
BODY_ROLES = ("writer", "annotator", "body")


class CheatFinding(BaseModel):
    cheat: CheatClass
    detail: str


def _has_block(toks: Sequence[Token], i: int, *, quantifier: bool = False) -> bool | None:
    """Whether the `while`/`forall` at `i` has a body block before its statement ends.
    With `quantifier`, a `::` on the way means it is an expression (None: no statement)."""
    if i + 1 < len(toks) and toks[i + 1].text == "{":  # `while { case … }`: alternative loop
        return True
    block, seen = statement_head(toks, i)
    return None if quantifier and "::" in seen else block


def _line(tok: Token, text: str) -> int:
    return text.count("\n", 0, tok.start) + 1


def _token_hits(text: str) -> list[tuple[str, str]]:
    """(class, what) for every token rule that fires in `text`."""
    toks = code_tokens(text)
    hits: list[tuple[str, str]] = []
    for i, t in enumerate(toks):
        prev = toks[i - 1].text if i else ";"
        if t.kind == "error":
            shown = t.text[:12].encode("unicode_escape").decode()
            hits.append(("unlexable", f"{shown!r} at line {_line(t, text)}"))
        elif t.kind == "attr":
            name = toks[i + 1].text if i + 1 < len(toks) and toks[i + 1].kind == "ident" else "?"
            if name not in ALLOWED_ATTRIBUTES:
                hits.append((_NAMED_ATTRIBUTES.get(name, "attribute"), f"{{:{name}}}"))
        elif t.kind != "ident" or prev == ".":
            continue
        elif t.text == "assume":
            hits.append(("assume", "assume"))
        elif t.text == "expect" and prev in (";", "{", "}"):
            hits.append(("expect", "expect"))
        elif t.text == "decreases" and i + 1 < len(toks) and toks[i + 1].text == "*":
            hits.append(("nonterminating", "decreases *"))
        elif t.text == "while" and not _has_block(toks, i):
            hits.append(("bodiless_loop", f"while without a body at line {_line(t, text)}"))
        elif t.text == "forall" and prev in (";", "{", "}"):
            if _has_block(toks, i, quantifier=True) is False:
                hits.append(("bodiless_forall", f"forall statement at line {_line(t, text)}"))
    return hits


def _findings(hits: Counter) -> list[CheatFinding]:
    by_class: dict[str, list[str]] = {}
    for (cheat, what), n in hits.items():
        if n > 0:
            by_class.setdefault(cheat, []).append(what if n == 1 else f"{what} x{n}")
    return [
        CheatFinding(cheat=c, detail="; ".join(sorted(by_class[c])))  # type: ignore[arg-type]
        for c in CHEAT_CLASSES
        if c in by_class
    ]


def forbidden_constructs(text: str) -> list[CheatFinding]:
    """Every token rule that fires in `text` at all (targets, gold programs, proposals)."""
    return _findings(Counter(_token_hits(text)))


def added_constructs(reference: str, candidate: str) -> list[CheatFinding]:
    """The token rules firing in `candidate` more often than in `reference`."""
    hits = Counter(_token_hits(candidate))
    hits.subtract(Counter(_token_hits(reference)))
    return _findings(hits)


def body_shape(body: str) -> list[CheatFinding]:
    """A body answer must be exactly one `{ … }` block with no declaration inside: an empty
    answer leaves the method bodiless (verified by Dafny 2.3 without its ensures), and code
    after an early `}` injects declarations into the program."""
    toks = code_tokens(body)
    if not toks or toks[0].text != "{":
        return [CheatFinding(cheat="no_body", detail="the answer is not one { … } block")]
    close = closing(toks, 0)
    if close >= len(toks):
        return [CheatFinding(cheat="no_body", detail="the answer's { is never closed")]
    found = []
    if close + 1 < len(toks):
        after = " ".join(t.text for t in toks[close + 1 : close + 9])
        found.append(CheatFinding(cheat="injection", detail=f"code after the body: {after}"))
    inner = [
        t.text
        for k, t in enumerate(toks[1:close], 1)
        if t.kind == "ident" and t.text in _DECL_WORDS and toks[k - 1].text != "."
    ]
    if inner:
        found.append(CheatFinding(cheat="injection", detail=f"declaration in a body: {inner}"))
    return found


def screen(candidate: str, role: Role = "body") -> list[CheatFinding]:
    """The verifier-free screen of one model answer (empty: clean).

    `writer`/`annotator`/`body`: `candidate` is a method body; `program`: a whole program
    (every callable must have a body). Pure and cheap: no verifier, no reference."""
    if role in BODY_ROLES:
        return body_shape(candidate) + forbidden_constructs(candidate)
    if role != "program":
        raise ValueError(f"anti-cheat screen: role must be one of {BODY_ROLES} or program")
    found = forbidden_constructs(candidate)
    try:
        decls = declarations(strip_comments(candidate))
    except ValueError as exc:
        return [*found, CheatFinding(cheat="spec_changed", detail=f"unreadable: {exc}")]
    bodiless = [d.qualified for d in decls if d.kind in _CALLABLES and d.body is None]
    if bodiless:
        found.append(CheatFinding(cheat="bodiless_decl", detail=f"no body: {bodiless}"))
    return found


def _by_name(decls: list[Decl]) -> dict[str, Decl]:
    return {f"{d.kind}:{d.qualified}": d for d in decls}


def check_candidate(reference: str, candidate: str) -> list[CheatFinding]:
    """Every cheat in the program `candidate` relative to `reference` (empty: clean)."""
    findings = added_constructs(reference, candidate)
    ref_text, cand_text = strip_comments(reference), strip_comments(candidate)
    try:
        ref_decls, cand_decls = declarations(ref_text), declarations(cand_text)
    except ValueError as exc:  # unbalanced braces: the verifier will reject it anyway
        findings.append(CheatFinding(cheat="spec_changed", detail=f"unreadable: {exc}"))
        return findings
    ref, cand = _by_name(ref_decls), _by_name(cand_decls)
    for key, decl in cand.items():
        if key not in ref and decl.body is None and decl.kind in _CALLABLES:
            findings.append(CheatFinding(cheat="bodiless_decl", detail=f"new bodiless {key}"))
    changed = sorted(set(ref) - set(cand))  # added helpers with bodies are verified too
    for key in sorted(set(ref) & set(cand)):
        r, c = ref[key], cand[key]
        if r.kind in ("class", "module", "trait"):
            continue  # members are compared one by one
        if r.kind in _CALLABLES and r.body is not None and c.body is None:
            findings.append(CheatFinding(cheat="bodiless_decl", detail=f"body left out of {key}"))
            continue
        if r.body is None or r.kind in ("function", "predicate") and not _is_target(r):
            same = normalize(r.text) == normalize(c.text)
        else:
            same = normalize(r.signature) == normalize(c.signature)
        if not same:
            changed.append(key)
    if changed:
        findings.append(CheatFinding(cheat="spec_changed", detail=", ".join(sorted(changed))))
    return findings


def _is_target(decl: Decl) -> bool:
    """Function bodies are specifications unless compiled (`function method`) code."""
    return decl.function_method
