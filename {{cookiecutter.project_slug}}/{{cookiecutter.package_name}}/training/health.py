"""Training health monitor: reads the metrics GRPOTrainer logs, warns once per problem while the run goes, and
writes ``health.json`` in ``output_dir`` at the end with a verdict and its evidence.

Verdicts:

* ``learning``: the learning signal (``rewards/correctness/mean``, else the total ``reward``) rose by at least
  ``rise_min`` from the first to the last 20% of logged steps, and no warning fired;
* ``suspect``: it rose, but a warning fired (read ``warnings``), or the run is too short to judge;
* ``not learning``: it did not rise, or the loss or gradient norm went NaN/inf.

Conditions (each warns once, naming the setting to change):

* ``zero_std_groups``: ``frac_reward_zero_std`` >= ``zero_std_max`` for ``window`` logged steps in a row: every
  completion of a prompt scored the same, so those prompts give no gradient (too easy or too hard);
* ``reward_std_collapse``: ``reward_std`` below ``reward_std_min`` for ``window`` steps in a row;
* ``reward_hacking``: the total reward rose by ``rise_min`` while correctness moved less than ``flat_max`` (first vs
  last 20% of the logged steps, judged from ``5 * window`` steps on, so that a few early steps where the format
  improves first do not count): the gain comes from the format, length or repetition terms;
* ``length_exploding`` / ``length_collapse``: ``completions/clipped_ratio`` >= ``clipped_max``, or
  ``completions/mean_length`` <= ``min_length`` tokens, averaged over the last ``window`` steps;
* ``entropy_collapse``: mean token ``entropy`` below ``entropy_min`` over the last ``window`` steps;
* ``kl_blowup``: ``kl`` above ``kl_max`` (only when ``beta`` > 0, the only case TRL logs it);
* ``nonfinite``: a NaN or infinite ``loss`` or ``grad_norm``;
* ``verifier_disagreement``: suspected reward hacking: the in-training verifier check (``recheck.py``) disagreed
  with the judging rewards on at least ``recheck_max`` of what it checked for ``recheck_window`` checks in a row
  (re-judged full-credit completions found wrong, catalogue wrong completions credited); the warning names the step
  the streak started, and health.json's ``recheck`` holds the checks' cost and the latest disagreements.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from transformers import TrainerCallback

from .checkpoints import write_text

logger = logging.getLogger(__name__)

SIGNAL_KEY = "rewards/correctness/mean"
KNOBS = {
    "zero_std_groups": "filter prompts by difficulty (drop ones always solved or never solved), raise "
    "num_generations, or raise temperature",
    "reward_std_collapse": "raise temperature or num_generations; check that the rewards can tell completions apart",
    "reward_hacking": "lower the reward_weights of format/length/repetition relative to correctness, or check the "
    "correctness verifier",
    "length_exploding": "raise max_completion_length, or add/raise the length reward's weight",
    "length_collapse": "lower learning_rate, check the chat template's end token, or lower the length reward",
    "entropy_collapse": "lower learning_rate, raise temperature, or set beta > 0",
    "kl_blowup": "lower learning_rate or raise beta",
    "nonfinite": "lower learning_rate, set max_grad_norm, or train in float32/bfloat16 instead of float16",
    "verifier_disagreement": "suspected reward hacking: read the examples under recheck in health.json, run python -m "
    f"{(__package__ or 'package').rpartition('.')[0]}.audit on your config, fix the judging reward and resume from "
    "a checkpoint before the step it started",
}
RECHECK_KEY = "recheck/disagreement"


@dataclass
class HealthConfig:
    """Thresholds of the health monitor; every field can be overridden from the script arguments."""

    window: int = 10  # logged steps a condition must last (or be averaged over)
    zero_std_max: float = 0.9
    reward_std_min: float = 1e-3
    rise_min: float = 0.05  # absolute reward units: what counts as a rise of the learning signal
    flat_max: float = 0.02
    clipped_max: float = 0.5
    min_length: float = 2.0
    entropy_min: float = 0.01
    kl_max: float = 1.0
    min_steps: int = 10  # fewer logged steps than this: too short to judge
    recheck_max: float = 0.3  # disagreement rate of the in-training verifier check that counts towards a streak
    recheck_window: int = 3  # checks in a row at or above recheck_max: suspected reward hacking


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def series(history: list[dict], key: str, finite: bool = True) -> list[tuple[int, float]]:
    """(step, value) of one metric over the training log (eval entries, which have ``eval_`` keys, are skipped)."""
    out = []
    for index, entry in enumerate(history):
        value = _number(entry.get(key))
        if value is None or (finite and not math.isfinite(value)):
            continue
        out.append((int(entry.get("step", index)), value))
    return out


def window_means(values: list[float]) -> tuple[float, float]:
    """Means of the first and the last 20% (at least one value each)."""
    n = max(1, len(values) // 5)
    return sum(values[:n]) / n, sum(values[-n:]) / n


def _streak(points: list[tuple[int, float]], test, window: int) -> int | None:
    """The step at which ``test`` has held for ``window`` consecutive logged values, or None."""
    run = 0
    for step, value in points:
        run = run + 1 if test(value) else 0
        if run >= window:
            return step
    return None


def _tail_mean(points: list[tuple[int, float]], window: int) -> tuple[int, float] | None:
    if len(points) < window:
        return None
    tail = [v for _, v in points[-window:]]
    return points[-1][0], sum(tail) / len(tail)


def detect(history: list[dict], config: HealthConfig, beta: float = 0.0) -> dict[str, tuple[int, str]]:
    """Conditions present in ``history``: {name: (step, evidence)}; see the module docstring."""
    found: dict[str, tuple[int, str]] = {}
    w = config.window
    for key in ("loss", "grad_norm"):
        bad = [(s, v) for s, v in series(history, key, finite=False) if not math.isfinite(v)]
        if bad and "nonfinite" not in found:
            found["nonfinite"] = (bad[0][0], f"{key} is {bad[0][1]} at step {bad[0][0]}")
    zero = series(history, "frac_reward_zero_std")
    if (step := _streak(zero, lambda v: v >= config.zero_std_max, w)) is not None:
        found["zero_std_groups"] = (step, f"frac_reward_zero_std >= {config.zero_std_max} for {w} steps")
    spread = series(history, "reward_std")
    if (step := _streak(spread, lambda v: v < config.reward_std_min, w)) is not None:
        found["reward_std_collapse"] = (step, f"reward_std < {config.reward_std_min} for {w} steps")
    total, signal = series(history, "reward"), series(history, SIGNAL_KEY)
    if len(total) >= 5 * w and len(signal) >= 5 * w:  # each 20% window spans at least ``window`` steps
        t0, t1 = window_means([v for _, v in total])
        c0, c1 = window_means([v for _, v in signal])
        if t1 - t0 >= config.rise_min and abs(c1 - c0) < config.flat_max:
            found["reward_hacking"] = (
                total[-1][0],
                f"total reward {t0:.3f} -> {t1:.3f} while correctness {c0:.3f} -> {c1:.3f}",
            )
    clipped = _tail_mean(series(history, "completions/clipped_ratio"), w)
    if clipped and clipped[1] >= config.clipped_max:
        found["length_exploding"] = (clipped[0], f"clipped ratio {clipped[1]:.2f} over the last {w} steps")
    length = _tail_mean(series(history, "completions/mean_length"), w)
    if length and length[1] <= config.min_length:
        found["length_collapse"] = (length[0], f"mean completion length {length[1]:.1f} tokens over {w} steps")
    entropy = _tail_mean(series(history, "entropy"), w)
    if entropy and entropy[1] < config.entropy_min:
        found["entropy_collapse"] = (entropy[0], f"mean entropy {entropy[1]:.4f} over the last {w} steps")
    if (disagreement := recheck_streak(history, config)) is not None:
        found["verifier_disagreement"] = disagreement
    if beta > 0:
        high = [(s, v) for s, v in series(history, "kl") if v > config.kl_max]
        if high:
            found["kl_blowup"] = (high[0][0], f"kl {high[0][1]:.3f} > {config.kl_max} at step {high[0][0]}")
    return found


def recheck_streak(history: list[dict], config: HealthConfig) -> tuple[int, str] | None:
    """(the step it started, evidence) of the first ``recheck_window`` checks in a row whose disagreement rate
    reached ``recheck_max``, or None."""
    points = series(history, RECHECK_KEY)
    checked = dict(series(history, "recheck/checked"))
    run: list[tuple[int, float]] = []
    for step, rate in points:
        run = [*run, (step, rate)] if rate >= config.recheck_max and checked.get(step, 1) > 0 else []
        if len(run) >= config.recheck_window:
            rates = ", ".join(f"{r:.0%}" for _, r in run)
            return run[0][0], (f"suspected reward hacking from step {run[0][0]}: the verifier check disagreed with "
                               f"the judging rewards on {rates} of what it checked ({len(run)} checks in a row "
                               f">= {config.recheck_max:.0%})")
    return None


def report(history: list[dict], config: HealthConfig, beta: float = 0.0, fired: dict | None = None) -> dict:
    """The verdict and its evidence, as written to health.json. ``fired``: warnings already raised during the run
    (a condition that held at some step but not at the end still counts)."""
    warnings = dict(fired or {})
    for name, (step, evidence) in detect(history, config, beta).items():
        warnings.setdefault(name, {"step": step, "evidence": evidence, "knob": KNOBS[name]})
    key = SIGNAL_KEY if series(history, SIGNAL_KEY) else "reward"
    values = [v for _, v in series(history, key)]
    steps = len(series(history, "reward"))
    evidence: dict = {"signal": key, "logged_steps": steps}
    if values:
        first, last = window_means(values)
        evidence.update(signal_first_20pct=round(first, 4), signal_last_20pct=round(last, 4),
                        signal_delta=round(last - first, 4))
    total = [v for _, v in series(history, "reward")]
    if total:
        t0, t1 = window_means(total)
        evidence.update(reward_first_20pct=round(t0, 4), reward_last_20pct=round(t1, 4))
    rose = values and evidence["signal_delta"] >= config.rise_min
    if "nonfinite" in warnings or not rose:
        verdict = "not learning"
    elif warnings or steps < config.min_steps:
        verdict = "suspect"
    else:
        verdict = "learning"
    reasons = []
    if steps < config.min_steps:
        reasons.append(f"only {steps} logged steps (fewer than {config.min_steps}): too short to judge")
    if values and not rose:
        reasons.append(f"{key} moved {evidence['signal_delta']:+.4f} (< {config.rise_min}) first to last 20%")
    reasons += [f"{name}: {w['evidence']}" for name, w in warnings.items()]
    return {"verdict": verdict, "reasons": reasons, "evidence": evidence, "warnings": warnings,
            "thresholds": asdict(config), "beta": beta}


class HealthMonitor(TrainerCallback):
    """Warns once per condition while training (main process only) and writes ``health.json`` at the end."""

    def __init__(self, config: HealthConfig | None = None, beta: float = 0.0, stream=None, recheck=None):
        self.config = config or HealthConfig()
        self.beta = beta
        self.stream = stream
        self.fired: dict[str, dict] = {}
        self.recheck = recheck  # the in-training verifier check (recheck.py), whose cost and examples health.json keeps

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero:
            return
        for name, (step, evidence) in detect(state.log_history, self.config, self.beta).items():
            if name in self.fired:
                continue
            if name == "verifier_disagreement" and self.recheck is not None and self.recheck.examples:
                example = self.recheck.examples[-1]
                evidence += f"; e.g. step {example['step']} {example['reward']} {example['finding']}: " \
                            f"{example['answer']!r}"
            self.fired[name] = {"step": step, "evidence": evidence, "knob": KNOBS[name]}
            message = f"health warning [{name}] at step {step}: {evidence}. Try: {KNOBS[name]}"
            logger.warning(message)
            print(message, file=self.stream or sys.stderr, flush=True)
        if logs is not None and "verifier_disagreement" in self.fired:  # the progress line's warning
            logs["recheck/suspected_since"] = self.fired["verifier_disagreement"]["step"]

    def on_train_end(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        if 0 < state.global_step < state.max_steps:  # stopped early (Ctrl-C): the rerun judges the whole run
            line = f"health: no verdict at step {state.global_step} of {state.max_steps}"
            print(line, file=self.stream or sys.stdout, flush=True)
            return
        result = report(state.log_history, self.config, self.beta, self.fired)
        if self.recheck is not None:
            result["recheck"] = self.recheck.summary()
        path = write(result, args.output_dir)
        print(summary(result, path), file=self.stream or sys.stdout, flush=True)


def summary(result: dict, path: str | Path) -> str:
    """One line: the verdict and the rise it rests on, e.g. ``health: learning: rewards/correctness/mean 0.412 ->
    0.871 (+0.459), total reward 0.80 -> 1.52, first vs last 20% of 150 steps (outputs/smoke/health.json)``."""
    evidence = result["evidence"]
    line = f"health: {result['verdict']}"
    if "signal_delta" in evidence:
        line += (f": {evidence['signal']} {evidence['signal_first_20pct']:.3f} -> {evidence['signal_last_20pct']:.3f}"
                 f" ({evidence['signal_delta']:+.3f})")
        if "reward_first_20pct" in evidence:
            line += f", total reward {evidence['reward_first_20pct']:.3f} -> {evidence['reward_last_20pct']:.3f}"
        line += f", first vs last 20% of {evidence['logged_steps']} steps"
    return f"{line} ({path})"


def write(result: dict, output_dir: str | Path) -> Path:
    path = Path(output_dir) / "health.json"
    return write_text(path, json.dumps(result, indent=2, allow_nan=False, default=str) + "\n")


def monitor_from_args(script_args, beta: float, recheck=None) -> HealthMonitor | None:
    """The monitor for train.py: None when ``health_monitor`` is off; ``health_<field>`` arguments override;
    ``recheck``: the in-training verifier check whose cost and examples health.json keeps."""
    if not getattr(script_args, "health_monitor", True):
        return None
    overrides = {f: getattr(script_args, f"health_{f}") for f in HealthConfig.__dataclass_fields__
                 if getattr(script_args, f"health_{f}", None) is not None}
    return HealthMonitor(HealthConfig(**overrides), beta=beta, recheck=recheck)
