"""Question wording from a program: a natural sentence and a mechanical op-by-op spelling,
and the grammar pass every assembled wording (procedural or template) goes through."""

from __future__ import annotations

import re

from verilearn_assets.analysis.sources.procedural.operators import BY_NAME
from verilearn_assets.analysis.sources.procedural.program import SOURCE, Node, Program, to_tree
from verilearn_assets.analysis.sources.procedural.types import ANSWER_FORMATS, TABLE

# --- grammar pass ----------------------------------------------------------------------------
# Wording assembled from parts can stack two parentheticals ("... (the smallest one if
# several tie) (the smallest one if tied)"), put a frame around a clause that is already a
# question ("What is how many ...") or end up with no or two question marks (issue 24).
_STACKED = re.compile(r"\(([^()]*)\)\s*\(([^()]*)\)")
_WHAT_IS_CLAUSE = re.compile(r"\bwhat is (how many|how much|whether|which|what)\b", re.IGNORECASE)
_DOUBLED = re.compile(r"\b(\w+) \1\b", re.IGNORECASE)


_NAMES = re.compile(r"\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)")  # quoted column names and levels


def grammar_problems(text: str) -> list[str]:
    """What reads wrong in `text`: each problem is one short phrase naming the rule.
    Quoted names are data, not wording (a column may be called "Survived?")."""
    names = iter(range(10**6))
    text = _NAMES.sub(lambda _: f"NAME{next(names)}", text)  # two names never read as one
    out = []
    if _STACKED.search(text):
        out.append("stacked parentheticals")
    m = _WHAT_IS_CLAUSE.search(text)
    if m:
        out.append(f"a question framed around a question ({m.group(0)!r})")
    n = text.count("?")
    if n != 1:
        out.append(f"{n} question marks (a question asks one thing: exactly one)")
    d = _DOUBLED.search(text)
    if d and not d.group(1).isdigit():
        out.append(f"doubled word {d.group(0)!r}")
    return out


def tidy(text: str) -> str:
    """The mechanical repairs: stacked parentheticals merged into one (a repeated note kept
    once), "What is how many X?" asked as "How many X?"."""
    while True:
        m = _STACKED.search(text)
        if m is None:
            break
        a, b = m.group(1).strip(), m.group(2).strip()
        if b == a or b in a:
            merged = a
        elif a in b:
            merged = b
        elif "tie" in a and "tie" in b:  # two tie-break notes: one rule, said once
            merged = "each time the smallest one if several tie"
        else:
            merged = f"{a}; {b}"
        text = text[: m.start()] + f"({merged})" + text[m.end() :]
    text = re.sub(
        r"(^|[.?!]\s+)What is (how many|how much|whether|which|what)\b",
        lambda m: m.group(1) + m.group(2)[0].upper() + m.group(2)[1:],
        text,
    )
    return text


def decision_options(op: str) -> list[str]:
    """The method names a decision operator's rule can return, in the order its code
    names them: the only options a question about it may offer."""
    return list(dict.fromkeys(re.findall(r"'(\w+)'", BY_NAME[op].code)))


def _or_list(options: list[str]) -> str:
    quoted = [f"'{o}'" for o in options]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _quote(col: str) -> str:
    return f'"{col}"'


def _conditions(node: Node | None) -> list[str]:
    out: list[str] = []
    while node is not None:
        spec = BY_NAME[node.op]
        out.append(spec.phrase.format(c0=_quote(node.cols[0])))
        node = node.args[0]
    return list(reversed(out))


