"""Puts the repository root on Hydra's search path so ``sweeps/`` is a config group.

python -m attnsvm.run -m +sweeps=rank
"""

from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

REPO_ROOT = Path(__file__).resolve().parents[2]


class AttnsvmSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="attnsvm", path=f"file://{REPO_ROOT}")
