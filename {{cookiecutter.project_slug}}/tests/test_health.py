"""The training health monitor: each condition on a synthetic log, a healthy log, the callback, a real run."""

import io
import json
import math
from types import SimpleNamespace

import pytest
from _pkg import mod
from _smoke_run import smoke_run

health = mod("training.health")
CONFIG = health.HealthConfig()


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
