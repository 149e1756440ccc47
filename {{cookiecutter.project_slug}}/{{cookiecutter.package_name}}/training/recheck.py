"""The verifier audit while training runs: each logging step, re-judge a few completions the judging rewards gave full
credit, and score a few of the hack catalogue's wrong completions with the live rewards.

* **Re-judging** (the task's ``audit_cases.recheck``): an independent check of the answer, written apart from the
  reward (math: the answer block through math-verify itself plus the hedge screens; JSON: the answer's last
  document, a full JSON Schema validator with format checking, a type-exact comparison; code: the row's tests re-run
  in a sandbox of its own, in reverse order). A full-credit completion it finds wrong is a disagreement.
* **Probing**: the catalogue's wrong completions (``audit_cases.wrong_completions``, see ``audit.py``) of one row the
  run just trained on, scored by each live judging reward with the run's state: one that earns at least
  ``audit.MAX_CREDIT`` of full credit is a disagreement (a reward that turned lax is caught before the policy finds
  the hole; the audit before training showed the gold earns full credit).

The judging rewards are those the audit judges (``correctness`` and dotted rewards, non-zero weight); each is wrapped
in a :class:`Recorder` that remembers what it credited. Every check logs ``recheck/disagreement`` (the rate),
``recheck/checked`` and ``recheck/seconds`` into the step's metrics; the health monitor reports a sustained rise as
suspected reward hacking with the step it started (``health.py``: ``verifier_disagreement``), and health.json keeps
the cost and a few examples. A check runs only while the checks' total time, that check's expected cost included,
stays under ``BUDGET`` of the training time (a one-time start, such as the code check's sandbox, happens before
training and is not counted), so a slow check runs every few steps instead of slowing each one.
"""

from __future__ import annotations

import random
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from types import SimpleNamespace

from transformers import TrainerCallback

from .. import audit

SAMPLES = 4  # full-credit completions re-judged per check
PROBES = 3  # catalogue completions of one row scored by each live judging reward per check
BUDGET = 0.05  # the checks' share of the training time
EXAMPLES = 3  # disagreements kept (the latest) for health.json
_NOT_COLUMNS = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
                "environments")


class Recorder:
    """A judging reward that remembers, from its last call, the rows it saw and the completions it gave full credit
    (with their row) and the run's state; it returns the reward's scores unchanged."""

    def __init__(self, name: str, func: Callable) -> None:
        self.name, self.func = name, func
        self.__name__ = getattr(func, "__name__", name)  # TRL logs rewards/<__name__>/mean
        self.full: deque[tuple[str, dict]] = deque(maxlen=64)
        self.rows: list[dict] = []
        self.state = None

    def __getattr__(self, attr: str):
        if attr in ("func", "name"):
            raise AttributeError(attr)
        return getattr(self.func, attr)  # close(), sandbox, ...

    def __call__(self, prompts=None, completions=None, **kwargs):
        scores = self.func(prompts=prompts, completions=completions, **kwargs)
        try:
            from ..rewards.common import completion_text

            n = len(completions)
            columns = {k: v for k, v in kwargs.items() if k not in _NOT_COLUMNS and isinstance(v, list) and len(v) == n}
            rows = [{k: v[i] for k, v in columns.items()} for i in range(n)]
            self.rows, self.state = rows, kwargs.get("trainer_state", self.state)
            for i, score in enumerate(scores):
                if score is not None and score >= audit.FULL:
                    self.full.append((completion_text(completions[i]), rows[i]))
        except Exception:
            pass  # recording never changes a training step
        return scores


def wrap(names: Sequence[str], weights: Sequence[float] | None, funcs: Sequence[Callable]) -> list:
    """``funcs`` with every judging reward of positive weight wrapped in a :class:`Recorder`."""
    weights = list(weights) if weights else [1.0] * len(names)
    return [Recorder(n, f) if audit.is_judge(n, f) and w > 0 else f for n, f, w in zip(names, funcs, weights,
                                                                                       strict=False)]


def _cases():
    try:
        from .. import audit_cases
    except ImportError:
        return None
    return audit_cases


