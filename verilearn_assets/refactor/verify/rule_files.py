"""An ast-grep rule file as ast-grep accepts it, checked for what we must know before the
jailed ast-grep judges the rest.

ast-grep's semantics are not re-implemented: the text goes to the jail verbatim (a YAML
1.1 round trip would turn `fix: yes` into `true`, which ast-grep reads as the string
`yes`), and a rule ast-grep refuses is refused with its own message (exit code 8,
`Error: Cannot parse rule …`: `ast_grep_refusal`). What is checked here, on the host:

- limits ast-grep does not have: the text's size, nesting depth, number of documents,
  nodes once YAML aliases are expanded (a "billion laughs" file is a few hundred bytes),
  no tags but the YAML core schema's (`!!str`; never `!include`, `!!python/object`: no
  loader tricks);
- `files`/`ignores` globs that name a place outside the workspace (absolute, `~`, `..`);
- what we must know: each document's id, its language (any alias, any case: an unknown
  name is refused naming the known ones) and whether it has a `fix`; keys ast-grep does
  not know are refused with ast-grep's wording (it refuses them too).
"""

from __future__ import annotations

import posixpath
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from verilearn_assets.refactor.verify.languages import UnknownLanguage, canonical_language

MAX_RULE_BYTES = 64 * 1024
MAX_DEPTH = 48
MAX_DOCUMENTS = 64
MAX_NODES = 20_000  # YAML nodes with every alias expanded, as ast-grep would build them
# ast-grep 0.51.1's `RuleConfig` fields (it refuses any other: "unknown field")
RULE_KEYS = (
    "id", "language", "rule", "constraints", "utils", "transform", "fix", "rewriters",
    "message", "note", "severity", "labels", "files", "ignores", "url", "metadata",
)  # fmt: skip
# the YAML core schema's tags (`!!str yes`): ast-grep reads them, no loader runs code
CORE_TAGS = {None} | {
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")
}
# libyaml's safe loader when PyYAML has it (the same YAML, ~10x faster), else PyYAML's
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
AST_GREP_CONFIG_ERROR = 8  # ast-grep's exit code when it cannot load a rule
AST_GREP_PANIC = 101  # a Rust panic: some rules crash ast-grep while it loads them


class RuleFileError(ValueError):
    """A rule file refused on the host; `failure` is the reward's failure class:
    `disallowed` (a limit or a path outside the workspace) or `schema` (its shape)."""

    def __init__(self, failure: str, message: str) -> None:
        super().__init__(message)
        self.failure = failure


class RuleDocument(BaseModel):
    """What we know of one document of a rule file."""

    model_config = ConfigDict(frozen=True)
    index: int  # 1-based, counting the file's non-empty documents
    id: str | None
    language: str  # canonical (`languages.canonical_language`)
    has_fix: bool


class RuleFile(BaseModel):
    model_config = ConfigDict(frozen=True)
    text: str  # exactly what ast-grep reads
    documents: list[RuleDocument]

    @property
    def languages(self) -> list[str]:
        return sorted({d.language for d in self.documents})

    @property
    def has_fix(self) -> bool:
        return any(d.has_fix for d in self.documents)


def rule_text(rule: str | dict[str, Any] | list[dict[str, Any]]) -> str:
    """The text ast-grep reads: a string verbatim, a mapping (one document) or a list of
    mappings (documents separated by `---`) dumped as YAML. A structure is measured for
    depth before it is dumped (the dumper recurses)."""
    if isinstance(rule, str):
        return rule
    _check_depth(rule)
    if isinstance(rule, list):
        return yaml.safe_dump_all(rule, sort_keys=False)
    return yaml.safe_dump(rule, sort_keys=False)


def parse_rule_file(text: str) -> RuleFile:
    """Check a rule file's text (see the module doc); RuleFileError says what and where
    (`document N`, the key)."""
    return parse_rule_documents(text)[0]


