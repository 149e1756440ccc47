"""Format priming as its own single-process command: what a multi-process launch is told to run first."""

import json
import subprocess
import sys
from pathlib import Path

from _pkg import PKG, mod

ROOT = Path(__file__).resolve().parent.parent
priming = mod("priming")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"{PKG}.priming", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)


def test_cli_primes_the_smoke_model_where_train_py_looks(tmp_path):
    done = run_cli("--config", "configs/smoke.yaml", "--output_dir", str(tmp_path / "run"), "--steps", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    primed = tmp_path / "run" / "format-primed"
    assert (primed / "model.safetensors").is_file() and (primed / "tokenizer.json").is_file()
    assert json.loads((primed / "config.json").read_text())["dtype"] == "float32"  # the smoke config's dtype
    assert "on cpu in torch.float32" in done.stdout and "step 3/3" in done.stdout
    again = run_cli("--config", "configs/smoke.yaml", "--output_dir", str(tmp_path / "run"))
    assert again.returncode == 0 and "already holds a primed model" in again.stdout


def test_cli_without_priming_steps_is_one_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("model_name_or_path: m\ndataset_name: data/x.jsonl\nformat_priming_steps: 0\n")
    done = run_cli("--config", str(config), "--output_dir", str(tmp_path / "run"))
    assert done.returncode == 1
    assert done.stderr.strip() == "error: format_priming_steps is 0 in this config: pass --steps N"


def test_cli_config_without_a_model_is_one_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("dataset_name: data/x.jsonl\nformat_priming_steps: 5\n")
    done = run_cli("--config", str(config), "--output_dir", str(tmp_path / "run"))
    assert done.returncode == 1 and done.stderr.strip() == f"error: {config} sets no 'model_name_or_path'"


def test_dtype_follows_the_config():
    import torch

    assert priming.load_dtype(None) is torch.float32
    assert priming.load_dtype("bfloat16") is torch.bfloat16
    assert priming.load_dtype("auto") == "auto"


def test_priming_stops_at_its_target_loss_and_warns_at_its_cap(tmp_path):
    tiny = mod("tiny")
    model_dir = tiny.build_tiny_model(tmp_path / "tiny", "curriculum:50")
    rows = mod("data").priming_rows("curriculum:50", None, limit=50)
    logged: list[str] = []
    priming.prime(model_dir, tmp_path / "a", rows, steps=40, batch_size=2, target_loss=1e6, log=logged.append,
                  use_cpu=True)
    assert any(line.startswith("format priming done at step 10:") for line in logged), logged
    assert not any("step 20/40" in line for line in logged)
    logged.clear()
    priming.prime(model_dir, tmp_path / "b", rows, steps=10, batch_size=2, target_loss=1e-9, log=logged.append,
                  use_cpu=True)
    assert "step 10/10" in logged[-2] and logged[-1].startswith("warning: format priming ended at its cap of 10 steps")


def test_the_cli_primes_on_the_curriculums_priming_rows(tmp_path, monkeypatch):
    import yaml

    seen = {}
    monkeypatch.setattr(priming, "prime", lambda model, out, rows, **kw: seen.update(rows=rows, **kw) or Path(out))
    settings = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    settings["model_name_or_path"] = str(tmp_path / "tiny")
    priming.prime_from_config(settings, out_dir=tmp_path / "primed", steps=2, log=lambda _: None)
    data = mod("data")
    expected = data.priming_rows(settings["dataset_name"], None, limit=priming.PRIMING_ROWS, seed=settings["seed"])
    assert seen["rows"] == expected and seen["steps"] == 2
    assert seen["batch_size"] == settings["format_priming_batch_size"]
    assert seen["target_loss"] == settings["format_priming_target_loss"]
