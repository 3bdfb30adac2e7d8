"""The documents' tables are the ones their kept reports render (evals/rendering/docs.py)."""

import json
import shutil

import numpy as np
import pytest

from hopgraph.evals.rendering import docs as doc_tables
from hopgraph.evals.rendering import quality as quality_table

HINT = "regenerate: python -m hopgraph.evals.rendering.docs --write"


@pytest.mark.parametrize("name", list(doc_tables.TABLES))
def test_a_documents_table_is_the_one_its_reports_render(name):
    render, document = doc_tables.TABLES[name]
    text = (doc_tables.ROOT / document).read_text(encoding="utf-8")
    assert doc_tables.block(text, name) == render(), HINT


def test_a_changed_figure_in_a_report_changes_the_table(tmp_path):
    results = tmp_path / "quality"
    shutil.copytree(quality_table.RESULTS, results)
    report = json.loads((results / "musique.json").read_text())
    report["scores"][0]["recall"]["5"] += 1.0
    (results / "musique.json").write_text(json.dumps(report))
    assert quality_table.quality(results) != quality_table.quality()


def test_write_replaces_only_what_lies_between_the_markers(tmp_path):
    every = "".join(
        f"<!-- table:{name}:start -->\nold\n<!-- table:{name}:end -->\n"
        for name in doc_tables.TABLES
    )
    for document in {d for _, d in doc_tables.TABLES.values()}:
        (tmp_path / document).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / document).write_text("before\n" + every + "after\n")
    doc_tables.write(tmp_path)
    text = (tmp_path / "docs/evaluation.md").read_text()
    assert text.startswith("before\n<!-- table:quality:start -->\n| dataset | method |")
    assert "\n<!-- table:quality:end -->\n" in text and text.endswith("after\n")
    assert "old" not in doc_tables.block(text, "quality")
    assert doc_tables.block(text, "presets") == "old"  # its table lives in docs/methods.md
    readme = (tmp_path / "README.md").read_text()
    assert doc_tables.block(readme, "headline").startswith("| dev set | dense | hybrid |")


def test_the_scaling_documents_tables_are_the_ones_their_measurements_render(capsys):
    from hopgraph.evals.rendering import cost_model

    assert cost_model.main(["--check"]) == 0, capsys.readouterr().err


def test_the_cost_model_fits_a_power_law_and_finds_where_a_limit_is_reached():
    from hopgraph.evals.rendering.cost_model import fit

    model = fit([(100_000, 2.0), (1_000_000, 20.0), (400_000, 8.0)])  # linear: b = 1
    assert model.b == pytest.approx(1.0) and model.deviation == pytest.approx(0.0, abs=1e-9)
    assert model.at(10_000_000) == pytest.approx(200.0)
    assert model.reaching(60.0) == pytest.approx(3_000_000)
    curved = fit([(100_000, 1.0), (200_000, 4.0), (400_000, 16.0)])
    assert curved.b == pytest.approx(2.0)


def test_a_workers_peak_is_projected_from_a_line_through_the_partition_runs():
    from hopgraph.evals.rendering.cost_model import render_projection

    runs = [{"partitions": p, "partitions_only": 1.0, "worker_peak_rss_mb": 100 + 4e-3 * 8e5 / p}
            for p in (1, 2, 4)]  # fmt: skip
    table = render_projection({"data": "synthetic 800000", "rows": runs})
    assert "100 MB + 4.10 KB" in table and "within 0 MB" in table
    # 4M: 100 + 0.004 * 4M / P stays under 4,096 MB from P = 4 (4,100 MB at P = 4 is over: 8)
    assert "| 4M | 8 | 500,000 | 2.1 GB |" in table


def _graphs(n, driver, task, series="b", partitions=8, child=None):
    row = {"partitions": partitions, "driver_peak_rss_mb": driver,
           "task_peaks_mb": {"read_rows": task}}  # fmt: skip
    if child is not None:  # as the benchmark reports it: the driver (its child) or a fork of it
        row["children_peak_rss_mb"] = child
    return {"kind": "graphs", "chunks": n, "series": series, "rows": [row]}


