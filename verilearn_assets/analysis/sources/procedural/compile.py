"""Compile a program to plain pandas code that grounds every intermediate value in a hook.

Each step is one physical line `xN = <expr>` followed by
`hook(xN, "xN = <expr>", name="xN", depends_on=[...])`, so the hooked code line is
literally a line of the executed code; the answer is made JSON-friendly and submitted once.
"""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators import BY_NAME
from verilearn_assets.analysis.sources.procedural.program import SOURCE, Program
from verilearn_assets.analysis.sources.procedural.types import ANSWER_FORMATS


def _var(i: int) -> str:
    return f"x{i + 1}"


def compile_program(program: Program, digits: int = 4) -> str:
    """Pandas/numpy/scipy code using the sandbox names `df`, `pd`, `np`, `stats`, `hook`,
    `submit`."""
    lines = [f"# procedural program: {' -> '.join(program.ops)}"]
    for i, step in enumerate(program.steps):
        spec = BY_NAME[step.op]
        fields = {
            f"a{k}": "df" if ref == SOURCE else _var(ref) for k, ref in enumerate(step.inputs)
        }
        fields.update({f"c{k}": repr(col) for k, col in enumerate(step.cols)})
        line = f"{_var(i)} = {spec.code.format(**fields)}"
        deps = list(dict.fromkeys(_var(ref) for ref in step.inputs if ref != SOURCE))
        lines.append(line)
        lines.append(f"hook({_var(i)}, {line!r}, name={_var(i)!r}, depends_on={deps!r})")
    last = _var(len(program.steps) - 1)
    final = f"final = {ANSWER_FORMATS[program.output_type].expr.format(v=last, d=digits)}"
    lines.append(final)
    lines.append(f"hook(final, {final!r}, name='final', depends_on={[last]!r})")
    lines.append("submit(final)")
    return "\n".join(lines) + "\n"
