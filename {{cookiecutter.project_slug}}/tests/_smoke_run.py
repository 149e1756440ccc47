"""Short smoke trainings shared by the tests (each trained once per session, on first use): a full fine-tune for
the eval and plot tests, a LoRA run for the after-training tests (merge, chat)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = 2  # enough for a curve and a checkpoint; the full smoke run is tests/test_smoke.py's job
_runs: dict[str, Path] = {}


def smoke_run(tmp_path_factory) -> Path:
    """The output_dir of a short smoke training: a saved model and ``checkpoint-STEPS/trainer_state.json``."""
    if "run" not in _runs:
        out = tmp_path_factory.mktemp("smoke-run") / "run"
        done = subprocess.run(
            [sys.executable, "train.py", "--config", "configs/smoke.yaml", "--output_dir", str(out),
             "--max_steps", str(STEPS), "--save_steps", str(STEPS), "--logging_steps", "1",
             "--format_priming_steps", "5"],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert (out / f"checkpoint-{STEPS}" / "trainer_state.json").is_file()
        (out.parent / "train.stderr").write_text(done.stderr)  # for the warning checks (test_checkpoints.py)
        _runs["run"] = out
    return _runs["run"]


def lora_run(tmp_path_factory) -> Path:
    """The output_dir of a one-step LoRA smoke training with format priming: the adapter (primed as an adapter in
    ``output_dir/format-primed``, then trained on by GRPO; its base is the config's model), the tokenizer and
    ``checkpoint-1``."""
    if "lora" not in _runs:
        out = tmp_path_factory.mktemp("lora-run") / "run"
        done = subprocess.run(
            [sys.executable, "train.py", "--config", "configs/smoke.yaml", "--output_dir", str(out),
             "--max_steps", "1", "--save_steps", "1", "--format_priming_steps", "2", "--use_peft", "true",
             "--lora_r", "4", "--max_completion_length", "16", "--num_generations", "2",
             "--per_device_train_batch_size", "2"],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert (out / "adapter_config.json").is_file() and (out / "checkpoint-1" / "adapter_config.json").is_file()
        nonzero_adapter(out / "adapter_model.safetensors")
        _runs["lora"] = out
    return _runs["lora"]


def nonzero_adapter(path: Path) -> None:
    """Give the adapter's LoRA B matrices seeded random values. LoRA starts with B = 0, and one GRPO step leaves it
    there when the group's rewards tie (zero advantage), so merging would otherwise be checked on a no-op adapter."""
    import torch
    from safetensors.torch import load_file, save_file

    weights = load_file(str(path))
    generator = torch.Generator().manual_seed(0)
    for name, tensor in weights.items():
        if "lora_B" in name:
            weights[name] = (torch.randn(tensor.shape, generator=generator) * 0.05).to(tensor.dtype)
    save_file(weights, str(path), metadata={"format": "pt"})


def run_script(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run a project script (eval.py, plot.py) from the project root."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
