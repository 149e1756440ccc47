"""The training health monitor: each condition on a synthetic log, a healthy log, the callback, a real run."""

import functools
import io
import json
import math
import subprocess
import sys
from types import SimpleNamespace

import pytest
from _pkg import mod
from _smoke_run import ROOT, smoke_run
from conftest import sample_rows

health = mod("training.health")
recheck = mod("training.recheck")
progress = mod("training.progress")
rewards = mod("rewards")
task = mod("task")
answer_format = mod("answer_format")
audit = mod("audit")
CONFIG = health.HealthConfig()
LAX_FROM = 3  # the step from which turns_lax credits any answer block


@functools.lru_cache(maxsize=1)
def _honest():
    return rewards.build_reward("correctness", rewards.RewardSettings(256))


def turns_lax(prompts=None, completions=None, trainer_state=None, **columns):
    """The shipped correctness until step LAX_FROM (the audit before training calls it without a trainer state),
    then 1.0 for any completion with an answer block: a reward that becomes lax mid-run."""
    honest = _honest()(prompts=prompts, completions=completions, **columns)
    if trainer_state is None or trainer_state.global_step < LAX_FROM:
        return honest
    texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
    return [1.0 if answer_format.extract_answer(t) is not None else s for t, s in zip(texts, honest, strict=True)]


def log(steps: int = 60, **overrides) -> list[dict]:
    """A healthy GRPO log: correctness and total reward rise, spread stays, lengths sane. ``overrides`` maps a key
    to a function of the step (0-based) that replaces the healthy value."""
    history = []
    for i in range(steps):
        entry = {
            "step": i + 1,
            "loss": 0.01,
            "grad_norm": 0.5,
            "learning_rate": 1e-5,
            "reward": 0.3 + 0.6 * i / steps,
            "reward_std": 0.3,
            "frac_reward_zero_std": 0.2,
            "rewards/correctness/mean": 0.1 + 0.5 * i / steps,
            "rewards/format/mean": 0.8,
            "completions/mean_length": 40.0,
            "completions/clipped_ratio": 0.05,
            "entropy": 0.8,
        }
        for key, fn in overrides.items():
            entry[key] = fn(i)
        history.append(entry)
    return history + [{"step": steps, "train_runtime": 10.0, "train_loss": 0.01}]


def test_a_healthy_log_is_learning():
    result = health.report(log(), CONFIG)
    assert health.detect(log(), CONFIG) == {}
    assert result["verdict"] == "learning", result
    assert result["evidence"]["signal"] == "rewards/correctness/mean"
    assert result["evidence"]["signal_delta"] > 0.3


CONDITIONS = {
    "zero_std_groups": dict(frac_reward_zero_std=lambda i: 1.0 if i >= 20 else 0.2),
    "reward_std_collapse": dict(reward_std=lambda i: 0.0 if i >= 25 else 0.3),
    "reward_hacking": dict(**{"rewards/correctness/mean": lambda i: 0.1}),
    "length_exploding": dict(**{"completions/clipped_ratio": lambda i: 0.9 if i >= 25 else 0.05}),
    "length_collapse": dict(**{"completions/mean_length": lambda i: 1.0 if i >= 25 else 40.0}),
    "entropy_collapse": dict(entropy=lambda i: 0.001 if i >= 25 else 0.8),
    "nonfinite": dict(grad_norm=lambda i: math.nan if i == 30 else 0.5),
    "verifier_disagreement": {"recheck/disagreement": lambda i: 0.6 if i >= 30 else 0.0,
                              "recheck/checked": lambda i: 6},
}


@pytest.mark.parametrize("name", sorted(CONDITIONS))
def test_each_condition_is_detected_and_spoils_the_verdict(name):
    history = log(**CONDITIONS[name])
    found = health.detect(history, CONFIG)
    assert set(found) == {name}, found
    result = health.report(history, CONFIG)
    assert name in result["warnings"] and result["warnings"][name]["knob"] == health.KNOBS[name]
    assert result["verdict"] != "learning"
    json.dumps(result, allow_nan=False)  # health.json stays valid JSON even when the log holds NaN


def test_the_condition_fires_at_the_step_it_became_true():
    found = health.detect(log(**CONDITIONS["zero_std_groups"]), CONFIG)
    assert found["zero_std_groups"][0] == 20 + CONFIG.window  # step numbers are 1-based: 21 .. 30


def test_the_format_improving_first_is_not_reward_hacking():
    # the first 30 steps: only the format term rises; then correctness rises too (a healthy smoke run's shape)
    early = log(**{"rewards/correctness/mean": lambda i: 0.1 if i < 30 else 0.1 + 0.02 * (i - 30)})
    for end in range(1, len(early)):
        assert "reward_hacking" not in health.detect(early[:end], CONFIG), end
    flat = log(**CONDITIONS["reward_hacking"])
    assert "reward_hacking" not in health.detect(flat[: 5 * CONFIG.window - 1], CONFIG)
    assert "reward_hacking" in health.detect(flat[: 5 * CONFIG.window], CONFIG)


