"""Settings: defaults < hopgraph.toml < HOPGRAPH_* variables < flags, shown by `config show`."""

import json

import pytest

from hopgraph.cli import main
from hopgraph.core.settings import configure, settings
from hopgraph.graph_store.stores.manifest import read_manifest


@pytest.fixture(autouse=True)
def _fresh_configuration(monkeypatch):
    for name in ("HOPGRAPH_INDEX", "HOPGRAPH_MODEL", "HOPGRAPH_CHUNK_TOKENS", "HOPGRAPH_LLM"):
        monkeypatch.delenv(name, raising=False)
    configure()
    yield
    configure()


def test_hopgraph_toml_in_the_index_folder_sets_how_the_index_is_built(tmp_path, corpus_file):
    index = tmp_path / "idx"
    index.mkdir()
    (index / "hopgraph.toml").write_text('model = "hashing"\nchunk_tokens = 24\n')
    assert main(["index", str(corpus_file), "--index", str(index), "-q"]) == 0
    built = read_manifest(index).settings
    assert (built.model, built.chunk_tokens) == ("hashing", 24)


def test_variables_win_over_the_file_and_flags_over_both(tmp_path, monkeypatch):
    config = tmp_path / "hopgraph.toml"
    config.write_text('chunk_tokens = 24\nllm = "none"\n')
    configure(config)
    assert (settings().chunk_tokens, settings().llm) == (24, "none")
    monkeypatch.setenv("HOPGRAPH_CHUNK_TOKENS", "48")
    assert (settings().chunk_tokens, settings().llm) == (48, "none")
    assert settings(chunk_tokens=96).chunk_tokens == 96


def test_config_show_names_each_source_and_masks_secrets(tmp_path, monkeypatch, capsys):
    config = tmp_path / "my.toml"
    config.write_text('chunk_tokens = 24\nllm_api_key = "sk-very-secret"\n')
    monkeypatch.setenv("HOPGRAPH_MODEL", "hashing")
    assert main(["--config", str(config), "config", "show", "--json", "--index", "x"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["chunk_tokens"] == {"value": "24", "from": str(config)}
    assert shown["model"] == {"value": "hashing", "from": "env HOPGRAPH_MODEL"}
    assert shown["index"] == {"value": "x", "from": "flag"}
    assert shown["batch_size"] == {"value": "32", "from": "default"}
    assert shown["llm_api_key"]["value"] == "****"
    assert "sk-very-secret" not in json.dumps(shown)


def test_a_bad_setting_or_file_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOPGRAPH_CHUNK_TOKENS", "lots")
    assert main(["config", "show"]) == 2
    err = capsys.readouterr().err
    assert "chunk_tokens" in err and "HOPGRAPH_CHUNK_TOKENS" in err
    monkeypatch.delenv("HOPGRAPH_CHUNK_TOKENS")
    broken = tmp_path / "broken.toml"
    broken.write_text("chunk_tokens = \n")
    assert main(["--config", str(broken), "config", "show"]) == 2
    assert str(broken) in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "missing.toml"), "config", "show"]) == 2


@pytest.mark.parametrize("name", ["HOPGRAPH_ALLOW_HOSTS", "HOPGRAPH_SERVE_INDEXES"])
def test_a_list_setting_that_is_not_json_is_named_with_its_form(monkeypatch, capsys, name):
    monkeypatch.setenv(name, "[bad")
    assert main(["config", "show"]) == 2
    err = capsys.readouterr().err
    assert f"invalid setting: {name} is not a JSON list (it is '[bad')" in err
    assert f"write it as a JSON list, e.g. {name}='[" in err and "Traceback" not in err
    monkeypatch.setenv(name, '["a"]')
    assert main(["config", "show"]) == 0
