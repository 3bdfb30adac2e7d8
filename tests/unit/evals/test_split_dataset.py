"""hopgraph.evals.split_dataset: two disjoint halves of a question file, same corpus, seeded."""

from hopgraph.evals.split_dataset import main
from tests.conftest import DOCS, write_jsonl

QUESTIONS = [{"id": f"q{i}", "question": f"question {i}?", "gold_ids": ["d1"]} for i in range(9)]


def test_halves_are_disjoint_cover_every_question_and_repeat(tmp_path, capsys):
    data = tmp_path / "nq"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    write_jsonl(data / "dev.jsonl", QUESTIONS)
    halves = []
    for run in ("a", "b"):
        assert main(["--data", str(data), "--into", str(tmp_path / run), "--fraction", "0.4"]) == 0
        train = (tmp_path / run / "nq-train" / "train.jsonl").read_text().splitlines()
        dev = (tmp_path / run / "nq-dev" / "dev.jsonl").read_text().splitlines()
        halves.append((train, dev))
        assert len(train) == 4 and len(dev) == 5 and not set(train) & set(dev)
        assert sorted(train + dev) == sorted((data / "dev.jsonl").read_text().splitlines())
        corpus = (tmp_path / run / "nq-dev" / "corpus.jsonl").read_text()
        assert corpus == (data / "corpus.jsonl").read_text()
    assert halves[0] == halves[1]  # same seed, same halves
    assert "nq-train: 4 questions" in capsys.readouterr().out


def test_a_fraction_that_empties_a_half_is_refused(tmp_path, capsys):
    data = tmp_path / "nq"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    write_jsonl(data / "dev.jsonl", QUESTIONS)
    assert main(["--data", str(data), "--into", str(tmp_path / "out"), "--fraction", "1"]) == 2
    assert "leaves one side empty" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
