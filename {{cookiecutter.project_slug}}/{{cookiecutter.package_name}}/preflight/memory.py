"""GPU memory estimate of a GRPO config: advice when it does not fit, the start-up check, and the command.

    python -m <package>.preflight.memory --config configs/24gb.yaml       # GPU size from the preset's name
    python -m <package>.preflight.memory --config configs/24gb.yaml --gpu_gb 16   # the same config on another GPU
    python -m <package>.preflight.memory --config my.yaml --model_config path/to/config.json  # a model it does not know
    python -m <package>.preflight.memory --config configs/8x80gb.yaml --accelerate_config configs/accelerate/zero3.yaml

The model itself is in ``estimator.py``; architecture facts in ``archs.py``; the launch (processes, sharding) in
``launch.py``.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
from typing import Any

from ..flags import with_underscores
from ..settings import setting
from . import launch as launches
from .archs import (  # noqa: F401 - re-exported: the public names of the estimator
    KNOWN_MODELS,
    LINEAR_LAYERS,
    Arch,
    EstimateError,
    arch_from_config,
    gpu_gb_from_preset,
    load_config,
    read_model_config,
    resolve_arch,
)
from .estimator import (  # noqa: F401
    CHECKPOINTING_KEYS,
    GIB,
    HEADROOM,
    Estimate,
    _bytes_of,
    _flag,
    _targets,
    checkpointing,
    checkpointing_key,
    estimate,
    recompute_working_set,
    weights_dtype,
)
from .vllm_memory import vllm_kv_gib, vllm_max_len, vllm_one_request_gib, vllm_weights_gib  # noqa: F401

PACKAGE = __package__.rpartition(".")[0]  # the project's package (this module is in its preflight/)
ADVISED_LORA = {"use_peft": True, "lora_r": 32, "lora_target_modules": "all-linear"}  # the advice's LoRA


def _patched(config: dict[str, Any], **changes: Any) -> dict[str, Any]:
    new = copy.deepcopy(config)
    new.update(changes)
    return new


def _knobs(config: dict[str, Any], est: Estimate) -> list[tuple[str, dict[str, Any]]]:
    """Candidate config changes, first knobs first."""
    batch = int(setting(config, "per_device_train_batch_size"))
    accumulation = int(setting(config, "gradient_accumulation_steps"))
    completion = int(setting(config, "max_completion_length"))
    generations = int(setting(config, "num_generations"))
    knobs: list[tuple[str, dict[str, Any]]] = []
    if not _flag(config, "use_peft"):
        knobs.append(("use_peft: true (LoRA) instead of full fine-tuning", ADVISED_LORA))
    if not checkpointing(config):
        knobs.append((f"{checkpointing_key(config)}: true", {key: True for key in CHECKPOINTING_KEYS}))
    if batch > 1:
        knobs.append((f"per_device_train_batch_size {batch} -> {batch // 2} with gradient_accumulation_steps "
                      f"{accumulation} -> {accumulation * 2} (same batch)",
                      {"per_device_train_batch_size": batch // 2, "gradient_accumulation_steps": accumulation * 2}))
    if completion > 256:
        knobs.append((f"max_completion_length {completion} -> {completion // 2}",
                      {"max_completion_length": completion // 2}))
    if generations > 4 and generations % 2 == 0:
        knobs.append((f"num_generations {generations} -> {generations // 2}", {"num_generations": generations // 2}))
    if not _flag(config, "load_in_4bit"):
        lora = {**ADVISED_LORA, **{key: config[key] for key in ("lora_r", "lora_target_modules") if config.get(key)}}
        knobs.append(("load_in_4bit: true (QLoRA)" if _flag(config, "use_peft") else
                      "load_in_4bit: true with use_peft: true (QLoRA)", {"load_in_4bit": True, **lora}))
    if "8bit" not in str(setting(config, "optim")):
        knobs.append(("optim: adamw_8bit", {"optim": "adamw_8bit"}))
    if float(setting(config, "beta")) > 0 and not _flag(config, "use_peft"):
        knobs.append(("beta: 0.0 (no reference model)", {"beta": 0.0}))
    if est.vllm_needed is not None and est.gpu_gb and est.vllm_ok and est.vllm_minimum is not None:
        fraction = float(setting(config, "vllm_gpu_memory_utilization"))
        wanted = math.ceil(est.vllm_needed / est.gpu_gb * 20) / 20  # what vLLM needs, rounded up to 0.05
        floor = math.ceil(est.vllm_minimum / est.gpu_gb * 20) / 20  # the least it starts with
        if wanted < fraction:
            knobs.append((f"vllm_gpu_memory_utilization {fraction:g} -> {wanted:g} (what vLLM needs)",
                          {"vllm_gpu_memory_utilization": wanted}))
        elif floor < fraction:
            lower = max(floor, round(fraction - 0.1, 2))
            knobs.append((f"vllm_gpu_memory_utilization {fraction:g} -> {lower:g} (vLLM queues more sequences)",
                          {"vllm_gpu_memory_utilization": lower}))
    elif not _flag(config, "use_vllm") and est.generation > 1.0:
        knobs.append(("max_completion_length or num_generations lower (the KV cache of the generation batch)", {}))
    return knobs


_GENERIC_FIXES = {
    "weights": "load_in_4bit: true, a smaller model, or ZeRO-3 over more GPUs",
    "trainable": "use_peft: true, a lower lora_r, or optim: adamw_8bit",
    "activations": "activation_checkpointing: true, a lower per_device_train_batch_size (raise "
                   "gradient_accumulation_steps to keep the batch) or a shorter max_completion_length",
    "logits": "a lower per_device_train_batch_size or max_completion_length",
    "reference": "beta: 0.0, or use_peft: true (the reference is then the base model, free)",
    "generation": "a lower vllm_gpu_memory_utilization (with vLLM) or fewer/shorter generations (without)",
    "overhead": "",
}  # what to change for each part of the estimate, when no knob could be re-estimated


def advice(est: Estimate, config: dict[str, Any] | None = None, model_config: dict[str, Any] | None = None,
           launch: launches.Launch | None = None) -> list[str]:
    """What to change when ``est`` does not fit (empty when it fits or has no GPU size).

    Names the dominant parts, then the knobs to turn first; with ``config`` each knob is re-estimated and shown
    with what it saves, the ones that make it fit first.
    """
    if est.fits is not False:
        return []
    ranked = sorted(est.parts().items(), key=lambda item: item[1], reverse=True)
    lines = _overview(est, config, ranked)
    generic = [f"{name}: {_GENERIC_FIXES[name]}" for name, _ in ranked[:2] if _GENERIC_FIXES[name]]
    if config is None:
        return lines + generic
    base, fixes, est = _vllm_first(config, est, model_config, launch, lines)
    scored, hints = _scored_knobs(base, est, model_config, launch)
    for label, _, new in scored[:5]:
        verdict = "fits" if new.fits else "still over"
        lines.append(f"try {label}: saves {est.total - new.total:.1f} GiB -> {new.total:.1f} GiB ({verdict})")
    lines += hints
    if scored and not scored[0][2].fits:  # no single knob is enough: combine the biggest savers until it fits
        lines.append(_combined(base, fixes, scored, est, model_config, launch))
    if not scored:
        lines += generic
    return lines


def _overview(est: Estimate, config: dict[str, Any] | None, ranked: list[tuple[str, float]]) -> list[str]:
    """The advice's first lines: how far over the GPU the estimate is and its two largest parts, then whether
    vLLM's reserved fraction is too small to start."""
    dominant = ", ".join(f"{name} {value:.1f} GiB" for name, value in ranked[:2])
    over = est.total - (est.gpu_gb or 0)
    lines = [f"{'over by ' + format(over, '.1f') if over > 0 else 'total ' + format(est.total, '.1f')} GiB; "
             f"the largest parts: {dominant}"]
    if not est.vllm_ok:
        unset = config is not None and not config.get("vllm_max_model_length")
        cap = ("set vllm_max_model_length to max_prompt_length + max_completion_length (vLLM otherwise sizes its KV "
               "cache for the model's full context), raise vllm_gpu_memory_utilization" if unset
               else "raise vllm_gpu_memory_utilization")
        lines.append(f"vLLM's reserved fraction is below the {est.vllm_minimum:.1f} GiB it needs to start: {cap} "
                     "or use a smaller model")
    return lines


