"""Draw hopgraph's imports as floors: arrows between floors, arrows running up, circles.

    python -m hopgraph.evals.imports

import-linter (``lint-imports``, run by the unit suite) enforces the layers; this counts them.
Each floor is a top-level folder of the checkout (core/, graph_store/, tools/, agents/, evals/,
prompts/; the surfaces are hopgraph/, which links to the others), read as installed, and the
rooms of graph_store, tools, evals and the surfaces (cli, page, mcp, explain) are floors of their
own: a package's sub-packages, with its face (the package's ``__init__``, which names the public
``Index``, ``build_index``, ...) above them. A floor may hold rooms that must not import one
another (stores and embedding; the method families): an arrow between them is counted apart, as
an arrow across a floor.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

FLOORS: tuple[tuple[str, ...], ...] = (
    ("prompts",),
    ("core",),
    ("graph_store.documents",),
    ("graph_store.embedding", "graph_store.stores"),
    ("graph_store.graphs",),
    ("graph_store.index",),
    ("graph_store.cluster",),
    ("graph_store",),
    ("tools.shared",),
    ("tools.baselines",),
    ("tools.guards",),
    ("tools.gnn_ret", "tools.gear", "tools.iier", "tools.grag"),
    ("tools.frameworks",),
    ("tools",),
    ("agents",),
    ("evals",),
    ("evals.servers",),
    ("evals.studies", "evals.faults", "evals.bench"),
    ("evals.rendering",),
    ("explain",),
    ("mcp",),
    ("page",),
    ("cli",),
)
"""From the bottom, each floor's rooms; every other module of hopgraph (``__main__``,
``reference``) is a surface of the top floor. A room is a package or a module; a package's own
``__init__`` (its face) is a room of the floor above its sub-packages (graph_store's names the
public ``Index``, tools' the registry). The order is pyproject.toml's layer contracts."""

SURFACES = "surfaces"
LINKED = ("agents", "core", "evals", "graph_store", "prompts", "tools")
"""The floors that are folders of the checkout beside hopgraph/, which links to each."""


def room(module: str) -> str:
    """Return the room a module of hopgraph belongs to: the longest name of FLOORS it is in."""
    name = module.removeprefix("hopgraph.")
    rooms = [r for floor in FLOORS for r in floor if name == r or name.startswith(r + ".")]
    return max(rooms, key=len) if rooms else SURFACES


def floor_of(room_name: str) -> int:
    """Return a room's floor, 0 at the bottom; the surfaces are the top floor."""
    for number, floor in enumerate(FLOORS):
        if room_name in floor:
            return number
    return len(FLOORS)


def draw() -> dict[str, int]:
    """Return the counts: floors, arrows between floors, arrows running up or across, circles."""
    import grimp  # import-linter's graph builder (the test extra)
    import networkx as nx

    graph = grimp.build_graph("hopgraph", cache_dir=None)
    edges = [(m, i) for m in graph.modules for i in graph.find_modules_directly_imported_by(m)]
    between = {(room(m), room(i)) for m, i in edges if room(m) != room(i)}
    return {
        "floors": len(FLOORS) + 1,
        "rooms": sum(map(len, FLOORS)) + 1,
        "arrows_between_rooms": len(between),
        "arrows_running_up": sum(1 for a, b in between if floor_of(b) > floor_of(a)),
        "arrows_across_a_floor": sum(1 for a, b in between if floor_of(b) == floor_of(a)),
        "module_circles": sum(1 for _ in nx.simple_cycles(nx.DiGraph(edges))),
    }


def floors_text() -> str:
    """Return the floors from the top, a line each, with their rooms."""
    lines = [f"{len(FLOORS):>2}  {SURFACES}"]
    for number in range(len(FLOORS) - 1, -1, -1):
        lines.append(f"{number:>2}  {' | '.join(FLOORS[number])}")
    return "\n".join(lines)


MAX_LINES = 500
"""No module of the package is longer (docs/development.md): past it, a module becomes rooms."""
MAX_MODULES = 15
"""No folder of the package holds more modules directly: past it, a folder becomes rooms."""


def package_files() -> list[Path]:
    """Return every module of the installed package, as its file (the linked folders followed)."""
    spec = importlib.util.find_spec("hopgraph")  # found, not imported: no arrow up from here
    assert spec is not None and spec.origin is not None
    root = Path(spec.origin).parent
    files = {f.resolve() for name in ("", *LINKED) for f in (root / name).rglob("*.py")}
    return sorted(f for f in files if "docsets" not in f.parts)


def sizes() -> dict[str, tuple[str, int]]:
    """Return the longest module and the fullest folder, each with its count."""
    files = package_files()
    lines = {f: len(f.read_text(encoding="utf-8").splitlines()) for f in files}
    longest = max(lines, key=lambda f: lines[f])
    per_folder = Counter(f.parent for f in files)
    fullest = max(per_folder, key=lambda d: per_folder[d])
    return {
        "longest_module": (_shown(longest), lines[longest]),
        "fullest_folder": (_shown(fullest), per_folder[fullest]),
    }


def _shown(path: Path) -> str:
    """Return a path as the checkout names it (tools/gnn_ret/retriever.py), else whole."""
    for parent in path.parents:
        if (parent / "pyproject.toml").exists():
            return str(path.relative_to(parent))
    return str(path)


if __name__ == "__main__":
    print(floors_text())
    print()
    for name, count in draw().items():
        print(f"{name:<22} {count}")
    for name, (where, count) in sizes().items():
        print(f"{name:<22} {count} ({where})")
