"""Load documents from a file or a folder: JSONL, a benchmark folder, or a user's documents.

A source is a ``.jsonl`` file of ``{id, title, text, ...}`` (other keys become metadata), a
benchmark folder holding ``corpus.jsonl``, one document file, or a folder searched recursively
for .md / .txt / .rst / .html / .pdf / .jsonl files (hidden files and folders are left out;
``include`` / ``exclude`` globs pick among the rest). A folder's file that cannot be read is
skipped and reported with its reason (:class:`LoadReport`), or, ``strict``, stops the load
before anything is written; a single file that cannot be read always stops it. Files of other
kinds (images, archives, ...) are skipped and named, never an error.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from hopgraph.core.errors import InputError
from hopgraph.core.settings import settings

from .autodoc import Sources, sourcing
from .file_formats import DOCUMENT_SUFFIXES, SkipFile, check_fields, read_file, scalar
from .rst_references import resolving, scan_folder
from .schema import Document

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
NOT_A_DOCUMENT = "not a supported kind"
"""Why a file of another kind (an image, an archive) is skipped."""
SHOWN_SKIPS = 20
"""Skipped files named one per line in a summary; the rest are counted."""


@dataclass
class LoadReport:
    """What a load read, skipped (file, reason) and re-decoded (file, encoding)."""

    source: Path
    files: int = 0
    documents: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    redecoded: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    """(file, what of it could not be read): an include that is missing, say."""
    autodoc: Sources | None = None
    """The autodoc directives met, and those read from the package's source (and where)."""

    def summary(self) -> list[str]:
        """Return the summary lines: counts, then each skipped and re-decoded file."""
        lines = [
            f"read {self.files} file(s) from {self.source}: {self.documents} document(s), "
            f"{len(self.skipped)} skipped, {len(self.redecoded)} re-decoded"
            + (f"; {self.autodoc.summary()}" if self.autodoc and self.autodoc.met else "")
        ]
        lines += [f"  skipped {name}: {why}" for name, why in self.skipped[:SHOWN_SKIPS]]
        if len(self.skipped) > SHOWN_SKIPS:
            lines.append(f"  ... and {len(self.skipped) - SHOWN_SKIPS} more skipped")
        lines += [f"  re-decoded {name} from {enc} (not UTF-8)" for name, enc in self.redecoded]
        lines += [f"  {name}: {why}" for name, why in self.warnings]
        return lines


@dataclass(frozen=True)
class Loaded:
    """The documents of a source and the report of reading them."""

    documents: list[Document]
    report: LoadReport


def load_corpus(
    source: str | Path,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    strict: bool = False,
    max_mb: float | None = None,
    autodoc_source: Sequence[str | Path] | str | Path | None = None,
) -> Loaded:
    """Load and check the documents of ``source`` (non-empty, unique ids); see the module doc.

    ``max_mb``: documents with more text are skipped and named (default: the
    ``max_document_mb`` setting), or, ``strict``, refused. ``autodoc_source``: where
    autodoc's directives are read from, one or more package sources (default: beside the
    docs; :mod:`.autodoc`).
    """
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory", "check the path to the documents")
    report = LoadReport(path)
    with sourcing(autodoc_source, path if path.is_dir() else path.parent) as autodoc:
        if path.is_dir() and (path / "corpus.jsonl").is_file():
            docs = load_jsonl(path / "corpus.jsonl")  # its root: its own folder
            report.files = 1
        elif path.is_dir():
            docs = _load_folder(path, include, exclude, strict, report)
        else:
            try:  # labels within the file resolve
                with resolving(scan_folder(path.parent, [(path, path.name)])):
                    docs = _load_file(path, path.name, report, strict)
            except SkipFile as err:
                raise InputError(f"{path}: {err}") from err
            report.files = 1
    report.autodoc = autodoc
    report.documents = len(docs)
    if not docs:
        why = " (every file was skipped)" if report.skipped else ""
        raise InputError(
            f"{path}: the corpus is empty{why}",
            "give at least one document with text",
        )
    docs = _within_size(docs, report, strict, max_mb)
    check_unique_ids(docs, str(path))
    return Loaded(docs, report)


def _within_size(
    docs: list[Document], report: LoadReport, strict: bool, max_mb: float | None
) -> list[Document]:
    """Skip (or, strict, refuse) documents whose text is over the size limit, naming each."""
    limit = settings().max_document_mb if max_mb is None else max_mb
    kept = []
    for doc in docs:
        if within_size(doc, limit, strict, report):
            kept.append(doc)
    report.documents = len(kept)
    if docs and not kept:
        raise InputError(
            f"{report.source}: every document is over the {limit:g} MB limit",
            "split them, or raise HOPGRAPH_MAX_DOCUMENT_MB",
        )
    return kept


def within_size(doc: Document, limit: float, strict: bool, report: LoadReport) -> bool:
    """Tell whether ``doc``'s text is within ``limit`` MB; if not, name it skipped or refuse it."""
    size = len(doc.text.encode("utf-8")) / 1e6
    if size <= limit:
        return True
    why = f"{size:.1f} MB of text, over the {limit:g} MB limit"
    if strict:
        raise InputError(
            f"{doc.id}: {why}", "split it, or raise HOPGRAPH_MAX_DOCUMENT_MB (max_document_mb)"
        )
    report.skipped.append((doc.id, f"{why} (HOPGRAPH_MAX_DOCUMENT_MB)"))
    return False


