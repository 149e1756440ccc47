"""The JSON task's deterministic data generator: seeded, in the row contract, every gold valid and scoring 1.0."""

import json

from _pkg import mod

task = mod("task")
data = mod("data")
rewards = mod("rewards")


def test_generator_is_deterministic_and_varied():
    rows = task.generate_rows(30, seed=1)
    assert rows == task.generate_rows(30, seed=1)
    assert rows != task.generate_rows(30, seed=2)
    assert len({row["schema"] for row in rows}) == 3  # people, orders, events
    for row in rows:
        assert set(row) == {"question", "schema", "answer"}
        json.loads(row["schema"]), json.loads(row["answer"])


def test_generated_gold_scores_one():
    rows = task.generate_rows(30)
    completions = [task.gold_completion(row) for row in rows]
    scores = rewards.REWARD_FUNCS["correctness"](
        completions=completions, schema=[r["schema"] for r in rows], answer=[r["answer"] for r in rows]
    )
    assert scores == [1.0] * len(rows)


def test_generate_dataset_name_loads_and_splits():
    train, evaluation = data.load_splits("generate:50", None, "train", "test", eval_fraction=0.2, seed=0)
    assert len(train) == 40 and len(evaluation) == 10


def test_bad_generate_name_is_one_line():
    try:
        data.load_raw("generate:lots")
    except data.DataError as error:
        assert "only 'generate:N'" in str(error) and "\n" not in str(error)
    else:
        raise AssertionError("no error")
