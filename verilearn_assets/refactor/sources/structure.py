"""Code structure per language, read with ast-grep itself: the functions of a file and
their spans, the functions a change touched, the `inside` that restricts a rule to one
function, a repository's top-level definitions (rename targets), the other places a name
is bound (what a rename over identifiers would also rename) and the rename rule.

One table (`SYNTAX`) holds what differs between languages: the tree-sitter node kinds
ast-grep 0.51.1 uses for functions, definitions, bindings and the identifiers a rename
rewrites (checked by `tests/refactor/test_structure.py` on snippets of each language).
Everything here only parses (ast-grep on the host reads files, it runs none of them).
Python keeps `ast` for its rename targets and bindings (`procedural.py`, `quality.py`):
its `Store` contexts and `__all__` strings were the rules those tasks were made under.
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from verilearn_assets.refactor.verify.jail_policy import ast_grep_binary
from verilearn_assets.refactor.verify.languages import extensions
from verilearn_assets.refactor.verify.toolchains import language_of_rule
from verilearn_assets.refactor.verify.workspace import SKIP_DIRS

NAME = "__NAME__"  # where a rule template takes the name's regex
SCAN_TIMEOUT_S = 120


def _named(kind: str, parent: str, at: str | None = None, via: str | None = None) -> dict:
    """A name node of `kind` that is the `at` field of a `parent` node (any field when
    None), or the child of a `via` node that is that field."""
    holder: dict[str, Any] = {"kind": parent, **({"field": at} if at else {})}
    if via:
        holder = {"kind": via, "inside": holder}
    return {"kind": kind, "regex": NAME, "inside": holder}


def _c_function_name(value: str, key: str = "regex") -> dict:
    """C names a function inside its declarator: `f(...)`, `*f(...)`, `**f(...)` (`key`:
    `regex` to match a name, `pattern` to capture it)."""
    call = {"kind": "function_declarator", "has": {"field": "declarator", key: value}}
    level2 = {"kind": "pointer_declarator", "has": {"field": "declarator", **call}}
    level1 = {"kind": "pointer_declarator", "has": {"field": "declarator", "any": [call, level2]}}
    return {"field": "declarator", "any": [call, level1]}


@dataclass(frozen=True)
class Syntax:
    """How one language's tree names what the generator needs."""

    functions: tuple[str, ...]  # node kinds of a function (a scope, a span)
    # top-level definition kind → (the word for it, where it sits: the rule's other keys)
    definitions: dict[str, tuple[str, dict]]
    renamed: tuple[str, ...]  # identifier kinds a rename rewrites
    bindings: dict[str, list[dict]] = field(default_factory=dict)  # word → name-node rules
    declarator_name: bool = False  # C: the name sits in the declarator, not a `name` field
    reserved: frozenset[str] = frozenset({"main"})  # never renamed (entry points, overrides)
    trailing_comments: bool = False  # a function node may end on comments after its body
    snake_case: bool = False  # a renamed function is `name_v2` (else `nameV2`); types `NameV2`

    def name_has(self, regex: str) -> dict:
        """The `has` that names a function or definition node."""
        if self.declarator_name:
            return _c_function_name(regex)
        return {"field": "name", "regex": regex}

    def new_name(self, name: str, word: str) -> str:
        """`name_v2` in snake-case languages, `nameV2` in camel-case ones and for types."""
        return f"{name}_v2" if self.snake_case and word not in TYPE_WORDS else f"{name}V2"


TYPE_WORDS = frozenset({"class", "type", "struct", "enum", "trait"})
# JavaScript: `function f` at the top, or `export function f`; a nested one is not
_AT_JS_TOP = {
    "inside": {
        "any": [
            {"kind": "program"},
            {"kind": "export_statement", "inside": {"kind": "program"}},
        ]
    }
}