# How an analyst names a transformed series: the transform as a noun phrase over `{x}`.
NOUNS: dict[str, str] = {
    "absolute": "the absolute values of {x}",
    "signed_log": "the signed logs, sign(v)*log(1+|v|), of {x}",
    "square": "the squares of {x}",
    "cube_root": "the cube roots of {x}",
    "zscore": "the z-scores (sample standard deviation) of {x}",
    "minmax_scale": "the 0-to-1 min-max rescaling of {x}",
    "percent_rank": "the percentile ranks (ties averaged) of {x}",
    "center": "the deviations from the mean of {x}",
    "clip_tukey": "{x}, clipped to the Tukey fences (1.5 IQR beyond the linear-interpolated "
    "quartiles)",
    "drop_tukey_outliers": "{x} inside the Tukey fences (1.5 IQR beyond the linear-interpolated "
    "quartiles)",
    "upper_half": "the part of {x} above its median",
    "sort_ascending": "{x} sorted ascending",
    "first_difference": "the successive differences, in table order, of {x}",
    "running_total": "the running total, in table order, of {x}",
}
NESTED_TRANSFORMS = 2  # longer chains are listed as steps instead of nested


def _transformed(base: str, ops: list[str]) -> str:
    """`ops` (first applied first) over the phrase `base`, as an analyst would say it."""
    if len(ops) <= NESTED_TRANSFORMS:
        out = base
        for op in ops:
            out = NOUNS[op].format(x=out)
        return out
    steps = ", then ".join(BY_NAME[op].phrase for op in ops)
    return f"{base} after these steps: {steps}"


class _Phraser:
    def __init__(self) -> None:
        self.defines: list[str] = []
        self.memo: dict[str, str] = {}

    def fields(self, node: Node) -> dict[str, str]:
        f = {f"c{i}": _quote(c) for i, c in enumerate(node.cols)}
        for i, arg in enumerate(node.args):
            if BY_NAME[node.op].inputs[i] == TABLE:
                conds = _conditions(arg)
                f[f"a{i}"] = " where " + " and ".join(conds) if conds else ""
                f["w"] = "".join(f" and {c}" for c in conds)
            else:
                assert arg is not None
                f[f"a{i}"] = self.phrase(arg)
        return f

    def phrase(self, node: Node) -> str:
        if node.key not in self.memo and BY_NAME[node.op].family == "transform":
            ops: list[str] = []
            base: Node = node
            while BY_NAME[base.op].family == "transform":
                ops.append(base.op)
                assert base.args[0] is not None
                base = base.args[0]
            self.memo[node.key] = _transformed(self.phrase(base), list(reversed(ops)))
        if node.key not in self.memo:
            spec = BY_NAME[node.op]
            f = self.fields(node)
            if "define" in spec.extra:
                self.defines.append(spec.extra["define"].format(**f))
            self.memo[node.key] = spec.phrase.format(**f)
        return self.memo[node.key]


def natural_question(program: Program, digits: int) -> str:
    """Defines shared splits/pairs first, then asks for the root value in plain words."""
    root = to_tree(program)
    phraser = _Phraser()
    body = phraser.phrase(root)
    frame = ANSWER_FORMATS[program.output_type].frame
    if BY_NAME[root.op].family == "decision":  # offer only what this rule can choose
        frame = frame.split("? ", 1)[0] + f"? Answer {_or_list(decision_options(root.op))}."
    sentence = frame.format(p=body, d=digits)
    sentence = sentence[0].upper() + sentence[1:]
    text = tidy(" ".join([*phraser.defines, sentence]))
    problems = grammar_problems(text)
    if problems:
        raise ValueError(f"program {' -> '.join(program.ops)}: wording {text!r}: {problems}")
    return text


def mechanical_question(program: Program, digits: int) -> str:
    """The chain spelled out step by step with operator names and bound columns."""
    parts = []
    for i, step in enumerate(program.steps):
        args = ["df" if ref == SOURCE else f"x{ref + 1}" for ref in step.inputs]
        args += [f"col={c!r}" for c in step.cols]
        parts.append(f"x{i + 1} = {step.op}({', '.join(args)})")
    last = f"x{len(program.steps)}"
    fmt = ANSWER_FORMATS[program.output_type].expr.format(v=last, d=digits)
    parts.append(f"answer = {fmt}")
    return "; ".join(parts)
