"""Session fixtures for the SFT tests: real episodes (bwrap sandbox) and their SFT rows."""

from __future__ import annotations

import pytest
from sft_support import episode_rows, real_episodes

from verilearn_assets.analysis.records import Episode
from verilearn_assets.core.family import SftRow


@pytest.fixture(scope="session")
def sft_episodes(tmp_path_factory: pytest.TempPathFactory) -> list[Episode]:
    return real_episodes(tmp_path_factory.mktemp("sft_tables"))


@pytest.fixture(scope="session")
def sft_rows_real(sft_episodes: list[Episode]) -> list[SftRow]:
    return episode_rows(sft_episodes)
