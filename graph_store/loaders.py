"""Load documents from a benchmark folder, a JSONL file, or a folder of .txt / .md files.

Every problem is reported with the file (and line) it is in, before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from hopgraph.core.errors import InputError

from .documents import Document

TEXT_SUFFIXES = (".txt", ".md")


def load_documents(source: str | Path) -> list[Document]:
    """Load a corpus from ``source`` and check it (non-empty, unique ids, UTF-8).

    ``source`` may be a ``.jsonl`` file of ``{id, title, text}``, a benchmark folder holding
    ``corpus.jsonl``, or a folder of ``.txt`` / ``.md`` files (searched recursively).
    """
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory", "check the path to the corpus")
    if path.is_dir():
        corpus = path / "corpus.jsonl"
        docs = load_jsonl(corpus) if corpus.is_file() else load_text_folder(path)
    else:
        docs = load_jsonl(path)
    if not docs:
        raise InputError(f"{path}: the corpus is empty", "give at least one document with text")
    check_unique_ids(docs, str(path))
    return docs


def load_jsonl(path: Path) -> list[Document]:
    """Read one ``{id, title, text}`` object per line; blank lines are skipped."""
    if path.suffix not in (".jsonl", ".json", ".ndjson"):
        raise InputError(
            f"{path}: expected a .jsonl file or a folder",
            "give a JSONL file of {id, title, text}, a folder with corpus.jsonl, "
            "or a folder of .txt/.md files",
        )
    docs = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if line.strip():
            docs.append(_parse_line(line, path, number))
    return docs


def _parse_line(line: str, path: Path, number: int) -> Document:
    where = f"{path}:{number}"
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: malformed JSON ({err.msg})", "fix or remove that line") from err
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object with id, title and text")
    doc_id, text = record.get("id"), record.get("text")
    if doc_id is None or str(doc_id).strip() == "":
        raise InputError(f"{where}: missing 'id'", "every document needs a unique id")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: missing or empty 'text' for id {doc_id!r}")
    title = record.get("title") or ""
    if not isinstance(title, str):
        raise InputError(f"{where}: 'title' must be a string")
    return Document(id=str(doc_id), title=title.strip(), text=text.strip())


def load_text_folder(folder: Path) -> list[Document]:
    """Read every .txt / .md file below ``folder``; the id is the path relative to the folder."""
    files = sorted(
        p for p in folder.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES and p.is_file()
    )
    if not files:
        raise InputError(
            f"{folder}: no corpus.jsonl and no .txt or .md files",
            "point at a JSONL file, a benchmark folder, or a folder of text files",
        )
    docs = []
    for file in files:
        text = _read_text(file).strip()
        if text:
            title, body = _split_title(text, file)
            docs.append(Document(id=file.relative_to(folder).as_posix(), title=title, text=body))
    return docs


def _split_title(text: str, file: Path) -> tuple[str, str]:
    """Use a leading Markdown heading as the title, else the file name."""
    first, _, rest = text.partition("\n")
    if first.startswith("#") and rest.strip():
        return first.lstrip("#").strip(), rest.strip()
    return file.stem.replace("_", " ").replace("-", " "), text


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InputError(
            f"{path}: not valid UTF-8 (byte {err.start})", "re-encode the file as UTF-8"
        ) from err
    except OSError as err:
        raise InputError(f"{path}: cannot be read ({err.strerror})") from err


def check_unique_ids(docs: Iterable[Document], where: str) -> None:
    """Raise if two documents share an id, naming the first repeated ids."""
    seen: set[str] = set()
    repeated: list[str] = []
    for doc in docs:
        if doc.id in seen:
            repeated.append(doc.id)
        seen.add(doc.id)
    if repeated:
        raise InputError(
            f"{where}: duplicate document ids: {quote_ids(repeated)}", "document ids must be unique"
        )


def quote_ids(ids: Sequence[str], shown: int = 5) -> str:
    """List the first ``shown`` ids quoted, then how many more there are."""
    text = ", ".join(repr(i) for i in ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
