"""The task module fills contract.TaskSpec, and the check finds what a module lacks."""

import types
from dataclasses import dataclass

from _pkg import mod

contract = mod("contract")
task = mod("task")
rewards = mod("rewards")


def test_the_task_fills_the_spec():
    assert contract.spec_problems(task) == []
    assert "correctness" in rewards.reward_names()  # registered (or its factory) by the task's reward module
    for part in ("priming", "train", "test"):
        rows = task.generate_curriculum(3, 0, part)
        assert len(rows) == 3 and all(set(task.REQUIRED_COLUMNS) <= set(row) for row in rows), part


def test_the_check_names_what_a_module_lacks():
    @dataclass
    class TaskArguments:
        pass

    partial = types.SimpleNamespace(NAME="x", INSTRUCTION="i", SYSTEM_PROMPT="s", COLUMNS={"q": "text"},
                                    REQUIRED_COLUMNS=("q",), ERRORS=(ValueError, "oops"), TaskArguments=TaskArguments,
                                    normalize=lambda row: row, user_message=lambda: "", gold_completion=len,
                                    untagged_completion=lambda: "",
                                    generate_curriculum=lambda n, seed=0, part="train": [])
    assert contract.spec_problems(partial) == [
        "COLUMNS['q'] must be a Column", "ERRORS must hold exception classes", "from_hub_row() is missing",
        "user_message() must take 1 positional parameter(s)",
        "untagged_completion() must take 1 positional parameter(s)"]
    assert contract.spec_problems(types.SimpleNamespace())[:2] == ["NAME must be a str", "INSTRUCTION must be a str"]