def _vllm_first(config: dict[str, Any], est: Estimate, model_config: dict[str, Any] | None,
                launch: launches.Launch | None, lines: list[str]) -> tuple[dict[str, Any], list[str], Estimate]:
    """vLLM must start before any other knob counts: cap its context at prompt + completion, then give it the least
    fraction it starts with (each said in ``lines``). The config the knobs start from, these fixes, its estimate."""
    base, fixes = config, []
    if not est.vllm_ok and config.get("use_vllm") and not config.get("vllm_max_model_length"):
        seq = int(setting(config, "max_prompt_length")) + int(setting(config, "max_completion_length"))
        base = _patched(config, vllm_max_model_length=seq)
        fixes.append(f"vllm_max_model_length: {seq}")
        est = estimate(base, est.gpu_gb, model_config, launch)
        lines.append(f"first vllm_max_model_length: {seq} (prompt + completion): {est.total:.1f} GiB"
                     f"{'' if est.vllm_ok else ', vLLM still cannot start'}")
    if not est.vllm_ok and est.gpu_gb and est.vllm_minimum is not None:
        needed = math.ceil(est.vllm_minimum / est.gpu_gb * 20) / 20
        if needed <= 0.9:  # vLLM must start first: give it the least it needs, then find room for it
            base = _patched(config, vllm_gpu_memory_utilization=needed)
            fixes.append(f"vllm_gpu_memory_utilization -> {needed:g}")
            est = estimate(base, est.gpu_gb, model_config, launch)
            lines.append(f"first vllm_gpu_memory_utilization -> {needed:g} so that vLLM starts: {est.total:.1f} GiB")
    return base, fixes, est