SYNTAX: dict[str, Syntax] = {
    "python": Syntax(
        functions=("function_definition",),
        definitions={
            "function_definition": ("function", {"inside": {"kind": "module"}}),
            "class_definition": ("class", {"inside": {"kind": "module"}}),
        },
        renamed=("identifier",),
        trailing_comments=True,
        snake_case=True,
    ),
    "javascript": Syntax(
        functions=("function_declaration", "generator_function_declaration", "method_definition"),
        definitions={
            kind: (word, _AT_JS_TOP)
            for kind, word in (
                ("function_declaration", "function"),
                ("generator_function_declaration", "function"),
                ("class_declaration", "class"),
            )
        },
        renamed=(
            "identifier",
            "shorthand_property_identifier",
            "shorthand_property_identifier_pattern",
        ),
        bindings={
            "definition": [
                _named("identifier", k, "name")
                for k in (
                    "function_declaration",
                    "generator_function_declaration",
                    "class_declaration",
                    "function_expression",
                    "class",
                )
            ],  # fmt: skip
            "method": [_named("property_identifier", "method_definition", "name")],
            "variable": [
                _named("identifier", "variable_declarator", "name"),
                _named("identifier", "for_in_statement", "left"),
                _named("identifier", "pair_pattern", "value"),
            ],
            "parameter": [
                _named("identifier", "formal_parameters"),
                _named("identifier", "assignment_pattern", "left"),
                _named("identifier", "rest_pattern"),
                _named("identifier", "arrow_function", "parameter"),
                _named("identifier", "catch_clause", "parameter"),
            ],
            "import alias": [
                _named("identifier", "import_specifier", "alias"),
                _named("identifier", "namespace_import"),
                _named("identifier", "import_clause"),
            ],
        },
        reserved=frozenset({"main", "constructor"}),
    ),
    "go": Syntax(
        functions=("function_declaration", "method_declaration"),
        definitions={
            "function_declaration": ("function", {"inside": {"kind": "source_file"}}),
            "type_spec": (
                "type",
                {"inside": {"kind": "type_declaration", "inside": {"kind": "source_file"}}},
            ),
        },
        renamed=("identifier", "type_identifier"),
        bindings={
            "definition": [
                _named("identifier", "function_declaration", "name"),
                _named("type_identifier", "type_spec", "name"),
            ],
            "method": [_named("field_identifier", "method_declaration", "name")],
            "field": [_named("field_identifier", "field_declaration", "name")],
            "parameter": [
                _named("identifier", "parameter_declaration", "name"),
                _named("identifier", "variadic_parameter_declaration", "name"),
            ],
            "variable": [
                _named("identifier", "short_var_declaration", "left", via="expression_list"),
                _named("identifier", "range_clause", "left", via="expression_list"),
                _named("identifier", "var_spec", "name"),
                _named("identifier", "const_spec", "name"),
            ],
            "import alias": [_named("package_identifier", "import_spec", "name")],
        },
        reserved=frozenset({"main", "init"}),
    ),
    "rust": Syntax(
        functions=("function_item",),
        definitions={
            kind: (word, {"inside": {"kind": "source_file"}})
            for kind, word in (
                ("function_item", "function"),
                ("struct_item", "struct"),
                ("enum_item", "enum"),
                ("trait_item", "trait"),
            )
        },
        renamed=("identifier", "type_identifier"),
        snake_case=True,
        bindings={
            "definition": [
                _named("identifier", "function_item", "name"),
                *(
                    _named("type_identifier", k, "name")
                    for k in ("struct_item", "enum_item", "trait_item", "type_item", "union_item")
                ),
            ],
            "constant": [
                _named("identifier", "const_item", "name"),
                _named("identifier", "static_item", "name"),
            ],
            "field": [_named("field_identifier", "field_declaration", "name")],
            "variant": [_named("identifier", "enum_variant", "name")],
            "parameter": [
                _named("identifier", "parameter", "pattern"),
                _named("identifier", "closure_parameters"),
            ],
            "variable": [
                _named("identifier", "let_declaration", "pattern"),
                _named("identifier", "for_expression", "pattern"),
                _named("identifier", "let_condition", "pattern"),
                *(
                    _named("identifier", k)
                    for k in (
                        "tuple_pattern",
                        "mut_pattern",
                        "ref_pattern",
                        "slice_pattern",
                        "or_pattern",
                        "captured_pattern",
                        "match_pattern",
                    )
                ),  # fmt: skip
                {
                    **_named("identifier", "tuple_struct_pattern"),
                    "not": {"inside": {"kind": "tuple_struct_pattern", "field": "type"}},
                },  # fmt: skip
            ],
            "import alias": [_named("identifier", "use_as_clause", "alias")],
            "module": [_named("identifier", "mod_item", "name")],
        },
    ),
    "java": Syntax(
        functions=("method_declaration", "constructor_declaration"),
        definitions={  # Java has no free functions: the methods of a top-level class
            "method_declaration": (
                "method",
                {
                    "inside": {
                        "kind": "class_body",
                        "inside": {"kind": "class_declaration", "inside": {"kind": "program"}},
                    },
                    "not": {  # an override keeps its name (the supertype's)
                        "has": {
                            "kind": "modifiers",
                            "has": {"kind": "marker_annotation", "regex": "^@Override$"},
                        }
                    },
                },
            )
        },
        renamed=("identifier",),
        bindings={
            "definition": [
                *(
                    _named("identifier", k, "name")
                    for k in (
                        "method_declaration",
                        "class_declaration",
                        "interface_declaration",
                        "enum_declaration",
                        "record_declaration",
                    )
                ),  # fmt: skip
            ],
            "parameter": [
                _named("identifier", "formal_parameter", "name"),
                _named("identifier", "catch_formal_parameter", "name"),
                _named("identifier", "lambda_expression", "parameters"),
                _named("identifier", "inferred_parameters"),
            ],
            "variable": [
                _named("identifier", "variable_declarator", "name"),
                _named("identifier", "enhanced_for_statement", "name"),
                _named("identifier", "resource", "name"),
            ],
        },
        reserved=frozenset(
            {"main", "toString", "equals", "hashCode", "compareTo", "clone", "finalize", "run"}
        ),
    ),
    "c": Syntax(
        functions=("function_definition",),
        definitions={"function_definition": ("function", {"inside": {"kind": "translation_unit"}})},
        renamed=("identifier",),
        bindings={
            # a function's name at file level (its definition, its prototypes) is the
            # function itself; a prototype inside a body declares it again
            "prototype": [
                {
                    **_named("identifier", "function_declarator", "declarator"),
                    "not": {"inside": {"kind": "compound_statement", "stopBy": "end"}},
                }
            ],
            "definition": [
                {
                    **_named("identifier", "function_declarator", "declarator"),
                    "inside": {
                        "kind": "function_declarator",
                        "field": "declarator",
                        "inside": {"kind": "compound_statement", "stopBy": "end"},
                    },
                }
            ],
            "variable": [
                _named("identifier", k, "declarator")
                for k in (
                    "init_declarator",
                    "pointer_declarator",
                    "array_declarator",
                    "declaration",
                    "parenthesized_declarator",
                )
            ],  # fmt: skip
            "parameter": [_named("identifier", "parameter_declaration", "declarator")],
            "field": [
                _named("field_identifier", k, "declarator")
                for k in ("field_declaration", "pointer_declarator", "array_declarator")
            ],
            "type": [_named("type_identifier", "type_definition", "declarator")],
            "macro": [
                _named("identifier", "preproc_def", "name"),
                _named("identifier", "preproc_function_def", "name"),
            ],
            "enum constant": [_named("identifier", "enumerator", "name")],
        },
        declarator_name=True,
        snake_case=True,
    ),
}


