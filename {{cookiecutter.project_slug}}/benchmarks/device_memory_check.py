"""Measured peak GPU memory of real GRPO steps next to the estimate, for every single-GPU preset (one NVIDIA GPU).

    python benchmarks/device_memory_check.py                       # every single-GPU preset that fits this GPU
    python benchmarks/device_memory_check.py --presets 8gb 24gb
    python benchmarks/device_memory_check.py --tiny_check          # the same code with tiny shapes on CPU

Needs no network and no vLLM: torch with CUDA, transformers, accelerate, peft, trl, datasets, and bitsandbytes for
the 8-bit optimizer presets. For each preset it builds, in a child process (a fresh CUDA context each):

- the preset's real architecture (the shipped config.json facts: hidden, layers, heads, KV heads, intermediate,
  the full vocabulary) with random bf16 weights created on the GPU directly;
- a local WordLevel tokenizer with exactly the model's vocabulary size (no hub), so the embedding and LM head
  are the real size;
- prompts of exactly ``max_prompt_length`` tokens (one word = one token, no special tokens added) and completions
  forced to ``max_completion_length`` (``min_new_tokens``: TRL adds the tokenizer's EOS to the stop tokens, so
  disabling EOS on the model is not enough);
- one optimizer step (``gradient_accumulation_steps`` micro-batches, one generation batch) with the preset's LoRA,
  optimizer, gradient checkpointing and dtype; generation through transformers (``use_vllm`` off, so the estimate
  is made for that configuration too: the KV cache of the generation batch instead of vLLM's fraction).

It prints ``torch.cuda.max_memory_allocated`` and ``max_memory_reserved`` beside the estimate (which includes
~1 GiB of CUDA context the allocator does not see), and the ratio estimate / reserved.
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
PACKAGE = next(path.parents[1].name for path in ROOT.glob("*/preflight/estimator.py"))
memory = importlib.import_module(f"{PACKAGE}.preflight.memory")
GIB = 2**30
TINY = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512}
TINY_LENGTHS = {"max_prompt_length": 16, "max_completion_length": 8, "per_device_train_batch_size": 4,
                "num_generations": 4, "gradient_accumulation_steps": 2}


def single_gpu_presets() -> list[Path]:
    presets = []
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        config = memory.load_config(path)
        if memory.gpu_gb_from_preset(path) is not None and int(config.get("num_processes") or 1) == 1:
            presets.append(path)
    return presets


def word_tokenizer(vocab_size: int, folder: Path):
    """A WordLevel tokenizer with exactly ``vocab_size`` entries: ``w0 .. w{n-4}`` plus pad, eos, unk."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{f"w{i}": i + 3 for i in range(vocab_size - 3)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>",
                                        unk_token="<unk>")
    tokenizer.save_pretrained(folder)
    return tokenizer


def prompts(count: int, length: int, vocab_size: int, seed: int = 0) -> list[dict]:
    """``count`` prompts of exactly ``length`` tokens of the word tokenizer."""
    import random

    rng = random.Random(seed)
    return [{"prompt": " ".join(f"w{rng.randrange(vocab_size - 3)}" for _ in range(length))} for _ in range(count)]


