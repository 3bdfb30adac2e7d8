import json

from hopgraph.evals.same_scores import differences, main

ROW = {
    "method": "dense",
    "questions": 2,
    "recall": {"2": 50.0, "5": 75.0},
    "mrr": 60.0,
    "latency_p50_ms": 5.0,
    "latency_p95_ms": 7.0,
}


def test_timings_may_move_and_scores_may_not(tmp_path, capsys):
    kept = {"config": {}, "scores": [ROW]}
    slower = {"config": {}, "scores": [{**ROW, "latency_p50_ms": 9.0}]}
    assert differences(kept, slower) == []
    moved = {"config": {}, "scores": [{**ROW, "recall": {"2": 50.0, "5": 70.0}}]}
    assert differences(kept, moved) == [
        "dense recall: {'2': 50.0, '5': 75.0} -> {'2': 50.0, '5': 70.0}"
    ]
    paths = []
    for name, report in (("kept", kept), ("slower", slower), ("moved", moved)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(report))
    assert main([str(paths[0]), str(paths[1])]) == 0
    assert main([str(paths[0]), str(paths[2])]) == 1
    assert "DIFFERENT" in capsys.readouterr().out
