"""The Dafny lexer (`dafny/lang/lexer.py`) and the syntax helpers built on it
(`dafny/lang/syntax.py`).

Property tests with seeded random inputs (hypothesis is not installed here): the token
stream round-trips every bundled corpus file and adversarial texts assembled from the
fragments that fool character-level readers (char literals, verbatim strings, escapes,
nested comments, attributes); comments and whitespace never change `normalize`; hints
never change `same_code`, and a changed code token always does.
"""

from __future__ import annotations

import random

import pytest

from verilearn_assets.dafny.corpus.loader import BUNDLED, load_bundled
from verilearn_assets.dafny.lang.lexer import code_tokens, tokenize, untokenize
from verilearn_assets.dafny.lang.syntax import (
    declarations,
    lemma_names,
    match_brace,
    normalize,
    remove_hints,
    same_code,
    strip_comments,
)

FRAGMENTS = [
    "'\"'",
    "'\\''",
    "'\\\\'",
    "'a'",
    "'\\u0041'",
    '"/*"',
    '"*/"',
    '"//"',
    '"\\""',
    '"a\\\\"',
    '@"a""b"',
    '@"\\"',
    '@"/*"',
    '@""""',
    "/* a /* nested */ b */",
    "// line comment\n",
    "{:trigger f(x)}",
    "{:verify false}",
    "{",
    "}",
    "(",
    ")",
    "x'",
    "Cons?",
    "assume",
    "while",
    "true",
    ":=",
    "==>",
    "<==>",
    "!in",
    "..",
    "1_000",
    "0xFF",
    "1.5",
    " ",
    "\n",
    "\t",
    ";",
    "\u0430",
    '"unterminated',
    "/* unterminated",
    "'",
    "@",
]


def _random_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(n))


@pytest.mark.parametrize("path", sorted(BUNDLED.glob("*.dfy")), ids=lambda p: p.name)
def test_tokens_round_trip_every_corpus_file(path) -> None:
    text = path.read_text()
    toks = tokenize(text)
    assert untokenize(toks) == text
    assert all(t.kind != "error" for t in toks), [t for t in toks if t.kind == "error"]
    assert [t.start for t in toks] == sorted({t.start for t in toks})  # contiguous, no overlap


def test_tokens_round_trip_adversarial_texts() -> None:
    rng = random.Random(23)
    for _ in range(2000):
        text = _random_text(rng, rng.randint(0, 30))
        toks = tokenize(text)
        assert untokenize(toks) == text, text
        offset = 0
        for t in toks:
            assert t.start == offset and t.text, (text, t)
            offset = t.end


def test_kinds_dafny_reads() -> None:
    src = (
        'var c := \'"\'; var u := "/*"; assume false; var t := "*/"; '
        "var v := @\"a\"\"b\"; /* x /* y */ z */ {:verify false} x' '\\''"
    )
    kinds = [(t.kind, t.text) for t in code_tokens(src)]
    assert ("char", "'\"'") in kinds and ("string", '"/*"') in kinds
    assert ("ident", "assume") in kinds and ("verbatim", '@"a""b"') in kinds
    assert ("attr", "{:") in kinds and ("ident", "x'") in kinds and ("char", "'\\''") in kinds
    assert not any(k == "block_comment" for k, _ in kinds)  # comments are not code
    assert [t.kind for t in tokenize("/* a /* b */ c */")] == ["block_comment"]
    assert [t.kind for t in tokenize("\u0430ssume")][0] == "error"  # a Cyrillic а


def test_comments_and_whitespace_never_change_normalize() -> None:
    rng = random.Random(7)
    for ex in load_bundled()[:12]:
        toks = code_tokens(ex.gold_program)
        noisy = "".join(
            # a comment opens after a blank: `/` then `/* c */` would be a line comment
            t.text + rng.choice([" ", "\n", " /* c */", " // c\n", " /* /* n */ */", "\t"])
            for t in toks
        )
        assert normalize(noisy) == normalize(ex.gold_program), ex.name
        assert strip_comments(noisy).count("/*") == 0


def test_normalize_re_lexes_to_the_same_tokens() -> None:
    """`normalize` drops layout only: lexing its output gives back the same code tokens,
    so two texts normalize alike exactly when Dafny reads the same tokens in both."""
    rng = random.Random(5)
    checked = 0
    for _ in range(2000):
        text = _random_text(rng, rng.randint(1, 25))
        texts = [t.text for t in code_tokens(text)]
        if any(t.kind == "error" for t in code_tokens(text)):
            continue
        assert [t.text for t in code_tokens(normalize(text))] == texts, text
        checked += 1
    assert checked > 500
    assert normalize("a = = b") != normalize("a == b")


def test_match_brace_ignores_braces_in_strings_chars_and_comments() -> None:
    body = '{ var c := \'}\'; var s := "}"; var v := @"}""}"; /* } */ // }\n x := 1; }'
    assert match_brace(body, 0) == len(body)
    trick = "{ var c := '\"'; } lemma L() ensures false { }"
    assert match_brace(trick, 0) == trick.index("}") + 1  # the old reader skipped this `}`
    with pytest.raises(ValueError):
        match_brace("{ x := 1; /* } */", 0)


def test_declarations_ignore_keywords_in_strings() -> None:
    text = 'method M() {\n  var s := @"\nmethod Fake() {\n";\n}\n'
    decls = declarations(text)
    assert [(d.kind, d.name) for d in decls] == [("method", "M")]
    assert decls[0].body is not None and decls[0].body.endswith("}")


def test_hints_never_change_same_code_and_code_always_does() -> None:
    rng = random.Random(11)
    for ex in load_bundled():
        lemmas = lemma_names(ex.gold_program)  # lemma calls are proof steps (the loader's too)
        assert same_code(ex.body, ex.annotated_body, lemmas), ex.name
        assert same_code(remove_hints(ex.annotated_body, lemmas), ex.body), ex.name
        toks = [t for t in code_tokens(ex.body) if t.kind in ("ident", "number")]
        t = rng.choice(toks)
        changed = ex.body[: t.start] + t.text + "9" + ex.body[t.end :]
        assert not same_code(ex.body, changed), (ex.name, t.text)
    one_line = "{ assert true; while true }"
    assert not same_code("{ }", one_line) and not same_code("{ while true }", "{ }")
    assert same_code("{ x := 1; }", "{ assert x == 0 by { L(); } ghost var g := 1; x := 1; }")
