"""Named convention variants: the readings a careful analyst may take where a question is
silent (which tied mode, sample or population spread, Mann-Whitney continuity, ...).

Each variant is a rewrite of the reference code, or (for ID-like columns) a reading of the
table: without the row keys where the code uses one, with them where a wording leaves its
candidate columns implicit. Re-running the reference under every
variant that applies shows whether the answer depends on an unstated choice: an answer that
moves beyond the schema's tolerance must be stated in the wording or accepted through an
alternative, otherwise the question is rejected (`tie_unstated` for a tie-break,
`ambiguous_convention` for any other convention). Pure: no sandbox, no dagster; the code
runs in-process on our own generated programs, as the procedural dry run does.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.id_columns import numeric_id_columns
from verilearn_assets.analysis.sources.procedural.dryrun import run_in_process
from verilearn_assets.core.answers import answers_match, parse_answer

Kind = Literal["tie", "convention"]
Outcome = Literal["same", "alternative", "stated", "moved", "failed"]
REASON = {"tie": "tie_unstated", "convention": "ambiguous_convention"}


@dataclass(frozen=True)
class Convention:
    """One named reading: `pattern` in the reference code becomes `replacement`.

    `stated` are phrases whose presence in the question pins the reference's reading, so an
    answer that moves under this variant is nonetheless what the words ask for.
    """

    name: str
    kind: Kind
    pattern: str
    replacement: str
    stated: tuple[str, ...]
    max_rows: int | None = None  # beyond this many table rows nobody takes this reading
    table_reading: bool = False  # a reading of the table's columns, judged by `_variants`
    prelude: str = ""  # definitions the replacement calls, put before the program

    def applies(self, code: str, n_rows: int = 0) -> bool:
        if self.table_reading:
            return False
        if self.max_rows is not None and n_rows > self.max_rows:
            return False
        return re.search(self.pattern, code) is not None

    def rewrite(self, code: str) -> str:
        return self.prelude + re.sub(self.pattern, self.replacement, code)


_TIE_WORDS = ("if tied", "if several tie", "ties broken", "tie-break")

# --- quartile methods: pandas' linear interpolation (R type 7) is one of several an analyst
# may use for "the quartiles" / "the IQR". Every `.quantile(q)` call becomes
# `.pipe(__quantile_by, q)` (Series or DataFrame, q scalar or list), so a fence or an IQR
# is recomputed with Tukey's hinges, type 6 (Minitab/SPSS) or type 5. The method is a global
# of the prelude: the replacement holds no quote, since it also lands inside the hooks'
# code-line string literals.
QUANTILE_STATED = ("linear interpolation", "linear-interpolated", "linearly interpolated")
QUANTILE_PRELUDE = (
    "def __quantile_one(x, p, method):\n"
    "    x = np.sort(np.asarray(x, dtype=float))\n"
    "    if len(x) == 0:\n"
    "        return float('nan')\n"
    "    if method == 'hinges' and p in (0.25, 0.75):\n"
    "        half = x[: (len(x) + 1) // 2] if p == 0.25 else x[len(x) // 2 :]\n"
    "        return float(np.median(half))\n"
    "    return float(np.quantile(x, p, method='linear' if method == 'hinges' else method))\n"
    "def __quantile_by(obj, q, method=None):\n"
    "    method = method or __QUANTILE_METHOD\n"
    "    if isinstance(obj, pd.DataFrame):\n"
    "        cols = {c: __quantile_by(obj[c], q, method) for c in obj.columns}\n"
    "        return pd.Series(cols) if np.isscalar(q) else pd.DataFrame(cols)\n"
    "    x = obj.dropna().to_numpy(dtype=float)\n"
    "    if np.isscalar(q):\n"
    "        return __quantile_one(x, q, method)\n"
    "    return pd.Series([__quantile_one(x, p, method) for p in q], index=list(q))\n"
)


def _quartile_convention(name: str, method: str) -> Convention:
    return Convention(
        name,
        "convention",
        r"\.quantile\(([^()]*)\)",
        r".pipe(__quantile_by, \1)",
        QUANTILE_STATED,
        prelude=f"__QUANTILE_METHOD = {method!r}\n" + QUANTILE_PRELUDE,
    )


CONVENTIONS: tuple[Convention, ...] = (
    Convention(
        "mode_largest_tied", "tie", r"\.mode\(\)\.iloc\[0\]", ".mode().iloc[-1]", _TIE_WORDS
    ),
    Convention("argmax_last_tied", "tie", r"\.idxmax\(\)", ".iloc[::-1].idxmax()", _TIE_WORDS),
    Convention("argmin_last_tied", "tie", r"\.idxmin\(\)", ".iloc[::-1].idxmin()", _TIE_WORDS),
    # the first k of a ranking (e.g. the top predictors): a tie at the k-th place is broken
    # by position; the variant ranks the reversed series, so tied entries swap places
    Convention(
        "top_k_last_tied",
        "tie",
        r"\.sort_values\(([^()]*)\)\.index\[:(\d+)\]",
        r".iloc[::-1].sort_values(\1).index[:\2]",
        _TIE_WORDS,
    ),
    Convention(
        "std_population",
        "convention",
        r"\.std\(\)",
        ".std(ddof=0)",
        ("sample standard deviation", "ddof", "n - 1", "n-1"),
    ),
    Convention(
        "var_population",
        "convention",
        r"\.var\(\)",
        ".var(ddof=0)",
        ("sample variance", "sample standard deviation", "ddof", "n - 1", "n-1"),
    ),
    Convention(
        "mannwhitney_no_continuity",
        "convention",
        r"mannwhitneyu\(([^()]*)\)",
        r"mannwhitneyu(\1, use_continuity=False)",
        ("continuity",),
    ),
    Convention(
        "mannwhitney_exact",
        "convention",
        r"mannwhitneyu\(([^()]*)\)",
        r"mannwhitneyu(\1, method='exact')",
        ("exact", "asymptotic", "normal approximation"),
        max_rows=60,  # exact U distributions are for small samples (and cost O(n^3))
    ),
    Convention("ttest_student", "convention", r"equal_var=False", "equal_var=True", ("welch",)),
    Convention(
        "ttest_welch",
        "convention",
        r"equal_var=True\)",
        "equal_var=False)",
        ("student", "equal variances", "pooled"),
    ),
    Convention(
        "chi2_no_yates",
        "convention",
        r"chi2_contingency\(table\)",
        "chi2_contingency(table, correction=False)",
        ("yates", "continuity"),
    ),
    _quartile_convention("quartiles_tukey_hinges", "hinges"),
    _quartile_convention("quartiles_type6", "weibull"),
    _quartile_convention("quartiles_type5", "hazen"),
    Convention(
        "median_complete_rows",
        "convention",
        r"\bdf\[([^\[\]]+)\]\.median\(\)",
        r"df.dropna()[\1].median()",
        ("overall median", "whole table", "all rows", "where it is present"),
    ),
)
BY_NAME = {c.name: c for c in CONVENTIONS}

# --- ID-like columns: a reading of the table rather than a rewrite of one call --------------
ID_STATED = ("identifier", "id-like", "id column", "row number", "row index")
# whole-table numeric computations that would pick an ID column up without naming it
_WHOLE_TABLE = re.compile(r"select_dtypes|numeric_only|\bdf\.(?:corr|cov|describe|mean|std|var)\(")
# a list literal of two or more quoted names: the candidate columns a template spelled out
_NAME_LIST = re.compile(
    r"\[(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")(?:,\s*(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))+\]"
)
EXCLUDE_IDS = Convention("exclude_id_columns", "convention", "", "", ID_STATED, table_reading=True)
INCLUDE_IDS = Convention("include_id_columns", "convention", "", "", ID_STATED, table_reading=True)
CONVENTIONS = (*CONVENTIONS, EXCLUDE_IDS, INCLUDE_IDS)
BY_NAME = {c.name: c for c in CONVENTIONS}


def _quotes(code: str, name: str) -> bool:
    """`name` appears as a string literal in the code proper (the question heading the
    program as comments does not count)."""
    body = "\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith("#"))
    return repr(name) in body or json.dumps(name) in body


def _candidate_lists(code: str, df: pd.DataFrame, question: str) -> list[str]:
    """List literals of numeric column names the question does not spell out one by one."""
    numeric = set(df.select_dtypes("number").columns.astype(str))
    out = []
    for m in _NAME_LIST.finditer(code):
        names = ast.literal_eval(m.group(0))
        named = all(f"'{n}'" in question or f'"{n}"' in question for n in names)
        if set(names) <= numeric and not named:
            out.append(m.group(0))
    return out


def with_ids(code: str, df: pd.DataFrame, question: str, ids: list[str]) -> str | None:
    """The code with the ID-like columns added to every implicit candidate list, or None
    when no list is implicit (the question names each candidate) or an ID is already used."""
    if any(_quotes(code, i) for i in ids):
        return None
    lists = _candidate_lists(code, df, question)
    for lit in set(lists):
        code = code.replace(lit, repr([*ast.literal_eval(lit), *ids]))
    return code if lists else None


def uses_ids(code: str, ids: list[str]) -> list[str]:
    """ID-like columns the code names, or all of them when it computes over the whole table."""
    named = [i for i in ids if _quotes(code, i)]
    return named or (list(ids) if _WHOLE_TABLE.search(code) else [])


# --- tie probes: the screen's reference run records whether a tie-break could bind --------
# A tie convention moves an answer only where the reference meets an exact tie; the probe
# version of the reference returns the same values and hooks a marker at every tie it
# meets, so a tie variant of a program that met none is known to give the same answer
# without running it (most candidates: the cost of the screen halves).
TIE_MARK = "__tie__:"
_PROBE_DEFS = (
    "def __tie_probe(obj, name, how):\n"
    "    try:\n"
    "        best = obj.max() if how == 'max' else obj.min()\n"
    "        tied = bool(np.any(np.asarray((obj == best).sum()) > 1))\n"
    "    except Exception:\n"
    "        tied = True\n"
    "    if tied:\n"
    f"        hook(True, '', name={TIE_MARK!r} + name)\n"
    "    return obj.idxmax() if how == 'max' else obj.idxmin()\n"
    "def __tie_max(obj):\n"
    "    return __tie_probe(obj, 'argmax_last_tied', 'max')\n"
    "def __tie_min(obj):\n"
    "    return __tie_probe(obj, 'argmin_last_tied', 'min')\n"
    "def __mode_probe(m):\n"
    "    if len(m) > 1:\n"
    f"        hook(True, '', name={TIE_MARK + 'mode_largest_tied'!r})\n"
    "    return m\n"
)
# replacements without quotes: they also land inside the hook's code-line string literals
_PROBES = (
    (r"\.idxmax\(\)", ".pipe(__tie_max)"),
    (r"\.idxmin\(\)", ".pipe(__tie_min)"),
    (r"\.mode\(\)\.iloc\[0\]", ".mode().pipe(__mode_probe).iloc[0]"),
)
PROBED = frozenset({"argmax_last_tied", "argmin_last_tied", "mode_largest_tied"})


def probed(code: str) -> str:
    """`code` with every tie-breaking call routed through a probe (same values)."""
    for pattern, replacement in _PROBES:
        code = re.sub(pattern, replacement, code)
    return _PROBE_DEFS + code


def _body(code: str) -> str:
    """The program without its comment lines (the question heads it as comments)."""
    return "\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith("#"))


class RunCache:
    """Outcomes of program bodies already run on one table, so the wordings of one
    computation (template variants share their code but for the question comment) and
    their convention variants run once per table. Exceptions are kept and re-raised."""

    def __init__(self) -> None:
        self._done: dict[tuple[str, str], tuple[bool, Any]] = {}

    def get(self, kind: str, code: str, compute: Callable[[], Any]) -> Any:
        key = (kind, _body(code))
        if key not in self._done:
            try:
                self._done[key] = (True, compute())
            except Exception as exc:
                self._done[key] = (False, exc)
        ok, value = self._done[key]
        if not ok:
            raise value
        return value


def probed_reference(
    code: str, df: pd.DataFrame, cache: RunCache | None = None
) -> tuple[Any, frozenset[str]]:
    """(answer as submitted, tie conventions that met a tie) of one in-process run."""

    def compute() -> tuple[Any, frozenset[str]]:
        seen: dict[str, Any] = {}
        answer = _canonical(run_in_process(probed(code), df, seen))
        return answer, frozenset(k[len(TIE_MARK) :] for k in seen if k.startswith(TIE_MARK))

    return compute() if cache is None else cache.get("probed", code, compute)


def _canonical(value: Any) -> Any:
    """The answer as the sandbox would submit it (JSON), parsed back."""
    return parse_answer(json.dumps(value))


def states(question: str, convention: Convention) -> bool:
    text = question.lower()
    return any(p in text for p in convention.stated)


@dataclass
class ConventionReport:
    """Outcome of every variant tried (`name:outcome`), and the reason to reject, if any."""

    tried: list[str]
    rejection: str | None = None


Runner = Callable[[str], Any]


def check_conventions(
    cand: Candidate,
    df: pd.DataFrame,
    reference: Any | None = None,
    conventions: tuple[Convention, ...] = CONVENTIONS,
    alternative_answers: list[Any] | None = None,
    id_columns: list[str] | None = None,
    ties: frozenset[str] | None = None,
    cache: RunCache | None = None,
) -> ConventionReport:
    """Re-run `cand` under every convention its code uses and judge each moved answer.

    `reference` and `alternative_answers` (parsed JSON) may be given when already known,
    e.g. from a verified record; otherwise they are computed here. `id_columns` (the
    table's numeric ID-like columns) may be given by a caller that screens many candidates
    of one table; `conventions` without the ID readings skips them. `ties` (from
    `probed_reference`) names the tie conventions whose tie the reference met: the others
    cannot move and are recorded `untied` without a run. Without it every variant runs.
    With `ties` given, the complete-rows median is not re-run on a table without missing
    values either (it cannot move). `cache`, one per table, runs each program body once.
    """
    cache = cache or RunCache()
    run: Runner = lambda code: cache.get("run", code, lambda: _canonical(run_in_process(code, df)))  # noqa: E731
    expected = _canonical(reference) if reference is not None else run(cand.code)
    alt_answers = alternative_answers
    tried: list[str] = []
    rejection: str | None = None
    ids = numeric_id_columns(df) if id_columns is None else id_columns
    complete = ties is not None and not df.isna().to_numpy().any()
    for conv, variant in _variants(cand, df, conventions, ids, run):
        if (ties is not None and conv.name in PROBED and conv.name not in ties) or (
            complete and conv.name == "median_complete_rows"
        ):
            tried.append(f"{conv.name}:untied" if conv.name in PROBED else f"{conv.name}:same")
            continue
        if isinstance(variant, str):  # the question reads an ID-like column as a variable
            if states(cand.question, conv):
                tried.append(f"{conv.name}:stated")
                continue
            tried.append(f"{conv.name}:moved")
            rejection = rejection or (
                f"ambiguous_convention: {variant}, and the wording does not say it is an identifier"
            )
            continue
        try:
            got = variant()
        except Exception:  # the variant itself is not a valid program here: nothing to judge
            tried.append(f"{conv.name}:failed")
            continue
        outcome: Outcome
        if answers_match(expected, got, cand.answer_schema):
            outcome = "same"
        else:
            if alt_answers is None:
                alt_answers = [_try(run, a.code) for a in cand.alternatives]
            if any(
                a is not None and answers_match(a, got, cand.answer_schema) for a in alt_answers
            ):
                outcome = "alternative"
            elif states(cand.question, conv):
                outcome = "stated"
            else:
                outcome = "moved"
                rejection = rejection or (
                    f"{REASON[conv.kind]}: under {conv.name} the answer moves to "
                    f"{json.dumps(got)[:120]} (reference {json.dumps(expected)[:120]}), and "
                    "neither the wording nor an alternative covers it"
                )
        tried.append(f"{conv.name}:{outcome}")
    return ConventionReport(tried, rejection)


Variant = Callable[[], Any] | str


def _variants(
    cand: Candidate,
    df: pd.DataFrame,
    conventions: tuple[Convention, ...],
    ids: list[str],
    run: Runner,
):
    """(convention, thunk running its variant) for every reading that applies; for the
    exclude-ID reading of code that names an ID column, a message instead of a thunk."""
    for conv in conventions:
        if conv.applies(cand.code, len(df)):
            yield conv, (lambda c=conv: run(c.rewrite(cand.code)))
    if not ids:
        return
    used = uses_ids(cand.code, ids)
    if used and EXCLUDE_IDS in conventions:
        if any(_quotes(cand.code, i) for i in used):
            yield EXCLUDE_IDS, f"it uses ID-like column(s) {used} as a variable"
        else:
            yield (
                EXCLUDE_IDS,
                (lambda: _canonical(run_in_process(cand.code, df.drop(columns=used)))),
            )
    elif not used and INCLUDE_IDS in conventions:
        code = with_ids(cand.code, df, cand.question, ids)
        if code is not None:
            yield INCLUDE_IDS, (lambda: run(code))


def _try(run: Runner, code: str) -> Any | None:
    try:
        return run(code)
    except Exception:  # an alternative that fails here is judged by verification, not us
        return None
