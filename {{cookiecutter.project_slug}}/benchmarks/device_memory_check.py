"""GPU-only check of the memory estimator: measured peak memory of real GRPO steps next to the estimate.

    python benchmarks/device_memory_check.py                      # every single-GPU preset that fits this GPU
    python benchmarks/device_memory_check.py --presets 8gb 24gb --max-steps 1

Not run in CI (it needs a CUDA GPU; about 5-10 minutes on one H200 for all presets). For each preset it builds a
random-weight model of the preset's architecture from the shipped config.json facts (no hub), with the vocabulary
cut to a tiny locally trained tokenizer's size, runs ``--max-steps`` GRPO steps with transformers generation (vLLM
off: its reserved fraction is the configured number, nothing to measure) in a child process, and prints
``torch.cuda.max_memory_allocated`` / ``max_memory_reserved`` beside the estimate of the same configuration (the
estimate includes ~1 GiB of CUDA context that the allocator does not see) and the tokens/s of the run.
Prompts are random tokens padded to ``max_prompt_length``; random weights rarely emit EOS, so completions run to
``max_completion_length``: the peak the estimate is meant to bound.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PACKAGE = next(path.parent.name for path in ROOT.glob("*/memory.py"))
memory = importlib.import_module(f"{PACKAGE}.memory")
tiny = importlib.import_module(f"{PACKAGE}.tiny")
GIB = 2**30


def single_gpu_presets() -> list[Path]:
    presets = []
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        config = memory.load_config(path)
        if memory.gpu_gb_from_preset(path) is not None and int(config.get("num_processes") or 1) == 1:
            presets.append(path)
    return presets


def benchmark_config(path: Path, vocab: int) -> tuple[dict, dict]:
    """The preset as benchmarked (no vLLM) and the config.json of the model built for it."""
    config = {**memory.load_config(path), "use_vllm": False}
    name = str(config["model_name_or_path"])
    facts = dict(memory.KNOWN_MODELS.get(name) or memory.read_model_config(name))
    facts["vocab_size"] = vocab
    return config, facts


TINY = {"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 32}


def run_one(path: Path, max_steps: int, tiny_check: bool = False) -> dict:
    """Train ``max_steps`` GRPO steps of one preset in this process; return the measurements.

    ``tiny_check`` shrinks the model and lengths so that the script itself can be tried on a CPU.
    """
    import torch
    from datasets import Dataset
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer, ModelConfig, get_peft_config

    work = Path(tempfile.mkdtemp(prefix="memcheck-"))
    sample = ROOT / "data" / "sample.jsonl"
    tiny.build_tiny_model(work / "tiny", sample)
    tokenizer = AutoTokenizer.from_pretrained(work / "tiny")
    config, facts = benchmark_config(path, len(tokenizer))
    cuda = torch.cuda.is_available()
    if tiny_check:
        facts.update(TINY)
        config.update(max_prompt_length=24, max_completion_length=8, per_device_train_batch_size=4,
                      num_generations=4, gradient_accumulation_steps=1, bf16=cuda, use_cpu=not cuda,
                      optim="adamw_torch")
    if config.get("load_in_4bit"):
        return {"preset": path.stem, "skipped": "4-bit presets need a saved checkpoint and bitsandbytes"}

    dtype = torch.bfloat16 if str(config.get("dtype")) in ("bfloat16", "bf16") else torch.float32
    model_config = AutoConfig.for_model(facts.pop("model_type"), **facts)
    torch.manual_seed(0)
    with torch.device("cuda" if cuda else "cpu"):
        model = AutoModelForCausalLM.from_config(model_config, dtype=dtype)
    model.generation_config.eos_token_id = None  # run every completion to max_completion_length

    prompt_tokens = int(config.get("max_prompt_length") or 512) - 8
    generator = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(64):
        ids = torch.randint(10, len(tokenizer) - 1, (prompt_tokens,), generator=generator).tolist()
        rows.append({"prompt": tokenizer.decode(ids)[: prompt_tokens * 3]})
    dataset = Dataset.from_list(rows)

    grpo_fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    model_fields = {f.name for f in dataclasses.fields(ModelConfig)}
    args = GRPOConfig(**{
        **{k: v for k, v in config.items() if k in grpo_fields},
        "output_dir": str(work / "out"), "max_steps": max_steps, "save_strategy": "no", "report_to": "none",
        "logging_steps": 1, "log_completions": False, "use_vllm": False, "eval_strategy": "no",
        "reward_weights": None,
    })
    peft_config = get_peft_config(ModelConfig(**{k: v for k, v in config.items() if k in model_fields}))

    def length_reward(completions, **_) -> list[float]:
        return [float(len(c)) / 1000 for c in completions]

    trainer = GRPOTrainer(model=model, reward_funcs=[length_reward], args=args, train_dataset=dataset,
                          processing_class=tokenizer, peft_config=peft_config)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    trainer.train()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    tokens = max((row.get("num_tokens", 0) for row in trainer.state.log_history), default=0)
    est = memory.estimate(config, memory.gpu_gb_from_preset(path), facts | {"model_type": model_config.model_type})
    return {
        "preset": path.stem, "model": config["model_name_or_path"], "vocab": facts["vocab_size"],
        "allocated_gib": torch.cuda.max_memory_allocated() / GIB if cuda else 0.0,
        "reserved_gib": torch.cuda.max_memory_reserved() / GIB if cuda else 0.0,
        "estimate_gib": est.total, "estimate_parts": est.parts(), "seconds": seconds,
        "tokens_per_s": tokens / seconds if seconds else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="*", help="preset names (default: every single-GPU preset)")
    parser.add_argument("--max-steps", type=int, default=1)
    parser.add_argument("--timeout", type=int, default=240, help="seconds per preset")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child process: one preset, JSON on the last line
    parser.add_argument("--tiny-check", action="store_true", help="a 1-layer model on CPU: tries the script only")
    args = parser.parse_args()
    if args.one or args.tiny_check:
        print(json.dumps(run_one(ROOT / "configs" / f"{args.one or '8gb'}.yaml", args.max_steps, args.tiny_check)))
        return 0

    import torch

    if not torch.cuda.is_available():
        print("error: this check needs a CUDA GPU", file=sys.stderr)
        return 2
    gpu_gib = torch.cuda.get_device_properties(0).total_memory / GIB
    presets = [ROOT / "configs" / f"{name}.yaml" for name in args.presets] if args.presets else single_gpu_presets()
    print(f"GPU: {torch.cuda.get_device_name(0)} ({gpu_gib:.0f} GiB)")
    print(f"{'preset':<9} {'model':<30} {'estimate':>9} {'allocated':>10} {'reserved':>9} {'est/res':>8} {'tok/s':>8}")
    for path in presets:
        gpu_gb = memory.gpu_gb_from_preset(path) or gpu_gib
        if gpu_gb > gpu_gib:
            print(f"{path.stem:<9} skipped: needs a {gpu_gb:g} GB GPU")
            continue
        try:
            done = subprocess.run([sys.executable, __file__, "--one", path.stem, "--max-steps", str(args.max_steps)],
                                  capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"{path.stem:<9} timed out after {args.timeout} s")
            continue
        lines = done.stdout.strip().splitlines()
        if done.returncode or not lines:
            print(f"{path.stem:<9} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        row = json.loads(lines[-1])
        if "skipped" in row:
            print(f"{row['preset']:<9} skipped: {row['skipped']}")
            continue
        ratio = row["estimate_gib"] / row["reserved_gib"] if row["reserved_gib"] else float("nan")
        print(f"{row['preset']:<9} {row['model']:<30} {row['estimate_gib']:8.1f}G {row['allocated_gib']:9.1f}G "
              f"{row['reserved_gib']:8.1f}G {ratio:8.2f} {row['tokens_per_s']:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
