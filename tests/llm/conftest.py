"""The llm tests import their helpers (`llm_proxy`) from this folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
