"""Trained weights on disk: one file per model, its provenance beside the tensors.

A weights file is a ``torch.save`` of ``{"record": {...}, "state": state_dict}``. The record
names the method, the embedding model and its dimension (the features a network was trained
on), the settings, the training data, the seed, the loss curve and the package versions; it is
read back with ``weights_only=True``, so a file cannot run code.

Retrieval looks for a method's weights in this order: the file given to the retriever,
``INDEX/models/METHOD.pt`` (what `hopgraph train METHOD --index INDEX` writes by default), and
weights shipped in ``tools/weights_data`` for the embedding model (G-RAG's and IIER's, for
all-MiniLM-L6-v2; their records say how they were trained).
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store import Index

SHIPPED = Path(__file__).parent / "weights_data"


def shipped_path(method: str, model: str) -> Path:
    """Where the weights shipped for ``method`` over ``model`` vectors live."""
    return SHIPPED / f"{method}-{Path(model).name}.pt"


def available_weights(index: Index, method: str) -> Path | None:
    """Return the weights ``method`` finds for ``index`` (its own, then shipped), or None."""
    local = index.directory / "models" / f"{method}.pt"
    shipped = shipped_path(method, index.manifest.settings.model)
    return next((path for path in (local, shipped) if path.is_file()), None)


def find_weights(index: Index, method: str) -> Path:
    """Return the weights ``method`` must use over ``index``, or say how to train them."""
    found = available_weights(index, method)
    if found is not None:
        return found
    local = index.directory / "models" / f"{method}.pt"
    raise IndexStateError(
        f"{method} needs trained weights, and none fit an index embedded with "
        f"{index.manifest.settings.model!r}",
        f"train them: `hopgraph train {method} --data DATASET-train --out "
        f"{local}` (an index with the same embedding model), or pass a weights file",
    )


def save_weights(path: Path, record: dict[str, Any], state: dict[str, Any]) -> None:
    """Write weights atomically: a failed save leaves the previous file as it was."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    torch.save({"record": record, "state": state}, partial)
    os.replace(partial, path)


def load_weights(path: Path, index: Index, method: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read (record, state) and refuse weights made for another method or embedding model."""
    import torch

    hint = f"train them for this index: `hopgraph train {method} --help`"
    try:
        saved = torch.load(path, weights_only=True)
        record, state = saved["record"], saved["state"]
    except (OSError, RuntimeError, KeyError, TypeError, EOFError, pickle.UnpicklingError) as err:
        raise InputError(f"{path}: not a hopgraph weights file ({err})", hint) from err
    if record.get("method") != method:
        raise InputError(f"{path} holds {record.get('method')!r} weights, not {method!r}", hint)
    model, dimension = index.manifest.settings.model, index.manifest.embedder["dimension"]
    if (record.get("model"), record.get("dimension")) != (model, dimension):
        raise IndexStateError(
            f"{path} was trained on {record.get('dimension')}-d vectors of "
            f"{record.get('model')!r}; this index holds {dimension}-d vectors of {model!r}",
            hint,
        )
    return record, state
