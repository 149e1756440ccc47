"""The verifier audit (audit.py): the shipped correctness passes on the sample data and the smoke curriculum, a lax
reward is caught (by the audit, by train.py before any model, by the CLI), and a user's dotted reward is audited."""

import json
import re

import pytest
from _pkg import mod
from conftest import ROOT, sample_rows

audit = mod("audit")
rewards = mod("rewards")
task = mod("task")
answer_format = mod("answer_format")


def lax_correctness(prompts=None, completions=None, **kwargs):
    """A deliberately lax reward: any answer block is right."""
    texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
    return [1.0 if answer_format.extract_answer(t) is not None else 0.0 for t in texts]


def never_correct(prompts=None, completions=None, **kwargs):
    return [0.0 for _ in completions]


@pytest.fixture(scope="module")
def correctness():
    reward = rewards.build_reward("correctness", rewards.RewardSettings(256))
    yield reward
    if hasattr(reward, "close"):
        reward.close()


@pytest.mark.parametrize("source", ["sample", "curriculum"])
def test_shipped_correctness_passes_the_audit(correctness, source):
    rows = sample_rows() if source == "sample" else task.generate_curriculum(32, seed=1)
    result = audit.run(audit.sample(rows, None), correctness)
    own = audit.wrong_family() is not audit.generic_wrong_completions  # the task's audit_cases, or the generic case
    assert result["gold_checked"] == len(rows) and result["wrong_checked"] >= (3 if own else 1) * len(rows), result
    assert len(result["variants"]) >= (4 if own else 1), result["variants"]
    assert result["false_negative_rate"] == 0.0, audit.report(result)
    assert result["false_positive_rate"] == 0.0, audit.report(result)
    assert audit.check(result) is None


def test_lax_and_blind_rewards_are_caught():
    rows = audit.sample(sample_rows(), 8)
    lax = audit.run(rows, lax_correctness, "lax")
    assert lax["false_negative_rate"] == 0.0 and lax["false_positive_rate"] > 0.9
    line = audit.check(lax)
    assert "audit_max_false_positive" in line and "\n" not in line
    assert any("wrong credited" in text for text in audit.report(lax))
    blind = audit.run(rows, never_correct, "blind")
    assert blind["false_negative_rate"] == 1.0
    assert "audit_max_false_negative" in audit.check(blind)
    assert audit.check(lax, max_false_positive=1.0) is None  # the knob the line names lets it through


def test_the_audited_reward_is_correctness_or_the_users_own():
    assert audit.choose_reward(["correctness", "format"]) == "correctness"
    assert audit.choose_reward(["format", "mine.reward"]) == "mine.reward"
    assert audit.choose_reward(["correctness", "mine.reward"], "mine.reward") == "mine.reward"


def test_train_refuses_a_lax_user_reward_before_any_model(run_cli):
    lax = {"reward_funcs": ["test_audit.lax_correctness", "format"], "reward_weights": [1.0, 1.0],
           "dataset_name": "data/sample.jsonl" if (ROOT / "data/sample.jsonl").is_file() else "curriculum:64"}
    message = run_cli(settings=lax, stage="data")
    assert re.match(r"error: verifier audit: test_audit.lax_correctness credits (9\d|100)\.\d% ", message), message
    assert "audit_max_false_positive" in message
    with pytest.raises(AssertionError, match="build_tiny_model ran"):  # audit: false skips it: the model comes next
        run_cli(settings={**lax, "audit": False}, stage="data")


def test_audit_cli_writes_audit_json(tmp_path, capsys):
    out = tmp_path / "audit.json"
    assert audit.main(["--config", str(ROOT / "configs" / "smoke.yaml"), "--rows", "6", "--output", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["rows"] == 6 and result["false_negative_rate"] == 0.0 and result["false_positive_rate"] == 0.0
    assert "false positives 0/" in capsys.readouterr().out