def run_one(path: Path, tiny: bool = False) -> dict:
    """One optimizer step of one preset in this process; the measurements as a dict."""
    import torch
    from datasets import Dataset
    from transformers import AutoConfig, AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer, ModelConfig, get_peft_config

    config = {**memory.load_config(path), "use_vllm": False, "report_to": "none"}
    facts = dict(memory.KNOWN_MODELS.get(str(config["model_name_or_path"])) or {})
    if not facts:
        return {"preset": path.stem, "skipped": f"no shipped architecture for {config['model_name_or_path']}"}
    cuda = torch.cuda.is_available() and not tiny
    if tiny:
        facts.update(TINY)
        config.update(TINY_LENGTHS, use_cpu=True, bf16=False, dtype="float32", optim="adamw_torch")
    if config.get("load_in_4bit"):
        return {"preset": path.stem, "skipped": "4-bit presets need a saved checkpoint"}
    prompt_len, completion_len = int(config["max_prompt_length"]), int(config["max_completion_length"])
    work = Path(tempfile.mkdtemp(prefix="memcheck-"))
    tokenizer = word_tokenizer(int(facts["vocab_size"]), work / "tokenizer")
    assert len(tokenizer) == facts["vocab_size"]

    dtype = torch.bfloat16 if str(config.get("dtype")) in ("bfloat16", "bf16") else torch.float32
    model_config = AutoConfig.for_model(facts.pop("model_type"), **facts)
    torch.manual_seed(0)
    with torch.device("cuda" if cuda else "cpu"):
        model = AutoModelForCausalLM.from_config(model_config, dtype=dtype)
    model.generation_config.eos_token_id = tokenizer.eos_token_id

    batch = int(config["per_device_train_batch_size"])
    accumulation = int(config.get("gradient_accumulation_steps") or 1)
    rows = prompts(batch * accumulation, prompt_len, int(model_config.vocab_size))
    measured_prompt = len(tokenizer(rows[0]["prompt"])["input_ids"])
    grpo_fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    model_fields = {f.name for f in dataclasses.fields(ModelConfig)}
    args = GRPOConfig(**{
        **{k: v for k, v in config.items() if k in grpo_fields},
        "output_dir": str(work / "out"), "max_steps": 1, "save_strategy": "no", "report_to": "none",
        "logging_steps": 1, "log_completions": False, "use_vllm": False, "eval_strategy": "no",
        "reward_weights": None, "generation_kwargs": {"min_new_tokens": completion_len},
    })
    peft_config = get_peft_config(ModelConfig(**{k: v for k, v in config.items() if k in model_fields}))

    def length_reward(completions, **_) -> list[float]:
        return [float(len(c)) / 1000 for c in completions]

    importlib.import_module(f"{PACKAGE}.training.logprobs_fallback").install()  # only where TRL's kernel needs Triton
    trainer = GRPOTrainer(model=model, reward_funcs=[length_reward], args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer, peft_config=peft_config)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    trainer.train()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    logged = next((row for row in trainer.state.log_history if "completions/min_length" in row), {})
    gpu_gb = memory.gpu_gb_from_preset(path)
    est = memory.estimate(config, gpu_gb, {**facts, "model_type": model_config.model_type})
    return {
        "preset": path.stem, "model": config["model_name_or_path"], "vocab": int(model_config.vocab_size),
        "prompt_tokens": measured_prompt, "max_prompt_length": prompt_len,
        "completion_min": logged.get("completions/min_length"), "max_completion_length": completion_len,
        "allocated_gib": torch.cuda.max_memory_allocated() / GIB if cuda else 0.0,
        "reserved_gib": torch.cuda.max_memory_reserved() / GIB if cuda else 0.0,
        "estimate_gib": est.total, "estimate_parts": est.parts(), "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="*", help="preset names (default: every single-GPU preset)")
    parser.add_argument("--timeout", type=int, default=200, help="seconds per preset")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child process: one preset, JSON on the last line
    parser.add_argument("--tiny_check", action="store_true", help="tiny shapes on CPU: tries the code path only")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(ROOT / "configs" / f"{args.one}.yaml", args.tiny_check)))
        return 0
    names = args.presets or [path.stem for path in single_gpu_presets()]
    gpu_gib = None
    if not args.tiny_check:
        import torch

        if not torch.cuda.is_available():
            print("error: this check needs a CUDA GPU (--tiny_check tries the code on CPU)", file=sys.stderr)
            return 2
        gpu_gib = torch.cuda.get_device_properties(0).total_memory / GIB
        print(f"GPU: {torch.cuda.get_device_name(0)} ({gpu_gib:.0f} GiB)")
    print(f"{'preset':<9} {'model':<28} {'prompt':>6} {'compl':>6} {'estimate':>9} {'allocated':>10} "
          f"{'reserved':>9} {'est/res':>8} {'s':>6}")
    failures = 0
    for name in names:
        needed = memory.gpu_gb_from_preset(name) or 0
        if gpu_gib is not None and needed > gpu_gib:
            print(f"{name:<9} skipped: needs a {needed:g} GB GPU")
            continue
        command = [sys.executable, __file__, "--one", name] + (["--tiny_check"] if args.tiny_check else [])
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"{name:<9} timed out after {args.timeout} s")
            failures += 1
            continue
        lines = done.stdout.strip().splitlines()
        if done.returncode or not lines:
            print(f"{name:<9} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            failures += 1
            continue
        row = json.loads(lines[-1])
        if "skipped" in row:
            print(f"{row['preset']:<9} skipped: {row['skipped']}")
            continue
        ratio = row["estimate_gib"] / row["reserved_gib"] if row["reserved_gib"] else float("nan")
        print(f"{row['preset']:<9} {row['model']:<28} {row['prompt_tokens']:>6} {row['completion_min'] or 0:>6.0f} "
              f"{row['estimate_gib']:8.1f}G {row['allocated_gib']:9.1f}G {row['reserved_gib']:8.1f}G {ratio:8.2f} "
              f"{row['seconds']:6.0f}")
        print(f"RESULT {json.dumps(row)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
