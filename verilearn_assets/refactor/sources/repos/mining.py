"""Task mining on real repositories: where the catalog rules match, how many sites, and the
tasks made there with the repository's baseline (`baseline.py`) as their test command.

A published package is not written for the catalog: most rules match nowhere, some only in
its tests or its build helpers. `mine_sites` counts, per rule and file, the sites ast-grep
finds (one jailed `ast-grep scan --json` per rule); the tasks themselves come from
`plan.candidates`/`run_candidate` (template, scope-restricted and paired rules, renames)
with the narrowed command, so a task's verdict runs only tests that passed twice before any
change. `package_commands` is what task generation asks for a split's package repositories:
baseline and sites taken once per repository (cached under the home) and written to the lake
as `refactor/repo_profile` rows, which `mart_refactor_repos` reads.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from verilearn_assets.core import lake
from verilearn_assets.core.home import resolve_home
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.records import Source, Split, content_hash
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.records import RefactorTask
from verilearn_assets.refactor.sources.candidate import is_test_path, run_candidate
from verilearn_assets.refactor.sources.catalog import CatalogRule, Repo, rules_for
from verilearn_assets.refactor.sources.plan import candidates
from verilearn_assets.refactor.sources.quality import finalize
from verilearn_assets.refactor.sources.repos.baseline import (
    Baseline,
    reading_whole_output,
    source_files,
    take_baseline,
)
from verilearn_assets.refactor.sources.repos.records import PROFILE_LAKE, Measure, RepoProfileRow
from verilearn_assets.refactor.verify.actions import CommandAction
from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace


class RuleSites(BaseModel):
    """Where one rule matches one file of a repository."""

    model_config = ConfigDict(extra="forbid")
    rule: str
    file: str
    sites: int
    lines: list[int]  # 1-based first line of each site


class RepoProfile(BaseModel):
    """A repository as ingested: its baseline and the catalog's sites in it."""

    model_config = ConfigDict(extra="forbid")
    repo: str
    origin: str
    files: int  # files of the repository's language (tests included)
    baseline: Baseline
    sites: list[RuleSites]

    def sites_per_rule(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        for s in self.sites:
            out[s.rule] += s.sites
        return dict(out)


def mine_sites(repo: Repo, rules: list[CatalogRule], config: RefactorConfig) -> list[RuleSites]:
    """Per rule and file, the sites ast-grep finds in `repo` (read-only: `scan --json`, one
    jailed run per rule in one workspace; nothing is rewritten)."""
    config = reading_whole_output(config)
    out: list[RuleSites] = []
    ws = prepare_workspace(content_hash("mine", repo.name, repo.origin), repo.path, config)
    try:
        for rule in rules_for(repo, rules):  # a rule of another language scans nothing
            text = yaml.safe_dump(rule.rule, sort_keys=False)
            argv = ["ast-grep", "scan", "--inline-rules", text, "--json=compact", "."]
            result = apply_action(ws, CommandAction(argv=argv))
            if result.exit_code not in (0, 1) or result.files_changed:
                raise RuntimeError(
                    f"repository {repo.name}: scanning rule {rule.id} failed "
                    f"({result.status}: {result.message or result.stderr[-300:]})"
                )
            try:
                matches = json.loads(result.stdout or "[]")
            except json.JSONDecodeError as exc:
                raise RuntimeError(
                    f"repository {repo.name}: rule {rule.id}: ast-grep's JSON unreadable: {exc}"
                ) from exc
            per_file: dict[str, list[int]] = {}
            for m in matches:
                per_file.setdefault(m["file"], []).append(m["range"]["start"]["line"] + 1)
            out += [
                RuleSites(rule=rule.id, file=f.removeprefix("./"), sites=len(v), lines=sorted(v))
                for f, v in sorted(per_file.items())
            ]
    finally:
        cleanup(ws)
    return out


def profile_repo(
    repo: Repo,
    rules: list[CatalogRule],
    config: RefactorConfig,
    given: list[str] | None = None,
    cache_dir: Path | None = None,
) -> RepoProfile:
    """The repository's baseline and sites, taken once per (origin, tree, command, rules)
    and kept as JSON under `cache_dir` (default `<home>/refactor/repo_profiles`)."""
    key = content_hash(
        "repo-profile",
        repo.name,
        repo.origin,
        str(repo.path),
        repo.language,
        given,
        [r.rule for r in rules],
    )
    cache_dir = cache_dir or resolve_home() / "refactor" / "repo_profiles"
    cached = cache_dir / f"{repo.name}-{key[:16]}.json"
    if cached.is_file():
        return RepoProfile.model_validate_json(cached.read_text())
    profile = RepoProfile(
        repo=repo.name,
        origin=repo.origin,
        files=len(source_files(repo.path, repo.language)),
        baseline=take_baseline(repo.name, repo.path, config, given),
        sites=mine_sites(repo, rules, config),
    )
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_text(profile.model_dump_json())
    tmp.replace(cached)
    return profile


def profile_rows(profile: RepoProfile, source: Source, split: Split) -> list[RepoProfileRow]:
    """The profile's counts as lake rows (one per measure and key)."""
    at = datetime.now(UTC).isoformat(timespec="seconds")
    counts: list[tuple[Measure, str, str, int]] = [("files", "", "", profile.files)]
    counts += [("tests", k, "", n) for k, n in sorted(profile.baseline.counts().items())]
    per: Counter[tuple[str, str]] = Counter()
    for s in profile.sites:
        per[(s.rule, "tests" if is_test_path(s.file) else "package")] += s.sites
    counts += [("sites", rule, scope, n) for (rule, scope), n in sorted(per.items())]
    if profile.baseline.skipped:
        counts.append(("skipped", profile.baseline.skipped, "", 1))
    return [
        RepoProfileRow(
            id=content_hash("repo-profile-row", source, split, profile.repo, m, k, scope),
            source=source,
            split=split,
            repo=profile.repo,
            origin=profile.origin,
            measure=m,
            key=k,
            scope=scope,
            n=n,
            profiled_at=at,
        )  # fmt: skip
        for m, k, scope, n in counts
    ]


def entry_test_command(name: str) -> list[str] | None:
    """The test command the catalog entry `name` writes (`test:`), if it writes one: a
    `Repo` always has a command (the default when none is written), and the baseline
    detects the command only when the entry leaves it out."""
    entry = load_datasets_config().corpora.get(name)
    return entry.test if entry is not None else None


def package_commands(
    repos: list[Repo],
    rules: list[CatalogRule],
    config: RefactorConfig,
    source: Source,
    split: Split,
) -> dict[str, list[str] | None]:
    """Repository name -> its narrowed test command (None: skipped, the reason in its
    profile) for the package repositories of `repos`; their profiles written to the lake
    (partition `source` × `split`)."""
    out: dict[str, list[str] | None] = {}
    rows: list[RepoProfileRow] = []
    for repo in repos:
        if not repo.origin.startswith("package:"):
            continue
        profile = profile_repo(repo, rules, config, entry_test_command(repo.name))
        out[repo.name] = profile.baseline.narrowed
        rows += profile_rows(profile, source, split)
    if rows:
        root = lake.lake_root(resolve_home())
        lake.write_records(PROFILE_LAKE, rows, RepoProfileRow, root, source=source, split=split)
    return out


def repo_tasks(
    source: str,
    repo: Repo,
    profile: RepoProfile,
    rules: list[CatalogRule],
    config: RefactorConfig,
    max_pairs_per_repo: int = 30,
) -> list[RefactorTask]:
    """The tasks of one source on one profiled repository, its narrowed command as every
    task's test command (none when the repository was skipped)."""
    command = profile.baseline.narrowed
    if command is None:
        return []
    made = [
        run_candidate(c, config, test_command=command)
        for c in candidates(source, [repo], rules, config, max_pairs_per_repo)
    ]
    return finalize(made, {repo.name: repo.path})
