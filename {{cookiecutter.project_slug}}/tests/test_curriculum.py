"""The smoke curriculum: deterministic, its priming, GRPO and held-out test parts disjoint, gold completions score
1.0."""

import pytest
from _pkg import PKG, mod

data = mod("data")
task = data.task
rewards = __import__(f"{PKG}.rewards", fromlist=["REWARD_FUNCS"])


def test_curriculum_is_deterministic_and_seeded():
    assert task.generate_curriculum(50, seed=1) == task.generate_curriculum(50, seed=1)
    assert task.generate_curriculum(50, seed=1) != task.generate_curriculum(50, seed=2)


def test_priming_grpo_and_test_parts_are_disjoint():
    # The eval split scores questions no training row contains: the smoke's before/after accuracy is a learnt
    # rule's, not memorised answers.
    train = {r["question"] for r in task.generate_curriculum(2000)}
    priming = {r["question"] for r in data.priming_rows("curriculum:500", None, limit=500)}
    test = {r["question"] for r in data.load_raw("curriculum:2000")["test"]}
    assert train and priming and len(test) >= 4
    assert not train & priming and not test & train and not test & priming


def test_curriculum_dataset_name_loads_rows_in_the_contract():
    raw = data.load_raw("curriculum:40")
    assert len(raw["train"]) == 40 and len(raw["test"]) == 4  # the eval split: a tenth, held out
    assert data.load_splits("curriculum:40", None, "train", "test")[1]["question"] == raw["test"]["question"]
    data.check_columns(raw["train"].column_names, "curriculum:40")
    with pytest.raises(data.DataError, match="curriculum:N"):
        data.load_raw("curriculum:many")


def test_gold_completions_get_full_correctness():
    rows = [row for part in ("train", "priming", "test") for row in task.generate_curriculum(3, seed=3, part=part)]
    columns = {key: [row[key] for row in rows] for key in rows[0]}
    completions = [task.gold_completion(row) for row in rows]
    correctness = rewards.build_reward("correctness", rewards.RewardSettings())  # as a run builds it
    scores = correctness(prompts=[None] * len(rows), completions=completions, **columns)
    assert scores == [1.0] * len(rows)
    wrong = completions[1:] + completions[:1]  # each row answered with another row's gold
    scored = correctness(prompts=[None] * len(rows), completions=wrong, **columns)
    assert all(s is not None for s in scored)
    assert min(scored) < 1.0  # another row's gold is wrong for some row (the smoke's GRPO signal)


def test_readme_chat_example_is_a_held_out_question():
    # The README's chat example after the smoke run asks what the smoke model learnt to answer: a test-part question.
    import shlex

    from conftest import ROOT

    line = next(line for line in (ROOT / "README.md").read_text().splitlines()
                if line.startswith("python chat.py --config configs/smoke.yaml"))
    row = mod("chat").row_from_text(shlex.split(line)[-1])
    held_out = {r["question"] for r in task.generate_curriculum(2000, part="test")}
    trained = {r["question"] for r in task.generate_curriculum(2000)}
    assert row["question"] in held_out and row["question"] not in trained
