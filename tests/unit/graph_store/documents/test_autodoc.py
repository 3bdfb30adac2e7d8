"""autodoc's directives read from the package's source (griffe, never imported), or warned of."""

import re
import textwrap
from pathlib import Path

import pytest

from hopgraph.core.errors import InputError
from hopgraph.graph_store.documents.loaders import load_corpus

KINDS_PY = '''\
"""Kinds of noodle."""

__all__ = ["Noodle", "Soggy", "boil", "FLOUR"]

from os import path


class Noodle:
    """A noodle made of :class:`~noodles.kinds.Flour`.

    .. versionadded:: 1.0
    """

    #: How long it cooks,
    #: in minutes.
    minutes: int = 8

    def __init__(self, flour: str, length: float = 1.0) -> None:
        self.flour = flour

    def eat(self, persona: str) -> bool:
        """Eat it as ``persona``."""
        return True

    def _private(self) -> None:
        """Not shown without private-members."""

    @property
    def weight(self) -> float:
        """Its weight in grams."""
        return 1.0

    @classmethod
    def dried(cls) -> "Noodle":
        """A dried one."""
        return cls("durum")

    def undocumented(self) -> None:
        pass


class Udon(Noodle):
    minutes = 10

    def eat(self, persona: str) -> bool:
        return False


class Soggy(ValueError):
    """Cooked too long."""


def boil(water: float, *, salt: bool = True) -> None:
    """Boil the water first."""


def helper() -> None:
    """Not in __all__: automodule leaves it out."""


FLOUR = "wheat"
"""The flour used when none is given."""
'''

API_RST = """\
API
===

.. automodule:: noodles.kinds
   :members:

.. currentmodule:: noodles.kinds

.. autoclass:: Noodle
   :members: eat, weight, dried

   Written in the page.

   .. autoattribute:: minutes

.. autofunction:: boil

.. autoexception:: Soggy

.. autodata:: FLOUR

.. class:: Udon

   .. automethod:: eat

.. autofunction:: noodles.kinds.fry

.. autoclass:: elsewhere.Thing

Last words.
"""


@pytest.fixture
def sdist(tmp_path: Path) -> Path:
    """A source distribution: the package ``noodles`` beside its ``docs/`` folder."""
    root = tmp_path / "noodles-1.0"
    (root / "noodles").mkdir(parents=True)
    (root / "noodles" / "__init__.py").write_text('"""Noodles."""\n')
    (root / "noodles" / "kinds.py").write_text(KINDS_PY)
    (root / "docs").mkdir()
    (root / "docs" / "api.rst").write_text(API_RST)
    return root


def _text(root: Path, **kwargs) -> tuple[str, list[str], str]:
    loaded = load_corpus(root, **kwargs)
    [doc] = loaded.documents
    summary = loaded.report.autodoc.summary() if loaded.report.autodoc else ""
    return doc.text, [why for _, why in loaded.report.warnings], summary


def _signature(paragraph: str) -> str:
    """Return a signature paragraph's code, without the description it opens."""
    return re.split(r"(?<=`): ", paragraph, maxsplit=1)[0]


def test_autodoc_reads_signatures_and_docstrings_from_the_source_beside_the_docs(sdist: Path):
    text, warnings, summary = _text(sdist / "docs")
    # automodule: the module's docstring, then __all__'s members in alphabetical order (the
    # import and helper left out), a class's members as its own
    module = text.split("Written in the page.")[0]
    # a signature and its docstring's first paragraph are one ("`name`: text", issue 74)
    shown = [_signature(line).split("(")[0] for line in module.split("\n\n") if line[:1] == "`"]
    assert shown == [
        "`noodles.kinds.FLOUR = 'wheat'`",
        "`class noodles.kinds.Noodle",
        "`classmethod dried",
        "`eat",
        "`minutes: int = 8`",
        "`property weight: float`",
        "`exception noodles.kinds.Soggy`",
        "`noodles.kinds.boil",
        "`class noodles.kinds.Noodle",  # the autoclass below
    ]
    assert module.startswith("Kinds of noodle.\n\n`noodles.kinds.FLOUR = 'wheat'`: The flour")
    assert "helper" not in text
    # the docstring's reStructuredText rendered as the page's own: roles, versionadded
    assert "A noodle made of `Flour`.\n\nAdded in version 1.0." in text
    # autoclass: signature, docstring, the page's content, then the members named, in order
    block = text.split("`class noodles.kinds.Noodle(flour: str, length: float = 1.0)`")[2]
    assert block.index("Written in the page.") < block.index("`minutes: int = 8`")
    assert "`minutes: int = 8`: How long it cooks, in minutes." in block  # a #: comment
    assert "`eat(persona: str) -> bool`: Eat it as `persona`." in block
    assert "`property weight: float`: Its weight in grams." in block
    assert "`classmethod dried() -> Noodle`: A dried one." in block
    assert "_private" not in text and "undocumented" not in text
    assert "`noodles.kinds.boil(water: float, *, salt: bool = True) -> None`" in text
    assert "`exception noodles.kinds.Soggy`: Cooked too long." in text
    # .. class:: Udon (written by hand): a bare automethod is Udon's, its docstring inherited
    assert "`Udon`\n\n`eat(persona: str) -> bool`: Eat it as `persona`." in text
    assert text.endswith("Last words.")
    assert summary.startswith("autodoc: 7 of 9 directive(s) resolved (")
    assert summary.endswith(f"{(sdist / 'noodles').resolve()})")
    assert len(warnings) == 2