def _scored_knobs(base: dict[str, Any], est: Estimate, model_config: dict[str, Any] | None,
                  launch: launches.Launch | None) -> tuple[list[tuple[str, dict[str, Any], Estimate]], list[str]]:
    """The knobs that save memory, each re-estimated (those that make it fit first, then by total), and the hints
    for knobs that cannot be re-estimated."""
    scored: list[tuple[str, dict[str, Any], Estimate]] = []
    hints = []
    for label, patch in _knobs(base, est):
        if not patch:
            hints.append(f"try {label}")
            continue
        new = estimate(_patched(base, **patch), est.gpu_gb, model_config, launch)
        if new.total < est.total - 0.05:
            scored.append((label, patch, new))
    scored.sort(key=lambda item: (not item[2].fits, item[2].total))
    return scored, hints


def _combined(base: dict[str, Any], fixes: list[str], scored: list[tuple[str, dict[str, Any], Estimate]],
              est: Estimate, model_config: dict[str, Any] | None, launch: launches.Launch | None) -> str:
    """The line for the biggest savers applied together, one at a time until the run fits (with vLLM's fraction
    lowered to the least it then starts with), or that no combination fits."""
    combined, names = base, list(fixes)
    for label, patch, _ in sorted(scored, key=lambda item: item[2].total):
        combined = _patched(combined, **patch)
        names.append(label.split(" (")[0])
        new = estimate(combined, est.gpu_gb, model_config, launch)
        if not new.fits and new.vllm_minimum is not None and est.gpu_gb:  # vLLM may now need less
            floor = math.ceil(new.vllm_minimum / est.gpu_gb * 20) / 20
            trial = _patched(combined, vllm_gpu_memory_utilization=floor)
            if estimate(trial, est.gpu_gb, model_config, launch).fits:
                combined, new = trial, estimate(trial, est.gpu_gb, model_config, launch)
                names.append(f"vllm_gpu_memory_utilization -> {floor:g}")
        if new.fits:
            return f"together: {'; '.join(names)} -> {new.total:.1f} GiB (fits)"
    return "no combination of these knobs fits: use a smaller model or a larger GPU"


