"""The smoke configuration trains distributed: 2 CPU processes under torchrun (gloo)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STEPS = 6


@pytest.mark.slow
def test_two_cpu_processes_finish_the_same_steps(tmp_path):
    out = tmp_path / "ddp"
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "train.py",
         "--config", "configs/smoke.yaml", "--output_dir", str(out), "--num_processes", "2",
         "--max_steps", str(STEPS), "--save_steps", str(STEPS)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Each rank saves its own RNG state into the checkpoint at that step: both ranks reached it.
    assert sorted(p.name for p in (out / f"checkpoint-{STEPS}").glob("rng_state_*.pth")) == [
        "rng_state_0.pth", "rng_state_1.pth"]
    checkpoints = sorted(p.name for p in out.glob("checkpoint-*"))
    assert checkpoints == [f"checkpoint-{STEPS}"]
    state = json.loads((out / f"checkpoint-{STEPS}" / "trainer_state.json").read_text())
    assert state["global_step"] == STEPS
