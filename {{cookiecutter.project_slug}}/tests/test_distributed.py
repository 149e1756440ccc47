"""The smoke configuration trains distributed: 2 CPU processes under torchrun (gloo)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _pkg import PKG, free_port

ROOT = Path(__file__).resolve().parent.parent
STEPS = 6


def torchrun(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port()),
         "train.py", "--config", "configs/smoke.yaml", "--output_dir", str(out), "--num_processes", "2",
         "--max_steps", str(STEPS), "--save_steps", str(STEPS)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )


@pytest.mark.slow
def test_two_cpu_processes_finish_the_same_steps(tmp_path):
    out = tmp_path / "ddp"
    # Format priming is single-process: the launch refuses until the primed model exists, then uses it.
    refused = torchrun(out)
    assert refused.returncode != 0 and "format priming cannot run under 2 processes" in refused.stderr
    primed = subprocess.run(
        [sys.executable, "-m", f"{PKG}.training.priming", "--config", "configs/smoke.yaml", "--output_dir", str(out),
         "--steps", "5"],  # a short priming: here only that it exists matters
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert primed.returncode == 0, primed.stderr[-3000:]
    done = torchrun(out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (out / "model.safetensors").is_file()
    # Each rank saves its own RNG state into the checkpoint at that step: both ranks reached it.
    assert sorted(p.name for p in (out / f"checkpoint-{STEPS}").glob("rng_state_*.pth")) == [
        "rng_state_0.pth", "rng_state_1.pth"]
    checkpoints = sorted(p.name for p in out.glob("checkpoint-*"))
    assert checkpoints == [f"checkpoint-{STEPS}"]
    state = json.loads((out / f"checkpoint-{STEPS}" / "trainer_state.json").read_text())
    assert state["global_step"] == STEPS