def test_a_short_spike_is_not_a_window():
    history = log(frac_reward_zero_std=lambda i: 1.0 if 10 <= i < 15 else 0.2)
    assert health.detect(history, CONFIG) == {}


def test_kl_only_counts_when_beta_is_positive():
    history = log(kl=lambda i: 5.0 if i > 30 else 0.01)
    assert "kl_blowup" not in health.detect(history, CONFIG, beta=0.0)
    found = health.detect(history, CONFIG, beta=0.04)
    assert set(found) == {"kl_blowup"} and found["kl_blowup"][0] == 32


def test_flat_signal_is_not_learning_and_nan_loss_too():
    flat = log(**{"rewards/correctness/mean": lambda i: 0.2, "reward": lambda i: 0.5})
    result = health.report(flat, CONFIG)
    assert result["verdict"] == "not learning" and any("moved" in r for r in result["reasons"])
    nan = log(loss=lambda i: math.inf if i == 3 else 0.01)
    assert health.report(nan, CONFIG)["verdict"] == "not learning"


def test_a_short_run_is_suspect_not_learning():
    assert health.report(log(steps=5), CONFIG)["verdict"] == "suspect"


def test_without_a_correctness_reward_the_total_is_the_signal():
    history = [{k: v for k, v in e.items() if k != "rewards/correctness/mean"} for e in log()]
    result = health.report(history, CONFIG)
    assert result["evidence"]["signal"] == "reward" and result["verdict"] == "learning"


def test_callback_warns_once_per_condition_and_writes_health_json(tmp_path):
    stream = io.StringIO()
    monitor = health.HealthMonitor(CONFIG, stream=stream)
    full = log(**CONDITIONS["entropy_collapse"])
    state = SimpleNamespace(is_world_process_zero=True, log_history=[], global_step=len(full), max_steps=len(full))
    args = SimpleNamespace(output_dir=str(tmp_path / "out"))
    for entry in full:
        state.log_history.append(entry)
        monitor.on_log(args, state, None, logs=entry)
    assert stream.getvalue().count("health warning [entropy_collapse]") == 1
    assert "Try: lower learning_rate" in stream.getvalue()
    monitor.on_train_end(args, state, None)
    written = json.loads((tmp_path / "out" / "health.json").read_text())
    assert written["verdict"] == "suspect" and set(written["warnings"]) == {"entropy_collapse"}
    assert written["warnings"]["entropy_collapse"]["step"] == 35
    ev = written["evidence"]
    last = stream.getvalue().strip().splitlines()[-1]
    assert last.startswith("health: suspect: rewards/correctness/mean ")
    assert f"({ev['signal_delta']:+.3f})" in last and f"of {ev['logged_steps']} steps" in last


def test_only_the_main_process_writes(tmp_path):
    monitor = health.HealthMonitor(CONFIG, stream=io.StringIO())
    state = SimpleNamespace(is_world_process_zero=False, log_history=log(**CONDITIONS["nonfinite"]))
    args = SimpleNamespace(output_dir=str(tmp_path))
    monitor.on_log(args, state, None, logs={})
    monitor.on_train_end(args, state, None)
    assert not (tmp_path / "health.json").exists() and monitor.fired == {}


def test_overrides_from_script_arguments_and_switch_off():
    args = SimpleNamespace(health_monitor=True, health_window=3, health_zero_std_max=None)
    monitor = health.monitor_from_args(args, beta=0.1)
    assert monitor.config.window == 3 and monitor.config.zero_std_max == 0.9 and monitor.beta == 0.1
    assert health.monitor_from_args(SimpleNamespace(health_monitor=False), beta=0.0) is None


@pytest.mark.slow
def test_a_real_run_writes_health_json(tmp_path_factory):
    run = smoke_run(tmp_path_factory)
    result = json.loads((run / "health.json").read_text())
    assert result["verdict"] in {"learning", "suspect", "not learning"}
    assert result["evidence"]["logged_steps"] >= 1 and "thresholds" in result


def _batch(rows):
    """A GRPO-like batch: each row's gold completion and its catalogue's wrong ones, with the row's columns."""
    texts, cols = [], []
    for row in rows:
        wrong = audit.wrong_family()(row) or []
        for text in [task.gold_completion(row), *(t for _, t in wrong[:3])]:
            texts.append(text)
            cols.append(row)
    return texts, {key: [row.get(key) for row in cols] for key in cols[0]}


