"""Draw hopgraph's imports as floors: arrows between floors, arrows running up, circles.

    python -m hopgraph.evals.imports

import-linter (``lint-imports``, run by the unit suite) enforces the layers; this counts them.
Both read the package laid out as installed (:func:`installed_layout`): in a checkout,
hopgraph's subpackages sit beside its folder (pyproject.toml's package-dir), where a static
reader of the ``hopgraph`` folder would not find them.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBPACKAGES = ("agents", "tools", "graph_store", "prompts", "evals")
FLOORS = ("prompts", "core", "graph_store", "tools", "agents", "evals")
"""From the bottom; every other module of hopgraph is a surface, the top floor."""


def installed_layout(target: Path) -> Path:
    """Copy the sources into ``target``/hopgraph as an installed hopgraph has them."""
    skip = shutil.ignore_patterns("__pycache__", "weights_data", "sample")
    shutil.copytree(ROOT / "hopgraph", target / "hopgraph", ignore=skip)
    for name in SUBPACKAGES:
        shutil.copytree(ROOT / name, target / "hopgraph" / name, ignore=skip)
    (target / "hopgraph" / "__init__.py").write_text('"""hopgraph, as installed."""\n')
    return target


def _floor(module: str) -> int:
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 1 and parts[1] in FLOORS else len(FLOORS)


def draw() -> dict[str, int]:
    """Return the counts: floors, arrows between floors, arrows running up, module circles."""
    import grimp  # import-linter's graph builder (the test extra)
    import networkx as nx

    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, str(installed_layout(Path(tmp))))
        try:
            graph = grimp.build_graph("hopgraph", cache_dir=None)
        finally:
            sys.path.remove(tmp)
    edges = [(m, i) for m in graph.modules for i in graph.find_modules_directly_imported_by(m)]
    between = {(_floor(m), _floor(i)) for m, i in edges if _floor(m) != _floor(i)}
    return {
        "floors": len(FLOORS) + 1,
        "arrows_between_floors": len(between),
        "arrows_running_up": sum(1 for a, b in between if b > a),
        "module_circles": sum(1 for _ in nx.simple_cycles(nx.DiGraph(edges))),
    }


if __name__ == "__main__":
    for name, count in draw().items():
        print(f"{name:<22} {count}")
