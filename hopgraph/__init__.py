"""hopgraph: multi-hop retrieval along the connections between passages."""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

try:
    __version__ = version("hopgraph")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

# The design card keeps agents/, tools/, graph_store/, prompts/ and evals/ at the top of the
# repository; installed, they are hopgraph.agents, hopgraph.tools, ... (pyproject.toml's
# package-dir). In a checkout this package's folder comes first on the path, so its
# subpackages are looked up beside it too.
_checkout = Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "tools" / "__init__.py").is_file():
    __path__.append(str(_checkout))

__all__ = ["__version__"]
