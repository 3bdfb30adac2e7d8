"""Draw hopgraph's imports as floors: arrows between floors, arrows running up, circles.

    python -m hopgraph.evals.imports

import-linter (``lint-imports``, run by the unit suite) enforces the layers; this counts them.
Each floor is a top-level folder of the checkout (core/, graph_store/, tools/, agents/, evals/,
prompts/; the surfaces are hopgraph/, which links to the others), read as installed.
"""

from __future__ import annotations

FLOORS = ("prompts", "core", "graph_store", "tools", "agents", "evals")
"""From the bottom; every other module of hopgraph is a surface, the top floor."""


def _floor(module: str) -> int:
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 1 and parts[1] in FLOORS else len(FLOORS)


def draw() -> dict[str, int]:
    """Return the counts: floors, arrows between floors, arrows running up, module circles."""
    import grimp  # import-linter's graph builder (the test extra)
    import networkx as nx

    graph = grimp.build_graph("hopgraph", cache_dir=None)
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
