"""`hopgraph ui` on a real uvicorn: what reaches the page before the application does."""

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.conftest import build_docs_index
from tests.integration.test_ui_browser import running_ui

pytestmark = pytest.mark.integration


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=60) as reply:
            return reply.status, reply.headers["content-type"], reply.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["content-type"], err.read().decode()


def test_a_100_kb_question_gets_the_pages_json_413_not_the_servers_plain_400(tmp_path):
    index_dir = build_docs_index(tmp_path / "idx", "hashing")
    with running_ui(index_dir, tmp_path) as url:
        long = urllib.parse.quote("why " * 25_000)  # 100 KB
        for route in ("/api/search", "/api/graph"):
            status, kind, body = get(f"{url}{route}?method=bm25&q={long}")
            assert status == 413 and kind == "application/json", (route, status, body[:200])
            assert "a server takes 10,000" in json.loads(body)["error"]
        status, kind, body = get(f"{url}/api/ask?method=gear&q={long}")
        assert status == 200 and "a server takes 10,000" in body
        status, kind, body = get(f"{url}/api/search?method=bm25&k=%C2%B2&q=why")  # k=²
        assert status == 400 and "expected a whole number, got '²'" in json.loads(body)["error"]
        assert get(f"{url}/api/search?method=bm25&q=why")[0] == 200  # still serving