def jsonl_corpus(source: str | Path) -> Path | None:
    """Return the JSONL file a source is (a .jsonl file, or a benchmark folder's), if it is one."""
    path = Path(source)
    if path.is_dir():
        return path / "corpus.jsonl" if (path / "corpus.jsonl").is_file() else None
    return path if path.suffix.lower() in JSONL_SUFFIXES and path.is_file() else None


def load_documents(source: str | Path) -> list[Document]:
    """Load ``source`` strictly (any unreadable file is an error); return its documents."""
    return load_corpus(source, strict=True).documents


def _load_file(
    path: Path, doc_id: str, report: LoadReport, strict: bool = False, root: str = ""
) -> list[Document]:
    """Read one file: a JSONL file's records (InputError on a bad line), or one document."""
    if path.suffix.lower() in JSONL_SUFFIXES:
        return load_jsonl(path, root)
    if path.suffix.lower() not in DOCUMENT_SUFFIXES:
        raise InputError(
            f"{path}: expected a .jsonl file, a document ({', '.join(DOCUMENT_SUFFIXES)}) or a "
            "folder",
            "give a JSONL file of {id, title, text}, a document file, or a folder of them",
        )
    parsed = read_file(path, _read_bytes(path))
    if parsed.warnings and strict:
        raise InputError(
            f"{path}: {parsed.warnings[0]}",
            "fix it (an include, an autodoc directive's source), or drop --strict to index "
            "without it",
        )
    report.warnings += [(doc_id, why) for why in parsed.warnings]
    if parsed.encoding:
        report.redecoded.append((doc_id, parsed.encoding))
    source = str(path.resolve())
    return [Document(doc_id, parsed.title, parsed.text, source, parsed.metadata, root)]


def _load_folder(
    folder: Path, include: Sequence[str], exclude: Sequence[str], strict: bool, report: LoadReport
) -> list[Document]:
    """Read every document file below ``folder``; the id is the path relative to it.

    Its pages' titles and labels are scanned first: a page's ``:ref:`` and ``:doc:`` show the
    title they point to in another page (rst_references).
    """
    files = list(_files(folder, include, exclude))
    with resolving(scan_folder(folder, files)):
        docs = _read_files(files, report, strict, str(folder.resolve()))
    if not docs and not report.skipped:
        raise InputError(
            f"{folder}: no corpus.jsonl and no document files "
            f"({', '.join((*DOCUMENT_SUFFIXES, *JSONL_SUFFIXES))})",
            "point at a JSONL file, a benchmark folder, or a folder of documents",
        )
    return docs


def _read_files(
    files: list[tuple[Path, str]], report: LoadReport, strict: bool, root: str
) -> list[Document]:
    """Read the folder's ``files`` (path, name relative to the folder ``root``) into documents."""
    docs: list[Document] = []
    for file, name in files:
        if file.suffix.lower() not in (*DOCUMENT_SUFFIXES, *JSONL_SUFFIXES):
            report.skipped.append((name, f"{NOT_A_DOCUMENT} ({file.suffix or 'no suffix'})"))
            continue
        try:
            docs += _load_file(file, name, report, strict, root)
            report.files += 1
        except (InputError, SkipFile) as err:
            why = err.message.removeprefix(f"{file}: ") if isinstance(err, InputError) else str(err)
            if strict:
                raise InputError(
                    f"{file}: {why}", "fix or exclude that file (--exclude GLOB), or drop --strict"
                ) from err
            report.skipped.append((name, why))
    return docs


def _files(
    folder: Path, include: Sequence[str], exclude: Sequence[str]
) -> Iterable[tuple[Path, str]]:
    """Yield (file, path relative to ``folder``) below it, sorted, hidden ones left out."""
    for file in sorted(folder.rglob("*")):
        name = file.relative_to(folder).as_posix()
        if any(part.startswith(".") for part in Path(name).parts) or not file.is_file():
            continue
        if include and not any(fnmatch.fnmatch(name, g) for g in include):
            continue
        if any(fnmatch.fnmatch(name, g) for g in exclude):
            continue
        yield file, name


def load_jsonl(path: Path, root: str = "") -> list[Document]:
    """Read one ``{id, title, text, ...}`` object per line; blank lines are skipped.

    ``root``: the folder that was indexed (hits show the file's path relative to it).
    """
    docs = []
    source = str(path.resolve())
    for number, line in enumerate(_read_bytes(path).splitlines(), start=1):
        if line.strip():
            docs.append(parse_line(line, path, number, source, root))
    return docs


def parse_line(line: bytes, path: Path, number: int, source: str, root: str = "") -> Document:
    """Parse line ``number`` of the JSONL file ``path`` into a document (InputError if bad)."""
    where = f"{path}:{number}"
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        problem = "not valid UTF-8" if "utf-8" in str(err).lower() else f"malformed JSON ({err})"
        raise InputError(f"{where}: {problem}", "fix or remove that line") from err
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object with id, title and text")
    doc_id, text = record.pop("id", None), record.pop("text", None)
    if doc_id is None or str(doc_id).strip() == "":
        raise InputError(f"{where}: missing 'id'", "every document needs a unique id")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: missing or empty 'text' for id {doc_id!r}")
    title = record.pop("title", None) or ""
    if not isinstance(title, str):
        raise InputError(f"{where}: 'title' must be a string")
    if isinstance(record.get("metadata"), dict):  # {"metadata": {...}} or the fields flat
        record = {**record.pop("metadata"), **record}
    fields = record
    metadata = {str(k): scalar(v) for k, v in fields.items() if v is not None}
    try:
        check_fields(metadata)
    except ValueError as err:
        raise InputError(f"{where}: {err}") from err
    return Document(str(doc_id), title.strip(), text.strip(), source, metadata, root)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
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
