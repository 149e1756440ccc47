"""Activation and logits memory of the training micro-batch, per device: the A and L terms of the estimate
(``estimator.py``, whose docstring gives the model). What autograd keeps for one decoder layer, the layer that
gradient checkpointing recomputes during the backward, and TRL 1.16's fused LM head."""

from __future__ import annotations

from .archs import Arch

FUSED_HEAD_TILE = 4096 * 32768  # TRL 1.16 fused LM head: tokens per tile x vocabulary columns per tile


def layer_working_set(arch: Arch, act_bytes: int, lora_targets: list[str] | None, lora_dropout: float,
                      lora_r: int, fp32_adapters: bool = True) -> float:
    """Bytes per token that autograd keeps for ONE decoder layer's forward (what its backward needs).

    Coefficients from counting the tensors ``torch.autograd.graph.saved_tensors_hooks`` sees for one Qwen2/Qwen3/
    Llama layer of transformers 5 with PEFT LoRA (fitted exactly over varied hidden/intermediate/head sizes):
    two RMSNorms (fp32 input + normalized + output), q and attention output, k and v, the attention's logsumexp,
    four intermediate-size MLP tensors; Qwen3's q/k norms; LoRA on a 16-bit base keeps fp32 adapters, so each
    adapter saves an fp32 copy of its input (and its dropout output and a 1-byte mask when ``lora_dropout > 0``).
    """
    h, i = arch.hidden, arch.intermediate
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    b = act_bytes
    size = (8 + 4 * b) * h - (4 * h if b == 4 else 0) + 4 * b * i + 2 * b * (q + kv) + 4 * arch.heads + 8
    if arch.qk_norm:
        size += 8 * q + 2 * kv + 4 * (arch.heads + arch.kv_heads)
    if lora_targets:
        inputs = {"q_proj": h, "k_proj": h, "v_proj": h, "o_proj": q, "gate_proj": h, "up_proj": h, "down_proj": i}
        upcast = {"o_proj": 4.0, "down_proj": 2.0}  # measured fp32 input copies per adapter; the others 2.4
        for name in lora_targets:
            if name not in inputs:
                continue
            n = inputs[name]
            if b == 2 and fp32_adapters:  # fp32 adapters on a 16-bit base: lora_A's input is cast to fp32
                size += upcast.get(name, 2.4) * n
            if lora_dropout > 0:  # the fp32 dropout output, and the 1-byte mask CUDA's native_dropout keeps
                size += (4 if fp32_adapters else b) * n + n
            size += 4 * lora_r
    return float(size)


def recompute_working_set(arch: Arch, tokens: int, act_bytes: int, lora_targets: list[str] | None,
                          lora_dropout: float, lora_r: int, fp32_adapters: bool = True) -> float:
    """Bytes of the one layer that gradient checkpointing recomputes during the backward, for the whole
    micro-batch: its saved tensors plus the gradient buffers of its MLP intermediates (~3 x intermediate)."""
    per_token = layer_working_set(arch, act_bytes, lora_targets, lora_dropout, lora_r, fp32_adapters)
    per_token += 3 * arch.intermediate * act_bytes + 4 * arch.hidden
    return tokens * per_token


def activation_bytes(arch: Arch, tokens: int, act_bytes: int, checkpointed: bool, lora_targets: list[str] | None,
                     lora_dropout: float, lora_r: int, fp32_adapters: bool) -> float:
    """A: the activations of a micro-batch of ``tokens`` tokens. With gradient checkpointing: every layer's input,
    plus the one layer being recomputed during the backward (its full working set for the whole micro-batch);
    without, every layer's working set and input."""
    layer_set = layer_working_set(arch, act_bytes, lora_targets, lora_dropout, lora_r, fp32_adapters)
    if checkpointed:
        activations = tokens * arch.layers * arch.hidden * act_bytes
        activations += recompute_working_set(arch, tokens, act_bytes, lora_targets, lora_dropout, lora_r,
                                             fp32_adapters)
        return activations
    return tokens * arch.layers * (layer_set + arch.hidden * act_bytes)


def fused_head_bytes(arch: Arch, completion_tokens: int, act_bytes: int, head_trained: bool) -> float:
    """L: TRL 1.16's fused LM head for ``completion_tokens`` tokens: one tile, the saved hidden states and their fp32
    gradient, plus the LM head's fp32 gradient when it is trained."""
    logits = FUSED_HEAD_TILE * act_bytes + completion_tokens * (arch.hidden * (act_bytes + 4) + 48)
    if head_trained:
        logits += arch.vocab * arch.hidden * 4
    return logits