class Recheck(TrainerCallback):
    """Runs the check at each logging step (main process) within ``budget`` of the training time."""

    def __init__(self, recorders: Sequence[Recorder], budget: float = BUDGET, samples: int = SAMPLES,
                 probes: int = PROBES, seed: int = 0, stream=None) -> None:
        self.recorders = list(recorders)
        self.budget, self.samples, self.probes = budget, samples, probes
        self.rng = random.Random(seed)
        self.stream = stream
        self.cases = _cases()
        self.trained = self.spent = 0.0
        self.began: float | None = None
        self.checks = 0
        self.examples: deque[dict] = deque(maxlen=EXAMPLES)

    def on_train_begin(self, args, state, control, **kwargs):
        start = getattr(self.cases, "start", None)
        if start is not None and state.is_world_process_zero and self.recorders:
            start(self.recorders[0].func)

    def on_step_begin(self, args, state, control, **kwargs):
        self.began = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        if self.began is not None:
            self.trained += time.monotonic() - self.began
            self.began = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or "reward" not in logs:
            return
        if self.checks and self.spent * (self.checks + 1) / self.checks > self.budget * self.trained:
            return  # one more check of the mean cost so far would go over budget: a later logging step checks
        started = time.monotonic()
        checked, disagreed = self.check(state.global_step)
        seconds = time.monotonic() - started
        self.spent += seconds
        self.checks += 1
        metrics = {"recheck/disagreement": disagreed / checked if checked else 0.0, "recheck/checked": checked,
                   "recheck/seconds": round(seconds, 4)}
        logs.update(metrics)
        if state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1].update(metrics)

    def check(self, step: int) -> tuple[int, int]:
        """(completions checked, disagreements) of one check: re-judged full-credit completions, then probes."""
        checked = disagreed = 0
        for recorder in self.recorders:
            picked = self.rng.sample(list(recorder.full), min(self.samples, len(recorder.full)))
            recorder.full.clear()
            verdicts = self._recheck(picked, recorder.func)
            for (text, _), verdict in zip(picked, verdicts, strict=True):
                if verdict is None:
                    continue
                checked += 1
                if not verdict:
                    disagreed += 1
                    self._example(step, recorder.name, "re-judged wrong", text)
            c, d = self._probe(step, recorder)
            checked, disagreed = checked + c, disagreed + d
        return checked, disagreed

    def _recheck(self, picked: list[tuple[str, dict]], reward: Callable) -> list[bool | None]:
        judge = getattr(self.cases, "recheck", None)
        if not picked or judge is None:
            return [None] * len(picked)
        try:
            verdicts = list(judge([t for t, _ in picked], [r for _, r in picked], reward=reward))
            return verdicts if len(verdicts) == len(picked) else [None] * len(picked)
        except Exception as error:  # said once; the probes go on
            print(f"recheck: the independent check failed and is off for this run ({type(error).__name__}: "
                  f"{error})"[:300], file=self.stream or sys.stderr, flush=True)
            self.cases = SimpleNamespace(close=getattr(self.cases, "close", None))
            return [None] * len(picked)

    def _probe(self, step: int, recorder: Recorder) -> tuple[int, int]:
        """Score PROBES catalogue completions of one recent row with the live reward."""
        family = audit.wrong_family()
        rows = [row for row in recorder.rows if row]
        self.rng.shuffle(rows)
        row, wrong = next(((r, w) for r in rows[:8] if (w := family(r))), (None, None))
        if row is None:
            return 0, 0
        wrong = self.rng.sample(wrong, min(self.probes, len(wrong)))
        texts = [text for _, text in wrong]
        columns = {key: [row[key]] * len(texts) for key in row}
        try:
            scores = recorder.func(prompts=[row.get("question")] * len(texts), completions=texts,
                                   trainer_state=recorder.state, **columns)
        except Exception:
            return 0, 0
        checked = disagreed = 0
        for (name, text), score in zip(wrong, scores, strict=False):
            if score is None:
                continue
            checked += 1
            if score >= audit.MAX_CREDIT * audit.FULL:
                disagreed += 1
                self._example(step, recorder.name, f"credited {name} ({score:.3g})", text)
        return checked, disagreed

    def _example(self, step: int, reward: str, what: str, text: str) -> None:
        self.examples.append({"step": step, "reward": reward, "finding": what, "answer": audit._excerpt(text, 120)})

    def summary(self) -> dict:
        """What health.json keeps: the checks' cost and the latest disagreements."""
        return {"checks": self.checks, "seconds": round(self.spent, 3),
                "seconds_per_check": round(self.spent / self.checks, 4) if self.checks else None,
                "share_of_training_time": round(self.spent / self.trained, 4) if self.trained else None,
                "budget": self.budget, "examples": list(self.examples)}

    def on_train_end(self, args, state, control, **kwargs):
        close = getattr(self.cases, "close", None)
        if close is not None:
            close()


def from_args(script_args, weights: Sequence[float] | None, funcs: Sequence[Callable],
              seed: int = 0) -> tuple[list, Recheck | None]:
    """train.py's hook: the rewards with their judges recorded, and the check (None when ``audit`` is off or no
    reward judges the answer)."""
    if not getattr(script_args, "audit", True):
        return list(funcs), None
    wrapped = wrap(script_args.reward_funcs, weights, funcs)
    recorders = [f for f in wrapped if isinstance(f, Recorder)]
    return (wrapped, Recheck(recorders, seed=seed)) if recorders else (list(funcs), None)
