"""`hopgraph explain` pages rendered by headless Chromium: a non-blank picture with its nodes."""

import shutil
import struct
import subprocess
import zlib

import pytest

from hopgraph.cli import main

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def png_pixels(path):
    """Return (width, height, the decompressed scanlines) of a PNG file."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        chunks.setdefault(kind, []).append(data[at + 8 : at + 8 + length])
        at += 12 + length
    width, height = struct.unpack(">II", chunks[b"IHDR"][0][:8])
    return width, height, zlib.decompress(b"".join(chunks[b"IDAT"]))


def chromium(*args):
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_explain_page_renders_with_its_nodes(real_docs_index_dir, tmp_path, capsys):
    page = tmp_path / "evidence.html"
    code = main(
        ["explain", "When did military instruction start where Larry Alcala was educated?",
         "--index", str(real_docs_index_dir), "--method", "gnn_ret", "-k", "4",
         "--gold", "d1,d2", "--out", str(page)]
    )  # fmt: skip
    assert code == 0
    shot = tmp_path / "shot.png"
    chromium(f"--screenshot={shot}", "--window-size=1200,900", page.as_uri())
    width, height, pixels = png_pixels(shot)
    assert (width, height) == (1200, 900)
    # a blank page decompresses to a handful of byte values; a drawing to many
    assert len(set(pixels)) > 40
    dom = chromium("--dump-dom", page.as_uri()).stdout
    for node in ('class="passage gold" data-id="d1"', 'class="passage gold" data-id="d2"',
                 'data-id="university of santo tomas"', 'class="edge link"'):  # fmt: skip
        assert node in dom
