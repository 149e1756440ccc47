"""The smoke run: tiny random model, sample data, real rewards, a few GRPO steps on CPU, a checkpoint and a log."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_smoke_training_runs_to_the_end(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "train.py", "--config", "configs/smoke.yaml", "--output_dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    max_steps = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())["max_steps"]
    checkpoint = out / f"checkpoint-{max_steps}"
    assert (checkpoint / "trainer_state.json").is_file()
    assert (out / "model.safetensors").is_file()
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    assert state["global_step"] == max_steps
    logged = [entry for entry in state["log_history"] if "reward" in entry]
    assert len(logged) == max_steps
    for entry in logged:
        assert "rewards/correctness/mean" in entry and "reward_std" in entry and "frac_reward_zero_std" in entry


def test_bad_dataset_column_gets_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "no question column here"}) + "\n")
    done = subprocess.run(
        [sys.executable, "train.py", "--config", "configs/smoke.yaml", "--dataset_name", str(bad),
         "--output_dir", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: dataset") and "lacks column(s) question" in last


def test_unknown_reward_gets_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "train.py", "--config", "configs/smoke.yaml", "--reward_funcs", "nope",
         "--reward_weights", "1.0", "--output_dir", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1].startswith("error: unknown reward function(s) ['nope']")
