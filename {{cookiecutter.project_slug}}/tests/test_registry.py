"""The reward registry contract, and the README's "add a reward" example run as written."""

import re
from pathlib import Path

import pytest
from _pkg import PKG, mod

ROOT = Path(__file__).resolve().parent.parent
rewards = mod("rewards")


@pytest.fixture(scope="module")
def built_rewards():
    """Every reward as a run builds it (factories bound to default settings); a sandbox is closed after."""
    built = {name: rewards.build_reward(name, rewards.RewardSettings(64)) for name in rewards.reward_names()}
    yield built
    for func in built.values():
        if hasattr(func, "close"):
            func.close()


def test_registry_names_match_logged_names(built_rewards):
    assert {"correctness", "format"} <= set(rewards.reward_names())
    for name, func in built_rewards.items():
        assert func.__name__ == name  # TRL logs rewards/<__name__>/mean


def test_every_reward_takes_trl_kwargs_and_both_completion_forms(built_rewards):
    completions = ["<reasoning>\nx\n</reasoning>\n<answer>\n1\n</answer>", [{"role": "assistant", "content": "hi"}]]
    sample = mod("selfcheck").load_sample()[:2]
    columns = {key: [row.get(key) for row in sample] for key in sample[0]}
    for name, func in built_rewards.items():
        scores = func(prompts=["p", "p"], completions=completions, completion_ids=[[1, 2], [3]],
                      trainer_state=None, **columns)
        assert len(scores) == 2, name
        assert all(s is None or isinstance(s, float) for s in scores), name


def test_readme_add_a_reward_example_runs():
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(from \.common import.*?)```", readme, re.DOTALL).group(1)
    namespace = {"__name__": f"{PKG}.rewards", "__package__": f"{PKG}.rewards"}
    try:
        exec(compile(code, "README.md", "exec"), namespace)  # the project's own README snippet, not model output
        func = rewards.REWARD_FUNCS["no_hedging"]
        assert func.__name__ == "no_hedging"
        assert func(completions=["I think 4", [{"role": "assistant", "content": "4"}]]) == [-1.0, 0.0]
    finally:
        rewards.REWARD_FUNCS.pop("no_hedging", None)