def detect_gpu_gb() -> float | None:
    """Memory of GPU 0 in GiB when torch sees one (imports torch lazily); None otherwise."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(0).total_memory / GIB
    except Exception:  # noqa: BLE001 - no torch, no driver: no GPU size
        return None
    return None


def check_fits(config: dict[str, Any], gpu_gb: float | None = None,
               model_config: dict[str, Any] | None = None, environ: dict[str, str] | None = None) -> list[str]:
    """Warnings for train.py to print at start-up; empty when the run fits with >= 10% headroom.

    ``gpu_gb`` defaults to the memory of the visible GPU. Never raises: an estimate that cannot be made is one
    warning line.
    """
    if _flag(config, "use_cpu"):
        return []
    if gpu_gb is None:
        gpu_gb = detect_gpu_gb()
    if gpu_gb is None:
        return []
    try:
        run = launches.resolve(config, os.environ if environ is None else environ)
        est = estimate(config, gpu_gb, model_config, run)
    except EstimateError as error:
        return [f"memory estimate skipped: {error}"]
    warnings: list[str] = []
    if est.fits is False:
        reason = "" if est.vllm_ok else ": vLLM cannot start (see the notes)"
        warnings.append(f"estimated peak GPU memory {est.total:.1f} GiB does not fit {gpu_gb:g} GiB{reason} "
                        f"({summary(est)})")
        warnings += [f"  {line}" for line in advice(est, config, model_config, run)]
    elif est.margin is not None and est.margin < HEADROOM:
        warnings.append(f"estimated peak GPU memory {est.total:.1f} GiB leaves only {est.margin:.0%} of "
                        f"{gpu_gb:g} GiB free: an OOM is possible ({summary(est)})")
    return warnings


PRIMING_LOGITS_BYTES = 2**30  # = priming.LOGITS_BUDGET, a hard bound there: rows split over positions beyond it


def priming_gib(config: dict[str, Any], model_config: dict[str, Any] | None = None) -> dict[str, float]:
    """Peak GPU memory of format priming (training/priming.py, one process), by part: weights (fp32 master weights for
    a full fine-tune), trainable state (AdamW: weight-sized gradient and two fp32 moments; the LoRA adapter's in fp32),
    activations of format_priming_batch_size sequences of prompt + completion (each layer's input with
    checkpointing, plus the recomputed layer; every layer's working set without), the bounded logits, overhead."""
    from .estimator import OVERHEAD_GIB, layer_working_set

    arch = resolve_arch(str(setting(config, "model_name_or_path") or ""), model_config)
    peft = _flag(config, "use_peft")
    act_bytes = _bytes_of(weights_dtype(config))
    tokens = int(setting(config, "format_priming_batch_size")) * (
        int(setting(config, "max_prompt_length")) + int(setting(config, "max_completion_length")))
    targets = _targets(config.get("lora_target_modules")) if peft else None
    lora_r = int(setting(config, "lora_r"))
    dropout = float(setting(config, "lora_dropout")) if peft else 0.0
    if peft:
        weights, trainable = arch.params * act_bytes, arch.lora_params(lora_r, targets or []) * 16.0
    else:
        weights, trainable = arch.params * 4.0, arch.params * 12.0
    if checkpointing(config):
        activations = tokens * arch.layers * arch.hidden * act_bytes
        activations += recompute_working_set(arch, tokens, act_bytes, targets, dropout, lora_r)
    else:
        activations = tokens * arch.layers * (layer_working_set(arch, act_bytes, targets, dropout, lora_r)
                                              + arch.hidden * act_bytes)
    parts = {"weights": weights, "trainable": trainable, "activations": activations,
             "logits": min(PRIMING_LOGITS_BYTES, tokens * arch.vocab * 8)}
    return {**{name: value / GIB for name, value in parts.items()}, "overhead": OVERHEAD_GIB}


def priming_refusal(config: dict[str, Any], gpu_gb: float | None = None,
                    model_config: dict[str, Any] | None = None) -> str | None:
    """The one line train.py and ``python -m <package>.training.priming`` refuse with, before loading any weight,
    when format priming's estimate (``priming_gib``) exceeds the GPU less 10% headroom; None when it fits, runs on the
    CPU or there is no GPU. Raises EstimateError for a model the estimator has no facts for."""
    if _flag(config, "use_cpu") or int(setting(config, "format_priming_steps")) <= 0:
        return None
    gpu_gb = detect_gpu_gb() if gpu_gb is None else gpu_gb
    if gpu_gb is None:
        return None
    parts = priming_gib(config, model_config)
    total = sum(parts.values())
    if total <= gpu_gb * (1 - HEADROOM):
        return None
    detail = ", ".join(f"{name} {value:.1f}" for name, value in parts.items() if value >= 0.05)
    return (f"format priming needs an estimated {total:.1f} GiB of {gpu_gb:g} GiB ({detail}): lower "
            "format_priming_batch_size, set activation_checkpointing: true or use_peft: true, or prime on a larger "
            f"GPU with python -m {PACKAGE}.training.priming and copy <output_dir>/format-primed here")


def colocate_problem(config: dict[str, Any], gpu_gb: float, model_config: dict[str, Any] | None = None) -> str | None:
    """Why vLLM colocated in each training process cannot start with ``config`` on a ``gpu_gb`` GPU (its share
    holds less than its copy of the weights, ~1 GiB and one full-length request), or None; None too for a model the
    estimator has no facts for."""
    try:
        kv = vllm_kv_gib(config, gpu_gb, model_config)
        one, length = vllm_one_request_gib(config, model_config)
        arch = resolve_arch(str(setting(config, "model_name_or_path") or ""), model_config)
    except EstimateError:
        return None
    if kv >= one:
        return None
    fraction = float(setting(config, "vllm_gpu_memory_utilization"))
    weights = vllm_weights_gib(arch, _flag(config, "load_in_4bit"),
                               max(1, int(setting(config, "vllm_tensor_parallel_size"))))
    return (f"vLLM colocated gets vllm_gpu_memory_utilization {fraction:g} x {gpu_gb:g} GiB = {fraction * gpu_gb:.1f} "
            f"GiB, less than its {weights:.1f} GiB copy of the weights + ~1 GiB + one {length}-token request "
            f"({one:.2f} GiB), so it cannot start: raise vllm_gpu_memory_utilization or train without vLLM "
            "(python train.py --config <this config>)")


def summary(est: Estimate) -> str:
    return ", ".join(f"{name} {value:.1f}" for name, value in est.parts().items() if value >= 0.05)


def report(est: Estimate) -> str:
    """The human-readable table the command prints."""
    unit = "GiB of system RAM" if est.device == "cpu" else "GiB per GPU"
    lines = [f"model: {est.model}  (processes: {est.num_processes}, sharding: {est.sharding})"]
    lines += [f"  {name:<12} {value:7.2f} GiB" for name, value in est.parts().items()]
    lines.append(f"  {'total':<12} {est.total:7.2f} {unit}")
    if est.device == "cpu":
        lines.append(f"GPU: not applicable (CPU run); needs about {est.total:.1f} GiB of RAM")
    elif est.gpu_gb is None:
        lines.append("GPU: size unknown (pass --gpu_gb)")
    elif est.fits:
        tight = "" if (est.margin or 0) >= HEADROOM else f" - below the {HEADROOM:.0%} headroom a preset keeps"
        lines.append(f"fits on {est.gpu_gb:g} GB: {est.margin:.0%} free ({est.gpu_gb - est.total:.1f} GiB){tight}")
    else:
        over = est.total - est.gpu_gb
        why = [f"over by {over:.1f} GiB"] if over > 0 else []
        why += [] if est.vllm_ok else ["vLLM cannot start (see the notes)"]
        lines.append(f"does not fit on {est.gpu_gb:g} GB: {'; '.join(why)}")
    lines += [f"note: {note}" for note in est.notes]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Estimate the peak GPU memory of a GRPO config.", allow_abbrev=False)
    parser.add_argument("--config", required=True, help="a YAML config, e.g. configs/24gb.yaml")
    parser.add_argument("--gpu_gb", type=float, default=None, help="memory of one GPU (default: from the preset name)")
    parser.add_argument("--model_config", default=None, help="config.json (or its folder) of a model not shipped here")
    parser.add_argument("--accelerate_config", default=None,
                        help="the accelerate launch config (configs/accelerate/*.yaml): its sharding and processes")
    parser.add_argument("--colocate", action="store_true",
                        help="only check that vLLM colocated (use_vllm true, vllm_mode colocate) can start: silent "
                             "when it can or the GPU size is unknown, one line and exit 1 when it cannot")
    args = parser.parse_args(with_underscores(parser, argv))
    try:
        config = load_config(args.config)
        if args.colocate:
            gpu_gb = args.gpu_gb or detect_gpu_gb() or gpu_gb_from_preset(args.config)
            problem = colocate_problem(config, gpu_gb) if gpu_gb else None
            if problem:
                print(f"error: {args.config}: {problem}", file=sys.stderr)
            return 1 if problem else 0
        run = launches.resolve(config, os.environ, args.accelerate_config)
        model_config = read_model_config(args.model_config) if args.model_config else None
        gpu_gb = args.gpu_gb if args.gpu_gb is not None else gpu_gb_from_preset(args.config)
        est = estimate(config, gpu_gb, model_config, run)
    except (EstimateError, launches.LaunchError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report(est))
    for line in advice(est, config, model_config, run):
        print(f"advice: {line}")
    return 0 if est.fits is not False else 1


if __name__ == "__main__":
    sys.exit(main())
