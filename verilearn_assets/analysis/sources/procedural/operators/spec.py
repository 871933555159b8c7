"""What an operator is: typed inputs and output, column slots, code and wording templates."""

from __future__ import annotations

from dataclasses import dataclass, field

from verilearn_assets.analysis.sources.procedural.types import VType


@dataclass(frozen=True)
class OpSpec:
    """One operator.

    Templates are `str.format` strings: `{a0}`, `{a1}`... are the input variables (the table
    input is `df` or a variable), `{c0}`, `{c1}`... the bound column names as Python
    literals. `phrase` is natural wording with the same placeholders (inputs replaced by
    their own phrases, columns by quoted names); table inputs render as `{a0}` = a
    " over rows where ..." suffix or nothing. Filters give a `condition` instead.
    """

    name: str
    family: str
    inputs: tuple[VType, ...]
    output: VType
    code: str
    phrase: str
    slots: tuple[str, ...] = ()  # column roles, one per `{cN}`
    idempotent: bool = False  # f(f(x)) == f(x): the reducer drops the repeat
    order_insensitive: bool = False  # result ignores row order: a sort before it is dropped
    symmetric_pair: bool = False  # result unchanged if the pair's two columns swap
    commutative: tuple[int, ...] = ()  # input positions that may be reordered freely
    distinct_inputs: bool = False  # inputs must be different values
    extra: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def signature(self) -> str:
        ins = ", ".join(str(t) for t in self.inputs)
        cols = "".join(f", col:{r}" for r in self.slots)
        return f"{self.name}({ins}{cols}) -> {self.output}"


def op(
    name: str,
    family: str,
    inputs: tuple[VType, ...],
    output: VType,
    code: str,
    phrase: str,
    **kw: object,
) -> OpSpec:
    """Short constructor used by the family modules."""
    return OpSpec(
        name=name, family=family, inputs=inputs, output=output, code=code, phrase=phrase, **kw
    )  # type: ignore[arg-type]
