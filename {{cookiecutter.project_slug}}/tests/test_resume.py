"""Resume: kill the smoke run with SIGKILL after a checkpoint, rerun the same command, and it finishes cleanly."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_checkpoints import AVOIDABLE, default_sigint

ROOT = Path(__file__).resolve().parent.parent
MAX_STEPS = 12


@pytest.mark.slow
def test_sigkill_then_resume_loses_no_saved_step(tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "train.py", "--config", "configs/smoke.yaml", "--output_dir", str(out),
               "--max_steps", str(MAX_STEPS), "--save_steps", "2", "--save_total_limit", "10",
               "--format_priming_steps", "5"]
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.monotonic() + 300
    while not (out / "checkpoint-2" / "trainer_state.json").is_file():
        assert first.poll() is None, "the first run ended before its first checkpoint"
        assert time.monotonic() < deadline, "no checkpoint within 300 s"
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert not (out / f"checkpoint-{MAX_STEPS}").exists(), "the run finished before the kill; nothing to resume"
    saved = max(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*") if (p / "trainer_state.json").is_file())

    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    for warning in AVOIDABLE:  # e.g. a tied model's "missing keys: lm_head.weight" on every resume
        assert warning not in second.stderr, warning
    assert f"resuming from {out / f'checkpoint-{saved}'}" in second.stdout + second.stderr
    state = json.loads((out / f"checkpoint-{MAX_STEPS}" / "trainer_state.json").read_text())
    assert state["global_step"] == MAX_STEPS
    steps = [entry["step"] for entry in state["log_history"] if "reward" in entry]
    assert steps == list(range(1, MAX_STEPS + 1))  # continuous: every step logged exactly once


@pytest.mark.slow
def test_ctrl_c_saves_the_step_says_how_to_resume_and_the_rerun_resumes(tmp_path):
    """A real SIGINT mid-run: the step in progress finishes, a complete checkpoint is saved, one line says where and
    how to resume (no traceback), and the same command resumes from it."""
    out = tmp_path / "run"
    command = [sys.executable, "train.py", "--config", "configs/smoke.yaml", "--output_dir", str(out),
               "--max_steps", str(MAX_STEPS), "--save_steps", "100", "--format_priming_steps", "5"]
    stderr = tmp_path / "stderr"
    with stderr.open("w") as err:
        first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True,
                                 start_new_session=True, preexec_fn=default_sigint)
        progress = []
        for line in first.stdout:  # one compact line per logged step
            progress.append(line)
            if line.startswith("train: step 3/"):
                first.send_signal(signal.SIGINT)
                break
        first.stdout.read()
        assert first.wait(timeout=300) == 130, stderr.read_text()[-3000:]
    message = stderr.read_text()
    assert "Traceback" not in message, message[-3000:]
    stopped = int(message.split("interrupted at step ")[1].split(":")[0])
    assert 3 <= stopped < MAX_STEPS
    rerun = " ".join(["python", "train.py", *command[2:]])
    assert message.strip().splitlines()[-1] == (f"interrupted at step {stopped}: saved {out / f'checkpoint-{stopped}'}"
                                                f"; rerun `{rerun}` to resume"), message[-2000:]
    state = json.loads((out / f"checkpoint-{stopped}" / "trainer_state.json").read_text())
    assert state["global_step"] == stopped
    assert not (out / "health.json").exists()  # no verdict on a run stopped half-way
    assert re.fullmatch(r"train: step 3/12 \| [\d.]+ s/step \| ETA \d+(?:s|m\d\ds) \| correctness [\d.]+ \| "
                        r"reward -?[\d.]+ \| loss -?[\d.]+(?: \| recheck \d+/\d+ disagree)?\n",
                        progress[-1]), progress[-1]

    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"resuming from {out / f'checkpoint-{stopped}'}" in second.stdout + second.stderr
    state = json.loads((out / f"checkpoint-{MAX_STEPS}" / "trainer_state.json").read_text())
    steps = [entry["step"] for entry in state["log_history"] if "reward" in entry]
    assert steps == list(range(1, MAX_STEPS + 1))
