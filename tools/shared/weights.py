"""Trained weights on disk: one file per model, its provenance beside the tensors.

A weights file is a ``torch.save`` of ``{"record": {...}, "state": state_dict}``. The record
names the method, the embedding model and its dimension (the features a network was trained
on), the settings, the training data, the seed, the loss curve and the package versions; it is
read back without torch (:func:`read_weights`: the file's pickle may name only a dict, a
tensor and a float storage type, so a file cannot run code), so that retrieval with trained
weights never imports torch (about 1.5 s of a command's start); a file it cannot read is passed
to ``torch.load(weights_only=True)``.

Retrieval looks for a method's weights in this order: the file given to the retriever,
``INDEX/models/METHOD.pt`` (what `hopgraph train METHOD --index INDEX` writes by default), and
weights shipped in ``tools/shared/weights_data`` for the embedding model (G-RAG's and IIER's, for
all-MiniLM-L6-v2; their records say how they were trained).
"""

from __future__ import annotations

import collections
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store import Index

SHIPPED = Path(__file__).parent / "weights_data"

_STORAGES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "BoolStorage": np.bool_,
}
"""torch's typed storages (as a torch.save pickle names them) and their numpy dtypes."""


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


class _Plain(pickle.Unpickler):
    """Unpickle a torch.save archive's ``data.pkl`` of dicts and tensors into numpy arrays."""

    def __init__(self, archive: zipfile.ZipFile, folder: str) -> None:
        super().__init__(archive.open(f"{folder}/data.pkl"))
        self.archive, self.folder = archive, folder

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in _STORAGES:
            return np.dtype(_STORAGES[name])
        raise pickle.UnpicklingError(f"{module}.{name} is not a plain tensor or dict")

    def persistent_load(self, pid: Any) -> np.ndarray:
        kind, dtype, key, _location, numel = pid  # ("storage", dtype, key, "cpu", numel)
        if kind != "storage" or not isinstance(dtype, np.dtype):
            raise pickle.UnpicklingError(f"unknown storage {pid!r}")
        raw = self.archive.read(f"{self.folder}/data/{key}")
        return np.frombuffer(raw, dtype=dtype.newbyteorder("<"), count=numel)


def _rebuild_tensor(
    storage: np.ndarray, offset: int, size: tuple[int, ...], stride: tuple[int, ...], *_: Any
) -> np.ndarray:
    """torch._utils._rebuild_tensor_v2 in numpy: a (copied) strided view of the storage."""
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(
        storage[offset:], shape=size, strides=[s * item for s in stride]
    )
    return np.array(view, dtype=storage.dtype.newbyteorder("="))


def read_weights(path: Path) -> dict[str, Any]:
    """Read a ``torch.save`` file of dicts and tensors without torch; tensors as numpy arrays.

    Raises ``pickle.UnpicklingError`` for anything else (another class, big-endian data).
    """
    with zipfile.ZipFile(path) as archive:
        folder = next(n for n in archive.namelist() if n.endswith("/data.pkl"))[: -len("/data.pkl")]
        if archive.read(f"{folder}/byteorder").strip() != b"little":
            raise pickle.UnpicklingError("big-endian tensors")
        return _Plain(archive, folder).load()


def _read(path: Path) -> Any:
    """Read without torch if the file is plain (as torch.save writes a state dict), else with it.

    torch reads an older format, or classes :func:`read_weights` does not know.
    """
    try:
        return read_weights(path)
    except (zipfile.BadZipFile, KeyError, StopIteration, ValueError, pickle.UnpicklingError):
        import torch

        saved = torch.load(path, weights_only=True)
        if isinstance(saved, dict) and isinstance(saved.get("state"), dict):
            saved["state"] = {
                k: v.numpy() if isinstance(v, torch.Tensor) else v
                for k, v in saved["state"].items()
            }
        return saved


def load_weights(path: Path, index: Index, method: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read (record, state) and refuse weights made for another method or embedding model.

    The state's tensors come back as numpy arrays (``torch.from_numpy`` makes them tensors).
    """
    hint = f"train them for this index: `hopgraph train {method} --help`"
    try:
        saved = _read(path)
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
