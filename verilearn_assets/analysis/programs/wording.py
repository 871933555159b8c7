"""Question wording from a program: a natural sentence and a mechanical op-by-op spelling."""

from __future__ import annotations

from verilearn_assets.analysis.programs.operators import BY_NAME
from verilearn_assets.analysis.programs.program import SOURCE, Node, Program, to_tree
from verilearn_assets.analysis.programs.types import ANSWER_FORMATS, TABLE


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
    "clip_tukey": "{x}, clipped to the Tukey fences (1.5 IQR beyond the quartiles)",
    "drop_tukey_outliers": "{x} inside the Tukey fences (1.5 IQR beyond the quartiles)",
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
    sentence = frame.format(p=body, d=digits)
    sentence = sentence[0].upper() + sentence[1:]
    return " ".join([*phraser.defines, sentence])


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
