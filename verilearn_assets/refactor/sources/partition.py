"""The `template` and `procedural` tasks of one `source × split` partition: the candidates
of `plan.py` (`template.py`, `procedural.py`) over the partition's repositories, bundled
and published alike (a published package runs with its narrowed test command from
`repos/mining.py`, or is skipped), then checked and de-duplicated by target.

Its own module because it drives both the generator and the repository miner, and the
miner builds on the generator: here neither has to import the other back.
"""

from __future__ import annotations

from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.records import RefactorTask
from verilearn_assets.refactor.sources.candidate import TEST_COMMAND, run_candidate
from verilearn_assets.refactor.sources.catalog import CatalogRule, Repo, load_catalog, load_corpus
from verilearn_assets.refactor.sources.plan import candidates
from verilearn_assets.refactor.sources.quality import finalize
from verilearn_assets.refactor.sources.repos.mining import package_commands


def generate_tasks(
    source: str,
    split: str,
    config: RefactorConfig,
    repos: list[Repo] | None = None,
    rules: list[CatalogRule] | None = None,
    max_pairs_per_repo: int = 30,
    seed: int = 0,
) -> list[RefactorTask]:
    """Every task of one `source × split` partition (the `llm` source needs a model),
    checked and de-duplicated by target (`finalize`)."""
    if source not in ("template", "procedural"):
        return []
    if repos is None:
        repos = load_corpus(strict=False)
    repos = [r for r in repos if r.split == split]
    rules = rules if rules is not None else load_catalog()
    # published packages: their baseline's stable passing tests, or skipped (repos/mining.py)
    commands = package_commands(repos, rules, config, source, split)  # type: ignore[arg-type]
    repos = [r for r in repos if commands.get(r.name, TEST_COMMAND) is not None]
    tasks = [
        run_candidate(c, config, commands.get(c.repo.name) or list(c.repo.test_command))
        for c in candidates(source, repos, rules, config, max_pairs_per_repo, seed)
    ]
    return finalize(tasks, {r.name: r.path for r in repos})