def test_an_object_not_in_the_source_is_a_warning_naming_the_directive_and_line(sdist: Path):
    text, warnings, _ = _text(sdist / "docs")
    fry, thing = warnings
    assert fry.startswith("api.rst line 26: autodoc: `.. autofunction:: noodles.kinds.fry`: ")
    assert "`noodles.kinds.fry` is not in " in fry
    assert thing.startswith("api.rst line 28: autodoc: `.. autoclass:: elsewhere.Thing`: ")
    assert "no source of `elsewhere` beside the docs" in thing and "--autodoc-source" in thing
    assert "`noodles.kinds.fry`\n\n`elsewhere.Thing`\n\nLast words." in text  # as written
    with pytest.raises(InputError, match=r"api\.rst line 26: autodoc: .*fry"):
        load_corpus(sdist / "docs", strict=True)


def test_the_warning_gives_the_reading_that_explains_most(sdist: Path):
    (sdist / "docs" / "api.rst").write_text(
        "API\n===\n\n.. currentmodule:: noodles.kinds\n\n.. automethod:: Noodle.eet\n\n"
        ".. currentmodule:: other.mod\n\n.. class:: Gone\n\n   .. autoattribute:: size\n"
    )
    typo, gone = _text(sdist / "docs")[1]
    assert "`noodles.kinds.Noodle.eet` is not in " in typo  # Noodle: the current module's
    assert "no source of `other` beside the docs" in gone  # not "of `size`"


def test_a_module_that_does_not_parse_is_named_with_its_line(sdist: Path):
    (sdist / "noodles" / "broken.py").write_text('"""Fine so far."""\n\ndef f(:\n    pass\n')
    page = sdist / "docs" / "api.rst"
    page.write_text(API_RST + "\n.. autofunction:: noodles.broken.f\n")
    text, warnings, summary = _text(sdist / "docs")
    broken = f"{(sdist / 'noodles' / 'broken.py').resolve()} does not parse (line 3: "
    assert warnings[-1].startswith("api.rst line 32: autodoc: `.. autofunction:: noodles.broken.f`")
    assert broken in warnings[-1]
    assert summary.startswith("autodoc: 7 of 10")  # the other modules are read as before
    assert "`noodles.kinds.boil(water: float" in text
    page.write_text("API\n===\n\n.. autofunction:: noodles.broken.f\n")
    with pytest.raises(InputError, match=r"api\.rst line 4: .*broken\.py does not parse"):
        load_corpus(sdist / "docs", strict=True)


def test_a_broken_package_init_is_named_too(sdist: Path):
    (sdist / "noodles" / "__init__.py").write_text("import (\n")
    _, warnings, summary = _text(sdist / "docs")
    assert summary.startswith("autodoc: 0 of 9")
    init = (sdist / "noodles" / "__init__.py").resolve()
    assert all(f"{init} does not parse (line 1" in w for w in warnings[:8])


def test_autodoc_source_given_the_package_or_the_folder_holding_it(sdist: Path, tmp_path: Path):
    docs = tmp_path / "elsewhere-docs"
    docs.mkdir()
    (docs / "api.rst").write_text(
        "API\n===\n\n.. autofunction:: noodles.kinds.boil\n\n.. automethod:: "
        "noodles.kinds.Noodle.eat\n"
    )
    _, warnings, summary = _text(docs)
    assert summary == "autodoc: 0 of 2 directive(s) resolved (no package source read)"
    assert "no source of `noodles` beside the docs" in warnings[0]
    for given in (sdist / "noodles", sdist):
        text, warnings, summary = _text(docs, autodoc_source=given)
        assert warnings == [] and summary.startswith("autodoc: 2 of 2")
        assert "Boil the water first." in text and "Eat it as `persona`." in text
    src = tmp_path / "project" / "src"  # a src/ layout, given as the project
    src.mkdir(parents=True)
    (sdist / "noodles").rename(src / "noodles")
    assert _text(docs, autodoc_source=src.parent)[2].startswith("autodoc: 2 of 2")