def test_each_cluster_process_is_projected_on_the_line_through_its_series():
    from hopgraph.evals.rendering.process_model import render_processes

    def serving(n, router):
        rows = [{"shards": 0, "router_rss_mb": 1}, {"shards": 4, "router_rss_mb": router}]
        return {"kind": "serving", "chunks": n, "series": "b", "rows": rows}

    reports = [_graphs(300_000, 230, 300), _graphs(1_000_000, 300, 1000),
               _graphs(1_000_000, 9_000, 9_000, series="a"), serving(1_000_000, 400)]  # fmt: skip
    table = render_processes(reports)
    assert table.startswith("Series b:")  # of two series at 1M, the later name only
    later = [_graphs(n, 300, 1000, series="0") for n in (1_000_000, 3_000_000)]  # a hash's name
    wider = [*reports, *later]
    both = "Series 0 (graph builds); b (serving):"  # each kind's series of its largest corpus
    assert render_processes(wider).startswith(both)
    alone = _graphs(10_000_000, 300, 1000, series="1")  # one run: nothing to project from
    assert render_processes([*wider, alone]).startswith(both)
    whole = []  # every kind at two sizes; a later series of graph builds alone
    for n in (300_000, 1_000_000):
        whole += [_graphs(n, 250, 900, series="a0"), {**serving(n, 400), "series": "a0"}]
        whole.append({"kind": "writes", "chunks": n, "series": "a0", "rows": [
            {"write": "add", "partitions": 8, "driver_peak_rss_mb": 300}]})  # fmt: skip
    # each kind from the series that ran it widest: graph builds from the later one
    mixed = render_processes([*whole, *later])
    assert mixed.startswith("Series 0 (graph builds); a0 (writes); a0 (serving):")
    assert "| graph build driver | – | 300 MB | 300 MB |" in mixed  # 0's runs, not a0's 250
    # driver: 200 MB + 0.1 KB a passage; task: 1 KB a passage, past 4 GB by 10M (one P: a line)
    assert "| graph build driver | 230 MB | 300 MB | – | 500 MB | 1.2 GB | line |" in table
    assert (
        "| graph build task `read_rows` | 300 MB | 1,000 MB | – | 2.9 GB | **9.8 GB** | line |"
        in table
    )
    assert "router" not in table  # one size only: no line
    assert "child" not in table  # no run reported one
    forks = []
    for n, p, c in ((1_000_000, 8, 950), (3_000_000, 24, 2650)):
        row = {"write": "add", "partitions": p, "driver_peak_rss_mb": 300,
               "children_peak_rss_mb": c}  # fmt: skip
        forks.append({"kind": "writes", "chunks": n, "series": "b", "rows": [row]})
    # a forked child holds no share: the line through its sizes, 850 MB a million passages
    child = "| add driver's largest child | 950 MB | 2.6 GB | – | 2.6 GB | **8.4 GB** |"
    assert child in render_processes(forks)
    graphs = render_processes([_graphs(n, 250, 900, child=250) for n in (1_000_000, 3_000_000)])
    assert "child" not in graphs  # a graph build's children figure counts its driver
    assert render_processes([_graphs(1_000_000, 300, 1000)]) == ""


def test_a_tasks_share_is_told_from_what_grows_with_the_corpus_by_runs_at_two_task_counts():
    from hopgraph.evals.rendering.process_model import render_processes, tasks_at

    def peak(n, p):  # 100 MB, 20 bytes a passage of the corpus, 2,000 a row of the share
        return 100 + 20 * n / 1e6 + 2000 * n / p / 1e6

    sizes = [(1_000_000, 8), (1_000_000, 16)]
    bound = render_processes([_graphs(n, 250, peak(n, p), partitions=p) for n, p in sizes])
    assert "| 1M / 8 | 1M / 16 |" in bound
    # the share's 2,000 bytes found; the rest (120 MB at 1M) counted as growing with the corpus
    assert tasks_at(10_000_000, 8) == 77 and tasks_at(3_000_000, 8) == 23
    share, share3 = 2000 * 10 / 77, 2000 * 3 / 23  # MB: a task's share at 10M and 3M
    assert f"| 2.05 KB | ≤ {_mb(360 + share3)} | ≤ {_mb(1200 + share)} | bound |" in bound
    assert "| graph build driver | 250 MB | 250 MB | – | ≤ 750 MB | ≤ 2.4 GB | bound |" in bound
    sizes.append((3_000_000, 24))
    fitted = render_processes([_graphs(n, 250, peak(n, p), partitions=p) for n, p in sizes])
    # three runs: a, b and c exactly
    assert f"| 2.05 KB | {_mb(160 + share3)} | {_mb(300 + share)} | fit |" in fitted
    # a free fit that would shrink with the corpus (noise): fitted again without that term
    noisy = [(1_000_000, 8, 500), (1_000_000, 16, 400), (300_000, 8, 390)]
    shrunk = render_processes([_graphs(n, 250, mb, partitions=p) for n, p, mb in noisy])
    free = np.linalg.lstsq([[1, n, n / p] for n, p, _ in noisy], [mb for *_, mb in noisy])[0]
    assert free[1] < 0  # what the free fit says of the corpus term
    row = next(line for line in shrunk.splitlines() if "read_rows" in line)
    assert row.endswith("| 503 MB | 503 MB | fit, b = 0 |")  # the share alone: the same at 3M


def _mb(value):
    return f"{value:,.0f} MB" if value < 1024 else f"{value / 1024:.1f} GB"


def test_a_document_without_its_markers_is_named_and_nothing_is_written(tmp_path):
    for document in {d for _, d in doc_tables.TABLES.values()}:
        (tmp_path / document).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / document).write_text("no markers here\n")
    with pytest.raises(SystemExit, match="no <!-- table:"):
        doc_tables.write(tmp_path)
    assert (tmp_path / "README.md").read_text() == "no markers here\n"


def test_a_run_whose_driver_figure_is_left_out_still_gives_its_tasks():
    from hopgraph.evals.rendering.process_model import process_points

    def writes(n, row):
        return {"kind": "writes", "chunks": n, "series": "s", "rows": [row]}

    whole = {"write": "delete", "partitions": 8, "driver_peak_rss_mb": 210,
             "task_peaks_mb": {"pick_rows": 500}}  # fmt: skip
    tasks_only = {"write": "delete", "partitions": 24, "task_peaks_mb": {"pick_rows": 900}}
    _, found = process_points([writes(1_000_000, whole), writes(3_000_000, tasks_only)])
    assert found["delete driver"] == [(1_000_000, 8, 210)]
    assert found["delete task `pick_rows`"] == [(1_000_000, 8, 500), (3_000_000, 24, 900)]