def syntax(language: str) -> Syntax:
    """The language's row of the table; a clear error for a language without one."""
    try:
        return SYNTAX[language]
    except KeyError:
        raise ValueError(
            f"no code-structure table for language {language!r} (known: {', '.join(SYNTAX)})"
        ) from None


def supported(language: str) -> bool:
    return language in SYNTAX


# --- running ast-grep ------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    rule: str  # the rule id that matched
    file: str  # relative to the scanned root ("STDIN" for bytes)
    start: int  # 1-based lines, inclusive
    end: int
    name: str  # the NAME metavariable, else the matched text
    name_line: int  # 1-based line of NAME (of the match without one)


def _fill(rule: Any, regex: str) -> Any:
    if isinstance(rule, dict):
        return {k: _fill(v, regex) for k, v in rule.items()}
    if isinstance(rule, list):
        return [_fill(v, regex) for v in rule]
    return regex if rule == NAME else rule


def _scan(
    language: str,
    rules: dict[str, dict],
    source: bytes | None,
    root: Path | None,
    files: list[str] | None = None,
) -> list[Match]:
    """Every match of `rules` (id → rule) in `source` (stdin, run from the temporary
    directory: no project's `sgconfig.yml` applies) or in `files` under `root`."""
    docs = [{"id": rid, "language": language, "rule": body} for rid, body in rules.items()]
    text = "\n---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)
    argv = [ast_grep_binary(), "scan", "--inline-rules", text, "--json=stream"]
    if source is not None:
        argv.append("--stdin")
    else:
        argv += ["--no-ignore", "hidden", "--no-ignore", "vcs", "--no-ignore", "dot", "--"]
        argv += files or []
    done = subprocess.run(
        argv,
        input=source if source is not None else b"",
        cwd=root if source is None else tempfile.gettempdir(),
        capture_output=True,
        timeout=SCAN_TIMEOUT_S,
        check=False,
    )
    if done.returncode not in (0, 1):  # 1: a match of severity error (none here)
        raise RuntimeError(
            f"ast-grep ({language}) failed with exit {done.returncode}: "
            f"{done.stderr.decode(errors='replace').strip()[:400]}"
        )
    out = []
    for line in done.stdout.decode(errors="replace").splitlines():
        m = json.loads(line)
        meta = (m.get("metaVariables") or {}).get("single") or {}
        named = meta.get("NAME") or {}
        out.append(
            Match(
                rule=m["ruleId"],
                file=m["file"],
                start=m["range"]["start"]["line"] + 1,
                end=m["range"]["end"]["line"] + 1,
                name=named.get("text") or m["text"],
                name_line=(named.get("range") or m["range"])["start"]["line"] + 1,
            )
        )
    return out


