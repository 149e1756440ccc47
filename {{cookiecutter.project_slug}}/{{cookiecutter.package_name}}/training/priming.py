"""Format priming: a brief supervised pass over gold completions before GRPO.

GRPO learns only from reward differences inside a group; a model that never produces the answer format gets the
same (zero) format and correctness reward for every completion, so it never learns (a random tiny model stays
flat at 0 for hundreds of steps). A few SFT steps on well-formed gold completions, the recipe Unsloth uses to
prime Qwen3 before GRPO, put the format within reach; GRPO then improves on it with the task's real rewards.

Priming trains what GRPO will train, so it is safe on a pretrained model: with ``use_peft`` it trains the LoRA adapter
GRPO then continues (the base weights stay bit-identical; the primed folder holds the adapter and the tokenizer);
a full fine-tune keeps fp32 master weights (bf16/fp16 compute through autocast on a GPU) and saves in the config's
dtype. Activation checkpointing follows the config; the logits of a step are bounded (``LOGITS_BUDGET``: micro-batches
with gradient accumulation, and only the completion positions go through the LM head). The learning rate is the
config's ``format_priming_lr`` (the presets use a pretrained model's SFT rate; the smoke's tiny random model 3e-3).

Priming is a plain single-process loop on one device. train.py primes in place when it runs as one process; a
multi-process or ZeRO-3 launch needs the primed model made beforehand, once:

    python -m <package>.training.priming --config configs/X.yaml   # writes <output_dir>/format-primed; train.py uses it
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import deque
from pathlib import Path

from .. import task
from ..data import DataError, build_prompt
from ..settings import read_yaml, setting
from .checkpoints import atomic_dir, is_model_dir


def encode(tokenizer, row: dict, system_prompt: str | None = None) -> tuple[list[int], list[int]]:
    """Token ids of prompt + gold completion, and labels that train only on the completion (and its end token)."""
    prompt = build_prompt(row, system_prompt)
    prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
    if hasattr(prompt_ids, "keys"):
        prompt_ids = prompt_ids["input_ids"]
    completion_ids = tokenizer(task.gold_completion(row), add_special_tokens=False)["input_ids"]
    completion_ids = [*completion_ids, tokenizer.eos_token_id]
    ids = [*prompt_ids, *completion_ids]
    return ids, [-100] * len(prompt_ids) + completion_ids


def prime(
    model_path: str | Path,
    out_dir: str | Path,
    rows: list[dict],
    steps: int,
    learning_rate: float = 1e-5,
    batch_size: int = 8,
    seed: int = 0,
    system_prompt: str | None = None,
    log=print,
    dtype: str | None = None,
    use_cpu: bool = False,
    gradient_checkpointing: bool = False,
    revision: str | None = None,
    trust_remote_code: bool = False,
    max_prompt_length: int | None = None,
    target_loss: float | None = None,
    peft_config=None,
) -> Path:
    """Fine-tune ``model_path`` on the rows' gold completions for ``steps`` steps; save to ``out_dir``.

    The model loads in ``dtype`` (the config's; None = float32, as GRPOTrainer loads it) on the first GPU when
    there is one and ``use_cpu`` is off, else on the CPU. Rows whose prompt is longer than ``max_prompt_length``
    tokens are left out, as GRPO leaves them out (one huge row would otherwise size every padded batch).

    The learning rate decays from ``learning_rate`` to a tenth of it over ``steps`` (cosine), which lets the loss
    settle instead of bouncing at a constant rate. With ``target_loss`` priming stops early, at the first multiple
    of 10 steps where the mean loss of the last 10 steps is below it (the gold completions are learnt), so
    ``steps`` is then a cap. With ``peft_config`` (a PEFT LoraConfig) only the adapter trains and ``out_dir`` gets the
    adapter (train.py then continues it); else the whole model trains on fp32 master weights.
    """
    import torch

    out = Path(out_dir)
    torch.manual_seed(seed)
    device = torch.device("cuda" if torch.cuda.is_available() and not use_cpu else "cpu")
    tokenizer, model, config_dtype = load_for_priming(
        model_path, load_dtype(dtype), device, peft_config, gradient_checkpointing, revision, trust_remote_code
    )
    trainable = [param for param in model.parameters() if param.requires_grad]
    what = "the LoRA adapter" if peft_config is not None else "every weight"
    log(f"format priming {steps} steps on {device.type}: {what} ({sum(p.numel() for p in trainable):,} parameters) "
        f"in {trainable[0].dtype}{autocast_note(model, config_dtype, device)}, lr {learning_rate:g}")
    examples = [encode(tokenizer, row, system_prompt) for row in rows]
    if max_prompt_length is not None:
        examples = within_prompt_length(examples, max_prompt_length, log)
    run_steps(model, trainable, examples, tokenizer.pad_token_id, device, config_dtype, steps, learning_rate,
              batch_size, seed, target_loss, log)
    if peft_config is None and config_dtype != next(model.parameters()).dtype:
        model.to(config_dtype)  # the fp32 master weights saved in the config's dtype, as GRPO loads them
    with atomic_dir(out) as partial:  # a kill mid-save leaves <out>.partial, never a half-written <out>
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
    return out


def within_prompt_length(examples: list[tuple[list[int], list[int]]], max_prompt_length: int,
                         log=print) -> list[tuple[list[int], list[int]]]:
    """The encoded rows whose prompt is at most ``max_prompt_length`` tokens (says how many were dropped); raises
    DataError when none is left."""
    kept = [(ids, labels) for ids, labels in examples if labels.count(-100) <= max_prompt_length]
    if len(kept) < len(examples):
        log(f"format priming: {len(examples) - len(kept)} of {len(examples)} rows dropped as longer than "
            f"max_prompt_length={max_prompt_length} tokens")
    if not kept:
        raise DataError(f"every format priming row is longer than max_prompt_length={max_prompt_length} tokens")
    return kept


def run_steps(model, trainable: list, examples: list[tuple[list[int], list[int]]], pad_token_id: int, device,
              config_dtype, steps: int, learning_rate: float, batch_size: int, seed: int, target_loss: float | None,
              log=print) -> None:
    """The priming loop: AdamW on ``trainable`` with the cosine decay to a tenth of ``learning_rate``, batches of
    ``batch_size`` rows drawn with ``seed``; stops early once the mean loss of the last 10 steps is below
    ``target_loss`` (checked every 10 steps), else warns when the cap of ``steps`` ends above it."""
    import torch

    optimizer = torch.optim.AdamW(trainable, lr=learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.1 + 0.45 * (1 + math.cos(math.pi * min(step, steps) / max(1, steps)))
    )
    generator = torch.Generator().manual_seed(seed)
    vocab = model.get_output_embeddings().weight.shape[0]
    recent: deque[float] = deque(maxlen=10)  # the last 10 losses
    for step in range(steps):
        batch = [examples[i] for i in torch.randint(len(examples), (batch_size,), generator=generator).tolist()]
        value = train_step(model, batch, pad_token_id, vocab, device, config_dtype)
        optimizer.step()
        optimizer.zero_grad()
        schedule.step()
        recent.append(value)
        mean = sum(recent) / len(recent)
        if step == 0 or (step + 1) % 10 == 0 or step + 1 == steps:
            log(f"format priming step {step + 1}/{steps}: loss {value:.3f}")
        if target_loss is not None and (step + 1) % 10 == 0 and mean < target_loss:
            log(f"format priming done at step {step + 1}: mean loss of the last 10 steps "
                f"{mean:.4f} < format_priming_target_loss {target_loss}")
            break
    else:
        if target_loss is not None and steps > 0:
            log(f"warning: format priming ended at its cap of {steps} steps with mean loss "
                f"{mean:.4f}, above format_priming_target_loss {target_loss}: "
                "raise format_priming_steps or format_priming_lr")

LOGITS_BUDGET = 2**30  # bytes of fp32 logits (and their gradient) one micro-batch may hold


def load_for_priming(model_path, torch_dtype, device, peft_config, checkpointing, revision, trust_remote_code):
    """(tokenizer, model ready to train, the config's dtype resolved). LoRA: weights in the config's dtype, only the
    adapter trainable. Full fine-tune of a 16-bit model: fp32 master weights; train_step computes in 16 bits on a GPU
    (autocast) and the model is saved back in 16 bits."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path, revision=revision, trust_remote_code=trust_remote_code)
    if torch_dtype == "auto":  # the checkpoint's own dtype
        stored = getattr(AutoConfig.from_pretrained(model_path, revision=revision,
                                                    trust_remote_code=trust_remote_code), "dtype", None)
        torch_dtype = getattr(torch, stored.removeprefix("torch.")) if isinstance(stored, str) else (
            stored or torch.float32)
    weights_dtype = torch.float32 if peft_config is None else torch_dtype
    model = AutoModelForCausalLM.from_pretrained(
        model_path, dtype=weights_dtype, revision=revision, trust_remote_code=trust_remote_code
    ).to(device)
    if peft_config is not None:
        from peft import get_peft_model

        model = get_peft_model(model, peft_config)
    if checkpointing:
        enable_checkpointing(model)
    model.train()
    return tokenizer, model, torch_dtype


def enable_checkpointing(model) -> None:
    """Activation checkpointing on: ``activation_checkpointing_enable`` on transformers >= 5.2x, the old name before.
    A LoRA model's frozen embeddings give no gradient, so its inputs are made to require one (else the checkpointed
    layers would get no gradient)."""
    enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
    enable()
    if hasattr(model, "peft_config"):
        model.enable_input_require_grads()


def autocast_note(model, config_dtype, device) -> str:
    if next(model.parameters()).dtype == config_dtype:
        return ""
    if device.type == "cuda":
        return f" (master weights; compute in {config_dtype} by autocast, saved in {config_dtype})"
    return f" (master weights; saved in {config_dtype})"


def train_step(model, batch, pad: int, vocab: int, device, config_dtype) -> float:
    """One optimizer step's gradients over ``batch`` (ids, labels); returns its mean loss per completion token.

    The logits stay within ``LOGITS_BUDGET``: the batch runs in micro-batches (gradients accumulate), only the
    positions from the shortest prompt on go through the LM head (``logits_to_keep``), and a row whose positions
    alone exceed the budget goes through the LM head in spans of positions (``row_loss``)."""
    import torch

    width = max(len(ids) for ids, _ in batch)
    keep = width - min(labels.count(-100) for _, labels in batch) + 1  # the positions that predict a completion
    micro = min(len(batch), LOGITS_BUDGET // max(1, keep * vocab * 4 * 2))
    tokens = sum(sum(1 for label in labels if label != -100) for _, labels in batch)
    half = config_dtype in (torch.bfloat16, torch.float16) and next(model.parameters()).dtype == torch.float32
    autocast = torch.autocast("cuda", dtype=config_dtype if half else torch.bfloat16, enabled=half
                              and device.type == "cuda")
    total = 0.0
    for start in range(0, len(batch), max(1, micro)):
        part = batch[start:start + max(1, micro)]
        input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in part], device=device)
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in part], device=device)
        attention = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in part], device=device)
        targets = labels[:, width - keep + 1:]
        with autocast:
            if micro < 1:  # one row's logits exceed the budget: split it over positions
                loss = row_loss(model, input_ids, attention, targets, keep, LOGITS_BUDGET // (vocab * 4 * 2)) / tokens
            else:
                logits = model(input_ids=input_ids, attention_mask=attention, logits_to_keep=keep).logits
                loss = torch.nn.functional.cross_entropy(
                    logits[:, :-1].float().reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100,
                    reduction="sum",
                ) / tokens
        loss.backward()
        total += loss.item()
    return total


def row_loss(model, input_ids, attention, targets, keep: int, span: int):
    """Summed cross-entropy of one row's last ``keep - 1`` predictions, the LM head run on ``span`` positions at a
    time and recomputed in the backward pass (checkpointed), so no more than one span's logits exist at once."""
    import torch
    from torch.utils.checkpoint import checkpoint

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    head, cap = base.get_output_embeddings(), getattr(base.config, "final_logit_softcapping", None)
    hidden = base.get_decoder()(input_ids=input_ids, attention_mask=attention).last_hidden_state
    hidden = hidden[:, hidden.shape[1] - keep:-1]

    def span_loss(states, labels):
        logits = head(states).float()
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                                 ignore_index=-100, reduction="sum")

    span = max(1, span)
    return sum(checkpoint(span_loss, hidden[:, i:i + span], targets[:, i:i + span], use_reentrant=False)
               for i in range(0, hidden.shape[1], span))