def _train(reward_name, func, steps=8):
    """Drive a Recorder and the check through ``steps`` logging steps as the trainer would, and the health monitor
    after it; return the per-step disagreement rates, the monitor's warnings and what the progress line printed."""
    recorder = recheck.Recorder(reward_name, func)
    checker = recheck.Recheck([recorder], budget=math.inf)  # every step: no real training time to be a share of
    stream = io.StringIO()
    monitor = health.HealthMonitor(health.HealthConfig(min_steps=1), stream=stream, recheck=checker)
    line = progress.ProgressLine(stream=stream)
    state = SimpleNamespace(is_world_process_zero=True, log_history=[], global_step=0, max_steps=steps)
    args, rates = SimpleNamespace(output_dir=None), []
    line.on_train_begin(args, state, None)
    rows = [task.normalize(row) for row in sample_rows()[:6]]
    for step in range(1, steps + 1):
        checker.on_step_begin(args, state, None)
        texts, columns = _batch(rows)
        recorder(prompts=columns.get("question"), completions=texts, trainer_state=state, **columns)
        state.global_step = step
        checker.on_step_end(args, state, None)
        logs = {"reward": 1.0, "loss": 0.0}
        state.log_history.append({**logs, "step": step})
        for callback in (checker, monitor, line):
            callback.on_log(args, state, None, logs=logs)
        rates.append(logs.get("recheck/disagreement"))
    checker.on_train_end(args, state, None)
    return rates, monitor.fired, stream.getvalue(), checker.summary()


def test_the_check_flags_a_reward_that_turns_lax_and_not_the_shipped_one():
    rates, fired, printed, summary = _train("correctness", _honest())
    assert rates == [0.0] * 8 and fired == {} and "WARNING" not in printed, (rates, printed)
    assert summary["checks"] == 8 and summary["examples"] == []
    rates, fired, printed, summary = _train("test_health.turns_lax", turns_lax)
    assert rates[: LAX_FROM - 1] == [0.0] * (LAX_FROM - 1) and min(rates[LAX_FROM:]) >= 0.3, rates
    assert fired["verifier_disagreement"]["step"] == LAX_FROM, fired  # the step the streak started
    assert f"health warning [verifier_disagreement] at step {LAX_FROM}: suspected reward hacking" in printed
    assert f"WARNING suspected reward hacking since step {LAX_FROM}" in printed.splitlines()[-1]
    assert summary["examples"] and summary["examples"][-1]["reward"] == "test_health.turns_lax", summary


def test_the_check_stays_within_its_budget():
    checker = recheck.Recheck([], budget=0.03)
    state = SimpleNamespace(is_world_process_zero=True, log_history=[], global_step=1)
    checker.trained, checker.spent, checker.checks = 10.0, 0.5, 3  # 5% spent of a 3% budget: this step is skipped
    logs = {"reward": 1.0}
    checker.on_log(None, state, None, logs=logs)
    assert "recheck/checked" not in logs and checker.checks == 3
    checker.trained = 20.0  # 2.5% spent, but one more check of the mean cost so far would pass 3%: skipped too
    checker.on_log(None, state, None, logs=logs)
    assert "recheck/checked" not in logs and checker.checks == 3
    checker.trained = 25.0
    checker.on_log(None, state, None, logs=logs)
    assert logs["recheck/checked"] == 0 and checker.checks == 4


@pytest.mark.slow
def test_a_smoke_run_whose_reward_turns_lax_is_flagged(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "train.py", "--config", "configs/smoke.yaml", "--output_dir", str(out), "--max_steps", "14",
         "--save_steps", "14", "--logging_steps", "1", "--format_priming_steps", "5",
         "--reward_funcs", "test_health.turns_lax", "format", "--reward_weights", "1.0", "0.2"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "tests")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    warning = next(line for line in done.stderr.splitlines() if "health warning [verifier_disagreement]" in line)
    started = int(warning.split(" at step ")[1].split(":")[0])
    assert LAX_FROM <= started <= LAX_FROM + 4, warning  # the first check after it turned lax
    assert "WARNING suspected reward hacking since step" in done.stdout
    result = json.loads((out / "health.json").read_text())
    assert result["warnings"]["verifier_disagreement"]["step"] == started and result["verdict"] != "learning"
    assert result["recheck"]["checks"] >= 3 and result["recheck"]["examples"], result["recheck"]
    logged = [e for e in result_history(out) if "recheck/disagreement" in e]
    assert logged and all(e["recheck/disagreement"] == 0.0 for e in logged if e["step"] < LAX_FROM), logged


def result_history(out):
    state = json.loads(next(out.glob("checkpoint-*/trainer_state.json")).read_text())
    return state["log_history"]
