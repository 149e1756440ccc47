"""The smoke curriculum: deterministic, priming rows disjoint from GRPO rows, gold completions score 1.0."""

import pytest
from _pkg import PKG, mod

data = mod("data")
task = data.task
rewards = __import__(f"{PKG}.rewards", fromlist=["REWARD_FUNCS"])


def test_curriculum_is_deterministic_and_seeded():
    assert task.generate_curriculum(50, seed=1) == task.generate_curriculum(50, seed=1)
    assert task.generate_curriculum(50, seed=1) != task.generate_curriculum(50, seed=2)


def test_priming_rows_are_disjoint_from_grpo_rows():
    train = {r["question"] for r in task.generate_curriculum(500)}
    priming = {r["question"] for r in data.priming_rows("curriculum:500", None, limit=500)}
    assert train and priming and not train & priming


def test_curriculum_dataset_name_loads_rows_in_the_contract():
    raw = data.load_raw("curriculum:40")
    assert len(raw["train"]) == 40
    data.check_columns(raw["train"].column_names, "curriculum:40")
    with pytest.raises(data.DataError, match="curriculum:N"):
        data.load_raw("curriculum:many")


def test_gold_completions_get_full_correctness():
    rows = task.generate_curriculum(6, seed=3) + task.generate_curriculum(3, part="priming")
    columns = {key: [row[key] for row in rows] for key in rows[0]}
    completions = [task.gold_completion(row) for row in rows]
    correctness = rewards.build_reward("correctness", rewards.RewardSettings())  # as a run builds it
    scores = correctness(prompts=[None] * len(rows), completions=completions, **columns)
    assert scores == [1.0] * len(rows)
    wrong = completions[1:] + completions[:1]  # each row answered with another row's gold
    scored = correctness(prompts=[None] * len(rows), completions=wrong, **columns)
    assert all(s is not None for s in scored)
    assert min(scored) < 1.0  # another row's gold is wrong for some row (the smoke's GRPO signal)