def lora_config(settings: dict):
    """The PEFT LoraConfig GRPO trains with (TRL's ``get_peft_config`` of the config's ModelConfig fields), or None
    for a full fine-tune."""
    if not settings.get("use_peft"):
        return None
    from dataclasses import fields

    from trl import ModelConfig, get_peft_config

    names = {field.name for field in fields(ModelConfig)}
    return get_peft_config(ModelConfig(**{key: value for key, value in settings.items() if key in names}))


def load_dtype(dtype):
    """The config's dtype for from_pretrained: a torch dtype, "auto", or float32 when unset."""
    import torch

    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype) or dtype == "auto":
        return dtype
    if dtype in ("float32", "bfloat16", "float16"):
        return getattr(torch, dtype)
    raise ValueError(f"dtype {dtype!r}: expected float32, bfloat16, float16 or auto")


def refusal(settings: dict) -> str | None:
    """The one line refusing format priming that the memory estimate says will not fit this GPU
    (``preflight.memory.priming_refusal``), or None; a model the estimator does not know gets a note instead."""
    from ..preflight import memory

    try:
        return memory.priming_refusal(settings)
    except memory.EstimateError as error:
        print(f"note: format priming memory estimate skipped: {error}", file=sys.stderr)
        return None


TRY_STEPS = 10  # a run of at most this many GRPO steps is a try of the loop: it learns nothing either way


