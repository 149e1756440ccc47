"""What a run shows while it trains: one compact line per logging step, and a Ctrl-C that keeps the work.

* :class:`ProgressLine` replaces the trainer's printed metrics dicts with one line per logging step, e.g.
  ``train: step 40/200 | 1.9 s/step | ETA 5m04s | correctness 0.31 | reward 0.62 | loss 0.004``, with the
  in-training verifier check's disagreements (``recheck 0/6 disagree``) and, once the health monitor suspects
  reward hacking, ``WARNING suspected reward hacking since step N``; the full metrics stay in
  ``trainer_state.json`` and the tracker.
* :class:`Interrupt`: the first Ctrl-C (SIGINT) lets the current step finish, saves a complete checkpoint and stops
  (train.py then prints one line with the step and the command that resumes); a second Ctrl-C stops at once. Under
  several processes the signal reaches every rank at a different point of its step, so there the handler is not
  installed and an interrupt keeps the last saved checkpoint.
"""

from __future__ import annotations

import signal
import sys
import threading
import time

from transformers import TrainerCallback

SHOWN = (("rewards/correctness/mean", "correctness"), ("reward", "reward"), ("loss", "loss"))


def duration(seconds: float) -> str:
    """``95`` -> ``1m35s``; ``4000`` -> ``1h06m``."""
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class ProgressLine(TrainerCallback):
    """One ``train: step N/M | s/step | ETA | correctness | reward | loss`` line per logging step (main process)."""

    def __init__(self, stream=None) -> None:
        self.stream = stream
        self.started: tuple[float, int] | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = (time.monotonic(), state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or self.started is None:
            return
        if "reward" not in logs and "loss" not in logs:
            return  # the end-of-training summary (train_runtime, ...) and evaluation dicts
        since, first = self.started
        parts = [f"step {state.global_step}/{state.max_steps}"]
        if state.global_step > first:
            per_step = (time.monotonic() - since) / (state.global_step - first)
            parts += [f"{per_step:.2f} s/step", f"ETA {duration(per_step * (state.max_steps - state.global_step))}"]
        parts += [f"{label} {logs[key]:.3f}" for key, label in SHOWN if isinstance(logs.get(key), (int, float))]
        if isinstance(logs.get("recheck/checked"), int) and logs["recheck/checked"]:  # the verifier check (recheck.py)
            checked = logs["recheck/checked"]
            parts.append(f"recheck {round(logs['recheck/disagreement'] * checked)}/{checked} disagree")
        if "recheck/suspected_since" in logs:
            parts.append(f"WARNING suspected reward hacking since step {logs['recheck/suspected_since']}")
        print("train: " + " | ".join(parts), file=self.stream or sys.stdout, flush=True)


class Interrupt(TrainerCallback):
    """First Ctrl-C: finish the step, save a checkpoint, stop (``stopped_at`` is then that step). Second: at once."""

    def __init__(self) -> None:
        self.requested = False
        self.stopped_at: int | None = None
        self.previous = None

    def install(self, world_size: int) -> Interrupt:
        """Take over Ctrl-C in a single-process run (not where SIGINT is ignored: ``nohup``, a background job)."""
        if world_size == 1 and threading.current_thread() is threading.main_thread() and (
                signal.getsignal(signal.SIGINT) is not signal.SIG_IGN):
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def uninstall(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None

    def _handle(self, signum, frame) -> None:
        if self.requested:
            self.uninstall()
            raise KeyboardInterrupt
        self.requested = True
        print("interrupt: finishing this step and saving a checkpoint (Ctrl-C again to stop at once)",
              file=sys.stderr, flush=True)

    def on_step_end(self, args, state, control, **kwargs):
        if self.requested:
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at = state.global_step