def parse_rule_documents(text: str) -> tuple[RuleFile, list[dict[str, Any]]]:
    """`parse_rule_file` and the documents as loaded (empty ones left out, as ast-grep
    does), for a caller that must read more of them than we check (the llm source)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_RULE_BYTES:
        raise RuleFileError(
            "disallowed", f"rule file is {size} bytes, over the limit of {MAX_RULE_BYTES}"
        )
    try:
        _check_events(text)
        nodes = list(yaml.compose_all(text, Loader=_LOADER))
        expanded: dict[int, int] = {}
        if sum(_expanded_size(n, expanded) for n in nodes if n is not None) > MAX_NODES:
            raise RuleFileError(
                "disallowed", f"rule file expands to over {MAX_NODES} YAML nodes (aliases)"
            )
        data = list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as exc:
        raise RuleFileError("schema", f"not valid YAML: {_one_line(exc)}") from exc
    documents = []
    loaded = [d for d in data if d is not None]  # ast-grep skips empty documents too
    for doc in loaded:
        documents.append(_document(len(documents) + 1, doc))
    return RuleFile(text=text, documents=documents), loaded


def ast_grep_refusal(exit_code: int | None, stderr: str, rule_path: str, shown: str) -> str | None:
    """ast-grep's own message when it refused to load the rule (else None), the jail's
    path of the rule file replaced by the one the user knows. A panic while loading
    (`transform` with `source: $$$` in 0.51.1) is a refusal too: nothing was scanned."""
    refused = exit_code == AST_GREP_CONFIG_ERROR and stderr.lstrip().startswith("Error:")
    panicked = exit_code == AST_GREP_PANIC and "panicked at" in stderr
    return stderr.strip().replace(rule_path, shown) if refused or panicked else None


def _document(index: int, doc: Any) -> RuleDocument:
    where = f"document {index}"
    if not isinstance(doc, dict):
        raise RuleFileError("schema", f"{where}: a rule is a mapping, not {type(doc).__name__}")
    unknown = [str(k) for k in doc if k not in RULE_KEYS]
    if unknown:
        raise RuleFileError(
            "schema",
            f"{where}: unknown field `{unknown[0]}`, expected one of {', '.join(RULE_KEYS)}",
        )
    for key in ("language", "rule"):
        if key not in doc:
            raise RuleFileError("schema", f"{where}: missing field `{key}`")
    if not isinstance(doc["rule"], dict):
        raise RuleFileError("schema", f"{where}: `rule` must be a mapping")
    try:
        language = canonical_language(doc["language"])
    except UnknownLanguage as exc:
        raise RuleFileError("schema", f"{where}: {exc}") from exc
    for key in ("files", "ignores"):
        for glob in doc.get(key) or []:
            pattern = glob.get("glob") if isinstance(glob, dict) else glob
            if isinstance(pattern, str):
                _check_glob(f"{where}: {key}", pattern)
    rule_id = doc.get("id")
    return RuleDocument(
        index=index,
        id=None if rule_id is None else str(rule_id),
        language=language,
        has_fix="fix" in doc,
    )


def _check_glob(where: str, glob: str) -> None:
    norm = posixpath.normpath(glob) if glob else glob
    if glob.startswith(("/", "~", "\\")) or norm == ".." or norm.startswith("../"):
        raise RuleFileError("disallowed", f"{where}: {glob!r} points outside the workspace")
    if ".." in glob.replace("\\", "/").split("/"):
        raise RuleFileError("disallowed", f"{where}: {glob!r} points outside the workspace")


def _check_events(text: str) -> None:
    """Depth, documents and tags from the event stream (no recursion, nothing built)."""
    depth = documents = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > MAX_DOCUMENTS:
                raise RuleFileError("disallowed", f"rule file has over {MAX_DOCUMENTS} documents")
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise RuleFileError(
                    "disallowed",
                    f"document {documents}: nested over {MAX_DEPTH} levels deep "
                    f"(line {event.start_mark.line + 1})",
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        tag = getattr(event, "tag", None)
        if tag not in CORE_TAGS and not isinstance(event, yaml.DocumentStartEvent):
            raise RuleFileError(
                "disallowed",
                f"document {documents}: explicit YAML tag {tag!r} "
                f"(line {event.start_mark.line + 1}): rule files take plain YAML (core tags only)",
            )


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Nodes under `node` counting an aliased node at every use (memoised: linear time)."""
    key = id(node)
    if key not in memo:
        memo[key] = 1  # a recursive alias counts once (PyYAML's composer refuses it anyway)
        if isinstance(node, yaml.MappingNode):
            memo[key] += sum(
                _expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value
            )
        elif isinstance(node, yaml.SequenceNode):
            memo[key] += sum(_expanded_size(v, memo) for v in node.value)
        memo[key] = min(memo[key], MAX_NODES + 1)
    return memo[key]


def _check_depth(value: Any) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RuleFileError("disallowed", f"rule nested over {MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