def for_a_try(primed: str, steps: int, max_steps: int) -> tuple[str, int, str | None]:
    """(where to prime, how many steps, a note or None). A short try (``0 < max_steps <= TRY_STEPS``) with no primed
    model yet primes at most ``TRY_STEPS`` steps, into ``<primed>-try``, which a longer run in the same output_dir
    never reuses (it primes in full); the note says so."""
    if is_model_dir(primed) or not 0 < max_steps <= TRY_STEPS or steps <= TRY_STEPS:
        return primed, steps, None
    return f"{primed}-try", TRY_STEPS, (
        f"note: a short try (max_steps {max_steps} <= {TRY_STEPS}): format priming cut from {steps} to {TRY_STEPS} "
        f"steps, into {primed}-try, which a longer run here does not reuse; the try checks that the loop runs, it "
        "learns nothing")


PRIMING_ROWS = 512  # train.py primes on the first 512 training rows too


def prime_from_config(settings: dict, out_dir: str | Path | None = None, steps: int | None = None, log=print) -> Path:
    """Prime the model a train.py config names, on the same rows train.py would use; return the primed dir."""
    from .. import data
    from ..preflight.estimator import checkpointing
    from . import tiny

    steps = int(setting(settings, "format_priming_steps")) if steps is None else steps
    if steps <= 0:
        raise ValueError("format_priming_steps is 0 in this config: pass --steps N")
    model_path = settings["model_name_or_path"]
    if settings.get("build_tiny_model"):
        tiny.build_tiny_model(model_path, settings["dataset_name"], system_prompt=settings.get("system_prompt"))
    out = Path(out_dir) if out_dir else Path(setting(settings, "output_dir")) / "format-primed"
    seed = int(setting(settings, "seed"))
    train, _ = data.load_splits(
        settings["dataset_name"],
        settings.get("dataset_config"),
        setting(settings, "dataset_train_split"),
        setting(settings, "dataset_test_split"),
        eval_fraction=float(setting(settings, "eval_fraction")),
        seed=seed,
    )
    return prime(
        model_path,
        out,
        data.priming_rows(settings["dataset_name"], train, limit=PRIMING_ROWS, seed=seed),
        steps=steps,
        learning_rate=float(setting(settings, "format_priming_lr")),
        batch_size=int(setting(settings, "format_priming_batch_size")),
        target_loss=settings.get("format_priming_target_loss"),
        seed=seed,
        system_prompt=settings.get("system_prompt"),
        log=log,
        dtype=settings.get("dtype"),
        use_cpu=bool(setting(settings, "use_cpu")),
        gradient_checkpointing=checkpointing(settings),  # activation_checkpointing, or its old name
        revision=setting(settings, "model_revision"),
        trust_remote_code=bool(setting(settings, "trust_remote_code")),
        max_prompt_length=int(setting(settings, "max_prompt_length")),
        peft_config=lora_config(settings),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        description="Format priming in one process: writes <output_dir>/format-primed, which train.py then uses."
    )
    parser.add_argument("--config", required=True, help="the train.py config (YAML)")
    parser.add_argument("--output_dir", help="the run's output_dir (default: the config's)")
    parser.add_argument("--model_name_or_path", help="the model to prime (default: the config's)")
    parser.add_argument("--steps", type=int, help="priming steps (default: the config's format_priming_steps)")
    parser.add_argument("--out", help="write the primed model here instead of <output_dir>/format-primed")
    parser.add_argument("--force", action="store_true", help="prime again over an existing primed model")
    args = parser.parse_args(argv)
    try:
        settings = read_yaml(args.config)
        for key in ("output_dir", "model_name_or_path"):
            if getattr(args, key):
                settings[key] = getattr(args, key)
        out = Path(args.out) if args.out else Path(setting(settings, "output_dir")) / "format-primed"
        if is_model_dir(out) and not args.force:
            print(f"{out} already holds a primed model (pass --force to prime again)")
            return 0
        if args.steps is not None:
            settings["format_priming_steps"] = args.steps
        if line := refusal(settings):  # before any weight is loaded
            print(f"error: {line}", file=sys.stderr)
            return 1
        primed = prime_from_config(settings, out, args.steps)
    except KeyError as error:
        print(f"error: {args.config} sets no {error}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as error:
        text = str(error).strip().splitlines()
        print(f"error: {text[0] if text else type(error).__name__}", file=sys.stderr)
        return 1
    print(f"primed model saved to {primed}; train.py with the same output_dir uses it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