def test_several_autodoc_sources_each_package_read_from_its_own(sdist: Path, tmp_path: Path):
    extra = tmp_path / "other" / "extra"
    extra.mkdir(parents=True)
    (extra / "__init__.py").write_text('def helper(x: int) -> int:\n    """Help with x."""\n')
    docs = tmp_path / "site"
    docs.mkdir()
    (docs / "a.rst").write_text(
        "A\n=\n\n.. autofunction:: extra.helper\n\n.. autofunction:: noodles.kinds.boil\n"
    )
    text, warnings, summary = _text(docs, autodoc_source=[extra, sdist])
    assert summary.startswith("autodoc: 2 of 2") and warnings == []
    assert "Help with x." in text and "Boil the water first." in text
    loaded = load_corpus(docs, autodoc_source=[extra])
    [(name, why)] = loaded.report.warnings
    assert name == "a.rst" and why.startswith("a.rst line 6: autodoc: ")
    assert f"`noodles` is not in {extra.resolve()} (--autodoc-source)" in why
    met = loaded.report.autodoc.met
    assert [(m.line, m.directive, m.name, m.found) for m in met] == [
        (4, "autofunction", "extra.helper", "extra.helper"),
        (6, "autofunction", "noodles.kinds.boil", ""),
    ]


def test_a_missing_autodoc_source_is_an_error_before_anything_is_read(sdist: Path):
    with pytest.raises(InputError, match=r"no-such-dir: no such folder \(--autodoc-source\)"):
        load_corpus(sdist / "docs", autodoc_source=sdist / "no-such-dir")
    (sdist / "notes.txt").write_text("not source")
    with pytest.raises(InputError, match=r"not a folder or a \.py file"):
        load_corpus(sdist / "docs", autodoc_source=sdist / "notes.txt")


def test_the_cli_takes_autodoc_source_and_a_missing_one_writes_nothing(
    sdist: Path, tmp_path: Path, capsys
):
    from hopgraph.cli import main

    index = tmp_path / "idx"
    base = ["index", str(sdist / "docs"), "--index", str(index), "--model", "hashing", "-q"]
    assert main([*base, "--autodoc-source", str(tmp_path / "gone")]) != 0
    out, err = capsys.readouterr()
    assert "gone: no such folder (--autodoc-source)" in err
    assert not index.exists()
    assert main([*base, "--autodoc-source", str(sdist / "noodles")]) == 0
    out, err = capsys.readouterr()
    assert "; autodoc: 7 of 9 directive(s) resolved (" in out
    assert "api.rst line 26: autodoc: `.. autofunction:: noodles.kinds.fry`" in err
    two = ["--autodoc-source", str(sdist / "noodles"), "--autodoc-source", str(tmp_path)]
    assert main([*base, "--force", *two]) == 0
    assert "; autodoc: 7 of 9 directive(s) resolved (" in capsys.readouterr().out
    for command in ("add", "sync"):
        argv = [command, str(sdist / "docs"), "--index", str(index), "-q"]
        assert main([*argv, "--autodoc-source", str(tmp_path / "gone")]) != 0
        assert "no such folder (--autodoc-source)" in capsys.readouterr().err


def test_member_options_private_special_undoc_exclude_and_order(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(KINDS_PY.replace("__all__", "_all"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.rst").write_text(
        textwrap.dedent("""\
        A
        =

        .. autoclass:: pkg.Noodle
           :members:
           :undoc-members:
           :private-members:
           :special-members: __init__
           :exclude-members: dried
           :member-order: bysource
        """)
    )
    text = _text(tmp_path / "docs")[0]
    shown = [
        _signature(line).strip("`").split("(")[0]
        for line in text.split("\n\n")
        if line.startswith("`")
    ]
    assert shown == [
        "class pkg.Noodle",
        "minutes: int = 8",
        "__init__",
        "eat",
        "_private",
        "property weight: float",
        "undocumented",
    ]


def test_a_re_export_from_a_folder_without_init_is_followed_as_python_imports_it(tmp_path):
    """``from .sansio.blueprints import X as X``: Python imports a module of a folder without
    ``__init__.py`` inside a package (griffe skips it); so does autodoc, down the chain, and a
    star import's ``__all__`` names count."""
    root = tmp_path / "pkg-1.0"
    (root / "pkg" / "sansio").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(
        "from .blueprints import SetupState as SetupState\nfrom .star import *\n"
    )
    (root / "pkg" / "blueprints.py").write_text(
        "from .sansio.blueprints import SetupState as SetupState  # noqa\n"
    )
    (root / "pkg" / "sansio" / "blueprints.py").write_text(
        'class SetupState:\n    """Holds a blueprint while it registers."""\n'
    )
    (root / "pkg" / "star.py").write_text(
        '__all__ = ["starred"]\n\n\ndef starred(x):\n    """Exported by a star."""\n'
    )
    (root / "docs").mkdir()
    (root / "docs" / "api.rst").write_text(
        "API\n===\n\n.. autoclass:: pkg.blueprints.SetupState\n\n"
        ".. autoclass:: pkg.SetupState\n\n.. autofunction:: pkg.starred\n"
    )
    text, warnings, summary = _text(root / "docs")
    assert warnings == [] and "3 of 3" in summary
    assert text.count("Holds a blueprint while it registers.") == 2
    assert "Exported by a star." in text
