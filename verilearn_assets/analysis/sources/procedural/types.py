"""The type system of procedural programs.

Every value a program computes has one of these types, and an operator may only consume
values of the types it declares. Typing is what lets the grammar search assemble long
chains without producing nonsense such as a p-value fed to a group-by.
"""

from __future__ import annotations

from dataclasses import dataclass

from verilearn_assets.core.records import AnswerSchema


@dataclass(frozen=True, order=True)
class VType:
    """A value type: a kind with an optional parameter, e.g. `Series[numeric]`."""

    kind: str
    param: str = ""

    def __str__(self) -> str:
        return f"{self.kind}[{self.param}]" if self.param else self.kind


TABLE = VType("Table")
NUM_SERIES = VType("Series", "numeric")
CAT_SERIES = VType("Series", "categorical")
NUMBER = VType("Scalar", "number")
COUNT = VType("Scalar", "integer")
PVALUE = VType("Scalar", "pvalue")
FLAG = VType("Bool")
LABEL = VType("Label")
GROUP_VALUES = VType("Groups", "numeric")  # one number per group, indexed by group label
SAMPLES = VType("Samples")  # one numeric column split into two groups (long form)
PAIR = VType("Pair")  # two aligned numeric columns, rows with a gap dropped
EVIDENCE_NORMAL = VType("Evidence", "normality")
EVIDENCE_EQUAL_VAR = VType("Evidence", "equal_variance")
EVIDENCE_SIZE = VType("Evidence", "sample_size")
EVIDENCE_PAIR_NORMAL = VType("Evidence", "pair_normality")
DECISION_LOCATION = VType("Decision", "location_test")
DECISION_SPREAD = VType("Decision", "spread_test")
DECISION_CORRELATION = VType("Decision", "correlation")

ALL_TYPES: tuple[VType, ...] = (
    TABLE,
    NUM_SERIES,
    CAT_SERIES,
    NUMBER,
    COUNT,
    PVALUE,
    FLAG,
    LABEL,
    GROUP_VALUES,
    SAMPLES,
    PAIR,
    EVIDENCE_NORMAL,
    EVIDENCE_EQUAL_VAR,
    EVIDENCE_SIZE,
    EVIDENCE_PAIR_NORMAL,
    DECISION_LOCATION,
    DECISION_SPREAD,
    DECISION_CORRELATION,
)

# A program holds at most one value of these types and every consumer shares it: a test
# decided on evidence about one split must run on that same split.
SHARED_TYPES: frozenset[VType] = frozenset({SAMPLES, PAIR})

# Column roles a binding slot can ask for.
ROLE_NUMERIC = "num"
ROLE_KEY = "key"
ROLES: tuple[str, ...] = (ROLE_NUMERIC, ROLE_KEY)


@dataclass(frozen=True)
class AnswerFormat:
    """How a final value becomes a JSON-friendly answer, and how it is compared."""

    schema: AnswerSchema
    expr: str  # Python expression over `{v}` (the final variable) and `{d}` (digits)
    frame: str  # question frame around the root phrase


_NUMBER_SCHEMA = AnswerSchema(kind="number", rel_tol=1e-6, abs_tol=1e-4)

ANSWER_FORMATS: dict[VType, AnswerFormat] = {
    NUMBER: AnswerFormat(
        _NUMBER_SCHEMA, "round(float({v}), {d})", "What is {p}? Round to {d} decimal places."
    ),
    PVALUE: AnswerFormat(
        _NUMBER_SCHEMA, "round(float({v}), {d})", "What is {p}? Round to {d} decimal places."
    ),
    COUNT: AnswerFormat(
        AnswerSchema(kind="integer", rel_tol=0.0, abs_tol=0.0),
        "int({v})",
        "What is {p}? Answer with an integer.",
    ),
    FLAG: AnswerFormat(
        AnswerSchema(kind="boolean"), "bool({v})", "Is it true that {p}? Answer true or false."
    ),
    LABEL: AnswerFormat(AnswerSchema(kind="string"), "str({v})", "What is {p}?"),
    GROUP_VALUES: AnswerFormat(
        AnswerSchema(kind="mapping", items=_NUMBER_SCHEMA),
        "{{str(k): round(float(val), {d}) for k, val in {v}.items()}}",
        "What is {p}? Give a mapping from group to value, each rounded to {d} decimal places.",
    ),
    DECISION_LOCATION: AnswerFormat(
        AnswerSchema(kind="string"),
        "str({v})",
        "Which test does this procedure select: {p}? Answer with one of "
        "'student', 'welch' or 'mannwhitney'.",
    ),
    DECISION_SPREAD: AnswerFormat(
        AnswerSchema(kind="string"),
        "str({v})",
        "Which test does this procedure select: {p}? Answer 'bartlett' or 'levene'.",
    ),
    DECISION_CORRELATION: AnswerFormat(
        AnswerSchema(kind="string"),
        "str({v})",
        "Which correlation does this procedure select: {p}? Answer 'pearson' or 'spearman'.",
    ),
}
ANSWER_TYPES: frozenset[VType] = frozenset(ANSWER_FORMATS)
