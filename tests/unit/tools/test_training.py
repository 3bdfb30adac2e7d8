"""The shared training loop's held-back slice: seeded, drawn from every dataset."""

import pytest

from hopgraph.tools.shared.training import balanced_mean, hold_out


def test_every_group_gives_its_share_of_the_held_back_slice():
    items = list(range(40))
    groups = [0] * 30 + [1] * 10
    train, held = hold_out(items, 0.1, seed=0, groups=groups)
    assert sorted(train + held) == items
    assert sum(i < 30 for i in held) == 3 and sum(i >= 30 for i in held) == 1
    assert hold_out(items, 0.1, seed=0, groups=groups) == (train, held)  # seeded
    assert hold_out(items, 0.1, seed=1, groups=groups) != (train, held)


def test_small_inputs_still_keep_one_item_on_each_side():
    assert hold_out(["a", "b"], 0.1, seed=0, groups=[0, 1]) in ((["b"], ["a"]), (["a"], ["b"]))
    with pytest.raises(ValueError, match="at least 2"):
        hold_out(["a"], 0.1, seed=0)


def test_balanced_mean_weighs_every_group_the_same():
    assert balanced_mean([1.0, 1.0, 1.0, 0.0], [0, 0, 0, 1]) == 0.5
