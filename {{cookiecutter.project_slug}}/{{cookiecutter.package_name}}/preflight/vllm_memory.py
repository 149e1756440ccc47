"""vLLM's share of the GPU when it is colocated with training: its own weight copy, the KV cache of its requests,
and whether its reserved fraction (``vllm_gpu_memory_utilization``) can start at all. The Gen term of the estimate
with colocated vLLM (``estimator.py``, whose docstring gives the model), and the KV-cache figures the doctor and
the start-up check report."""

from __future__ import annotations

from typing import Any

from ..constants import GIB, NF4_BYTES_PER_PARAM
from ..settings import flag as _flag
from ..settings import setting
from .archs import Arch, resolve_arch

VLLM_OVERHEAD_GIB = 1.0  # vLLM's activations, CUDA graphs and sampler inside its reserved fraction


def vllm_max_len(config: dict[str, Any], arch: Arch, seq: int) -> tuple[int, str]:
    """The context vLLM sizes its KV cache for: ``vllm_max_model_length``, else the model's full context (vLLM's
    default), else prompt + completion when the model's context is unknown. With where it came from."""
    if config.get("vllm_max_model_length"):
        return int(config["vllm_max_model_length"]), "vllm_max_model_length"
    if arch.max_position:
        return arch.max_position, "the model's full context (vllm_max_model_length unset)"
    return seq, "prompt + completion (the model's context is unknown)"


def colocated_vllm(config: dict[str, Any], arch: Arch, four_bit: bool, seq: int, gen_seqs: int,
                   gpu_gb: float | None, notes: list[str]) -> tuple[float, float, float]:
    """Colocated vLLM for a generation batch of ``gen_seqs`` sequences of ``seq`` tokens: (its share of the GPU in
    bytes: its reserved fraction, or what it needs when the GPU size is unknown; what it needs for the whole batch
    at once, GiB; the least it starts with, GiB). Appends to ``notes`` when it falls short."""
    tp = max(1, int(setting(config, "vllm_tensor_parallel_size")))
    vllm_weights = vllm_weights_gib(arch, four_bit, tp)
    kv_token = arch.kv_bytes_per_token / tp
    max_len, where = vllm_max_len(config, arch, seq)
    if max_len < seq:
        notes.append(f"vllm_max_model_length {max_len} < max_prompt_length + max_completion_length ({seq}): "
                     "completions are cut short")
    vllm_needed = vllm_weights + kv_token * gen_seqs * min(seq, max_len) / GIB + VLLM_OVERHEAD_GIB
    vllm_minimum = vllm_weights + kv_token * max_len / GIB + VLLM_OVERHEAD_GIB
    fraction = float(setting(config, "vllm_gpu_memory_utilization"))
    if gpu_gb is None:
        generation = max(vllm_needed, vllm_minimum) * GIB
        notes.append(f"no GPU size: vLLM counted at what it needs ({vllm_needed:.1f} GiB), not at its fraction")
    else:
        generation = fraction * gpu_gb * GIB
        reserved = fraction * gpu_gb
        if reserved < vllm_minimum:
            budget = reserved - vllm_weights - VLLM_OVERHEAD_GIB
            notes.append(f"vLLM cannot start: one full-length request of {max_len} tokens ({where}) needs "
                         f"{kv_token * max_len / GIB:.2f} GiB of KV cache, its {fraction:g} x {gpu_gb:g} GiB "
                         f"leaves {budget:.2f} GiB after its weights; set vllm_max_model_length: {seq}"
                         if max_len > seq else
                         f"vLLM cannot start: its {fraction:g} x {gpu_gb:g} = {reserved:.1f} GiB cannot hold "
                         f"its weights + one {max_len}-token request + ~1 GiB ({vllm_minimum:.1f} GiB)")
        elif reserved < vllm_needed:
            held = int((reserved - vllm_minimum) * GIB / (kv_token * min(seq, max_len))) + 1
            notes.append(f"vLLM holds ~{held} of the {gen_seqs} sequences of a generation batch at once (the "
                         f"rest wait; slower, not an OOM); all at once needs {vllm_needed:.1f} GiB")
    if _flag(config, "vllm_enable_sleep_mode"):
        notes.append("vllm_enable_sleep_mode frees vLLM's memory during training steps: the peak is lower")
    return generation, vllm_needed, vllm_minimum


def vllm_weights_gib(arch: Arch, load_in_4bit: bool = False, tensor_parallel: int = 1) -> float:
    """vLLM's own copy of the weights per GPU: the checkpoint's dtype, or bitsandbytes 4-bit like the policy."""
    body = arch.params - arch.embedding_params
    if load_in_4bit:
        size = body * NF4_BYTES_PER_PARAM + arch.embedding_params * 2
    else:
        size = arch.params * arch.checkpoint_bytes
    return size / tensor_parallel / GIB


def vllm_kv_gib(config: dict[str, Any], gpu_gb: float, model_config: dict[str, Any] | None = None) -> float:
    """KV-cache memory vLLM is left with inside its fraction: fraction x GPU - its weights - ~1 GiB."""
    arch = resolve_arch(str(setting(config, "model_name_or_path") or ""), model_config)
    tp = max(1, int(setting(config, "vllm_tensor_parallel_size")))
    fraction = float(setting(config, "vllm_gpu_memory_utilization"))
    weights = vllm_weights_gib(arch, _flag(config, "load_in_4bit"), tp)
    return fraction * gpu_gb - weights - VLLM_OVERHEAD_GIB


def vllm_one_request_gib(config: dict[str, Any], model_config: dict[str, Any] | None = None) -> tuple[float, int]:
    """KV cache of one full-length request as vLLM sizes it, and that length in tokens."""
    arch = resolve_arch(str(setting(config, "model_name_or_path") or ""), model_config)
    tp = max(1, int(setting(config, "vllm_tensor_parallel_size")))
    seq = int(setting(config, "max_prompt_length")) + int(setting(config, "max_completion_length"))
    max_len, _ = vllm_max_len(config, arch, seq)
    return arch.kv_bytes_per_token / tp * max_len / GIB, max_len