def source_files(root: Path, language: str) -> list[str]:
    """The repository's files of `language` (relative, sorted; links and caches left out)."""
    exts = tuple(f".{e}" for e in extensions(language))
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if SKIP_DIRS & set(rel.parts) or path.is_symlink() or not path.is_file():
            continue
        if path.name.endswith(exts):
            out.append(rel.as_posix())
    return out


# --- functions -------------------------------------------------------------------------


def _functions_rule(s: Syntax, regex: str | None) -> dict:
    name = s.name_has(regex) if regex else _capture_name(s)
    kinds = [{"kind": k} for k in s.functions]
    return {"any": kinds, "has": name} if len(kinds) > 1 else {**kinds[0], "has": name}


def _capture_name(s: Syntax) -> dict:
    """A `has` capturing the node's name as $NAME."""
    if s.declarator_name:
        return _c_function_name("$NAME", key="pattern")
    return {"field": "name", "pattern": "$NAME"}


def functions(source: bytes, language: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every function of a file, nested ones too, in
    source order."""
    s = syntax(language)
    found = _scan(language, {"fn": _functions_rule(s, None)}, source, None)
    spans = [(m.name, m.start, m.end) for m in found]
    if s.trailing_comments:
        lines = source.decode(errors="replace").splitlines()
        spans = [(n, a, _last_code_line(lines, a, b)) for n, a, b in spans]
    return sorted(spans, key=lambda f: (f[1], f[2]))


def _last_code_line(lines: list[str], start: int, end: int) -> int:
    """`end` moved up past comment-only and blank lines: tree-sitter's Python block keeps
    the comments that follow its last statement, `ast` (what the spans always were) not.
    A comment line cannot be inside a string that ends the node (the node would end on the
    string's closing line)."""
    while end > start and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return end


def function_spans(source: bytes, name: str, language: str) -> list[tuple[int, int]]:
    """The line spans of every function called `name` in a file."""
    return [(a, b) for n, a, b in functions(source, language) if n == name]


def changed_functions(before: bytes, after: bytes, language: str) -> list[str]:
    """Names of the innermost functions holding the lines that changed, each once; a name
    defined twice in the file is left out (a rule scoped by name would reach both)."""
    defs = functions(before, language)
    counts = Counter(n for n, _, _ in defs)
    old = before.decode(errors="replace").splitlines()
    new = after.decode(errors="replace").splitlines()
    lines: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if tag != "equal":
            lines.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    names: list[str] = []
    for line in sorted(lines):
        holders = [d for d in defs if d[1] <= line <= d[2]]
        if holders:
            name = max(holders, key=lambda d: d[1])[0]
            if counts[name] == 1 and name not in names:
                names.append(name)
    return names


def function_scope(language: str, function: str) -> dict:
    """The `inside` restricting a rule to the function named `function` (signature and
    body, anything nested in it). Python's is the one its tasks always had."""
    s = syntax(language)
    regex = f"^{re.escape(function)}$"
    if len(s.functions) == 1:
        return {"kind": s.functions[0], "stopBy": "end", "has": s.name_has(regex)}
    return {"any": [{"kind": k} for k in s.functions], "stopBy": "end", "has": s.name_has(regex)}


def scoped_function(rule: dict[str, Any]) -> str | None:
    """The function a rule is restricted to (`function_scope` in an `all` beside the
    rule's own), else None."""
    if not isinstance(rule, dict):  # several documents (an LLM rule file): no one scope
        return None
    body = rule.get("rule")
    parts = body.get("all") if isinstance(body, dict) else None
    try:
        language = language_of_rule(rule)
    except ValueError:
        return None
    if language not in SYNTAX:
        return None
    for part in parts if isinstance(parts, list) else []:
        inside = part.get("inside") if isinstance(part, dict) else None
        if not isinstance(inside, dict):
            continue
        regex = _first_regex(inside.get("has"))
        if regex is None:
            continue
        name = re.sub(r"\\(.)", r"\1", regex.removeprefix("^").removesuffix("$"))
        if inside == function_scope(language, name):
            return name
    return None


def _first_regex(value: Any) -> str | None:
    if isinstance(value, dict):
        if isinstance(value.get("regex"), str):
            return value["regex"]
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            found = _first_regex(v)
            if found is not None:
                return found
    return None


# --- definitions, bindings, renames ----------------------------------------------------


@dataclass(frozen=True)
class Definition:
    name: str
    word: str  # function, class, method, type, struct, ...
    file: str
    line: int


def _definitions_rules(s: Syntax) -> dict[str, dict]:
    rules = {}
    for kind, (_, placement) in s.definitions.items():
        name = _capture_name(s) if kind in s.functions else {"field": "name", "pattern": "$NAME"}
        rules[f"def:{kind}"] = {"kind": kind, "has": name, **placement}
    return rules


def top_level_definitions(root: Path, language: str, files: list[str]) -> list[Definition]:
    """The top-level definitions (functions, classes, types; Java: the methods of its
    top-level classes) of `files` under `root`."""
    if not files:
        return []
    s = syntax(language)
    found = _scan(language, _definitions_rules(s), None, root, files)
    kinds = {f"def:{k}": word for k, (word, _) in s.definitions.items()}
    return sorted(
        (Definition(m.name, kinds[m.rule], m.file, m.name_line) for m in found),
        key=lambda d: (d.file, d.line, d.name),
    )


def bindings(root: Path, language: str, files: list[str], name: str) -> list[tuple[str, str, int]]:
    """(what, file, line) of every place `name` is bound in `files`: definitions,
    methods, fields, parameters, variables, import aliases…"""
    s = syntax(language)
    regex = f"^{re.escape(name)}$"
    rules = {
        f"bind:{word}:{i}": _fill(rule, regex)
        for word, group in s.bindings.items()
        for i, rule in enumerate(group)
    }
    if not files or not rules:
        return []
    found = _scan(language, rules, None, root, files)
    return sorted(
        {(m.rule.split(":")[1], m.file, m.start) for m in found}, key=lambda b: (b[1], b[2], b[0])
    )


def rename_rule_body(language: str, old: str, new: str, package: str | None = None) -> dict:
    """An ast-grep rule renaming every identifier `old` (of the kinds the language's
    definitions and uses have) to `new`; in Go also `package.old` (the selector's field)
    when `package` is the defining package's name."""
    s = syntax(language)
    regex = f"^{re.escape(old)}$"
    parts: list[dict] = [{"kind": k, "regex": regex} for k in s.renamed]
    if language == "go" and package:
        parts.append(
            {
                "kind": "field_identifier",
                "regex": regex,
                "inside": {
                    "kind": "selector_expression",
                    "has": {"field": "operand", "regex": f"^{re.escape(package)}$"},
                },
            }
        )
    return {
        "id": f"rename-{old}",
        "language": language,
        "message": f"rename {old} to {new}",
        "rule": {"any": parts},
        "fix": new,
    }
