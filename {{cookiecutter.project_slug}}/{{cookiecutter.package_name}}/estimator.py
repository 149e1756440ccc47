"""Estimate the peak GPU memory of a GRPO run from its config, before loading anything (stdlib + PyYAML).

The command is ``python -m <package>.memory`` (memory.py). The model (per GPU, GiB = 2**30 bytes) is
``peak = W + S + A + L + R + Gen + overhead``, the model from
``gpu-memory-evidence.md`` (public measured figures it was checked against are cited in ``tests/test_memory.py``),
adapted to what TRL 1.16's GRPOTrainer does:

- **W, weights**: parameters x bytes of ``dtype`` (2 for bf16/fp16, 4 for float32, TRL's default when ``dtype`` is
  unset). ``load_in_4bit``: non-embedding parameters x 0.56 bytes (NF4 + quantization constants), embeddings and the
  LM head kept 16-bit (reproduces the logged 7.49 GiB of Qwen3-4B bf16, 5.60 of Llama-3.1-8B 4-bit, ~2.0-2.2 of
  Qwen2.5-3B 4-bit). Under ZeRO-3 / FSDP full sharding each GPU holds 1/N of it plus the layers being gathered; the
  sharding comes from the launch (``launch.py``), never guessed: without one, multi-process means plain DDP.
- **S, trainable state**: LoRA parameters (r x (in + out) for each targeted linear layer) in fp32: weight 4 + grad 4
  + AdamW moments 8 bytes (2 for 8-bit optimizers). Full fine-tuning: grads and moments in the weights' dtype
  (bf16 weights: 2 + 4 bytes/param; fp32: 4 + 8, so ~16 with W), or under DeepSpeed fp32 master weights + moments
  (12) + bf16 grads (2); ZeRO-1/2/3 shard the optimizer / + grads / + weights across ``num_processes``.
- **A, activations**: with gradient checkpointing each layer keeps its input, batch x (prompt + completion) x
  layers x hidden x 2 bytes (4 for float32 models), and the backward recomputes one layer at a time, whose whole
  working set for the micro-batch is alive at once (:func:`layer_working_set`: norms, attention, the MLP's four
  intermediate tensors, LoRA's fp32 input and dropout copies, plus the MLP gradients). Without checkpointing every
  layer keeps that working set. ``per_device_train_batch_size`` counts completions: it is the micro-batch of the
  training forward.
- **L, logits**: TRL 1.16 computes log-probs with a fused, tiled LM head (``add_fused_lm_head``), so the
  (batch, completion, vocab) logits of older TRL (batch x completion x vocab x 4 bytes, the largest term for Qwen's
  152K vocab in the evidence file) are never materialized: L is one 4096 x 32768 tile, the saved hidden states and
  their fp32 gradient, plus the LM head's fp32 gradient when it is trained. ``use_liger_kernel`` only swaps layer
  kernels in TRL 1.16 and gets no credit here.
- **R, reference model**: one more W when ``beta > 0`` and full fine-tuning (with LoRA the reference is the base
  model with the adapter disabled).
- **Gen, generation**: without vLLM, transformers' KV cache for the generation batch (per-device batch x
  steps_per_generation sequences of prompt + completion tokens, 2 x layers x kv_heads x head_dim x 2 bytes per
  token), plus the full weights gathered for generation under ZeRO-3. With vLLM colocated, the reserved
  ``vllm_gpu_memory_utilization`` x GPU memory, which must hold vLLM's own weight copy + ~1 GiB + the KV cache of
  at least one request of ``vllm_max_model_length`` tokens (unset: the model's full context, vLLM's default; vLLM
  refuses to start otherwise); it is checked separately. vLLM in server mode runs on other GPUs (0 here).
- **overhead**: ~1 GiB of CUDA context, allocator fragmentation and communication buffers.

GPU sizes are taken as GiB of device memory (a "24 GB" card has ~24 GiB). Architecture facts of the presets'
default models ship below as their published ``config.json`` values; any other model needs its config.json
(``--model-config``, or ``model_name_or_path`` pointing at a local folder that has one). The estimate is a sizing
aid: measure with ``torch.cuda.max_memory_allocated()`` (``benchmarks/device_memory_check.py``) before trusting a
tight fit. Unsloth shares the vLLM weights with training, so it needs less than estimated here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .archs import LINEAR_LAYERS, Arch, resolve_arch
from .launch import Launch
from .settings import setting

GIB = float(2**30)
HEADROOM = 0.10  # the margin a preset should keep: estimates are +-25%, allocators fragment
OVERHEAD_GIB = 1.0  # CUDA context, allocator fragmentation, NCCL buffers
VLLM_OVERHEAD_GIB = 1.0  # vLLM's activations, CUDA graphs and sampler inside its reserved fraction
NF4_BYTES_PER_PARAM = 0.56  # 4-bit NF4 weights with their quantization constants
INT8_BYTES_PER_PARAM = 1.06
FUSED_HEAD_TILE = 4096 * 32768  # TRL 1.16 fused LM head: tokens per tile x vocabulary columns per tile
PEFT_DEFAULT_TARGETS = ("q_proj", "v_proj")  # PEFT's default for Llama/Qwen/Mistral when no target is given


@dataclass
class Estimate:
    """Estimated peak memory per device, in GiB, with its parts and the verdict for ``gpu_gb``."""

    model: str
    weights: float
    trainable: float
    activations: float
    logits: float
    reference: float
    generation: float
    overhead: float
    gpu_gb: float | None = None
    device: str = "cuda"
    num_processes: int = 1
    sharding: str = "none"
    vllm_needed: float | None = None  # what vLLM's fraction must hold for the whole generation batch at once
    vllm_minimum: float | None = None  # vLLM's weights + one sequence's KV + overhead: below this it cannot start
    notes: list[str] = field(default_factory=list)

    PART_NAMES = ("weights", "trainable", "activations", "logits", "reference", "generation", "overhead")

    def parts(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.PART_NAMES}

    @property
    def total(self) -> float:
        return sum(self.parts().values())

    @property
    def vllm_ok(self) -> bool:
        return self.vllm_minimum is None or self.generation + 1e-9 >= self.vllm_minimum

    @property
    def fits(self) -> bool | None:
        """True when the total fits the GPU and vLLM's fraction can start; None without a GPU size."""
        if self.gpu_gb is None:
            return None
        return self.total <= self.gpu_gb and self.vllm_ok

    @property
    def margin(self) -> float | None:
        """Fraction of the GPU left free (negative when over)."""
        return None if self.gpu_gb is None else 1.0 - self.total / self.gpu_gb


def _bytes_of(dtype: Any) -> int:
    text = str(dtype or "float32").lower().replace("torch.", "")
    return 4 if text in ("float32", "fp32", "float", "none") else 2


def _flag(config: dict[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


CHECKPOINTING_KEYS = ("activation_checkpointing", "gradient_checkpointing")  # transformers >= 5.2x, its old name


def checkpointing_key(config: dict[str, Any]) -> str:
    """The activation-checkpointing field the config sets (``gradient_checkpointing`` on older transformers)."""
    return next((key for key in CHECKPOINTING_KEYS if config.get(key) is not None), CHECKPOINTING_KEYS[0])


def checkpointing(config: dict[str, Any]) -> bool:
    """Whether activations are checkpointed (TRL's default: on)."""
    return _flag(config, checkpointing_key(config), True)


def _targets(value: Any) -> list[str]:
    if value is None or value == []:
        return list(PEFT_DEFAULT_TARGETS)
    if isinstance(value, str):
        if value.strip() == "all-linear":
            return list(LINEAR_LAYERS)
        value = value.split(",")
    return [str(name).strip().rsplit(".", 1)[-1] for name in value]


def _moment_bytes(optim: str, param_bytes: int) -> float:
    """Optimizer state bytes per trainable parameter (AdamW: two moments in the parameter's dtype)."""
    optim = optim.lower()
    if "8bit" in optim:
        return 1.0 if "lion" in optim else 2.0
    if "adafactor" in optim:
        return 0.0  # factored second moment: rows + columns, negligible
    if optim.startswith("sgd"):
        return 0.0
    if "lion" in optim:
        return float(param_bytes)
    return 2.0 * param_bytes


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


def vllm_max_len(config: dict[str, Any], arch: Arch, seq: int) -> tuple[int, str]:
    """The context vLLM sizes its KV cache for: ``vllm_max_model_length``, else the model's full context (vLLM's
    default), else prompt + completion when the model's context is unknown. With where it came from."""
    if config.get("vllm_max_model_length"):
        return int(config["vllm_max_model_length"]), "vllm_max_model_length"
    if arch.max_position:
        return arch.max_position, "the model's full context (vllm_max_model_length unset)"
    return seq, "prompt + completion (the model's context is unknown)"


def estimate(
    config: dict[str, Any],
    gpu_gb: float | None = None,
    model_config: dict[str, Any] | None = None,
    launch: Launch | None = None,
) -> Estimate:
    """Estimate the peak memory per device of a GRPO run described by ``config`` (the YAML keys train.py reads).

    Missing keys take TRL 1.16's defaults. ``gpu_gb`` is the memory of one device (None: no verdict).
    ``model_config`` is a config.json dict for models the module does not know. ``launch`` is how the run is
    launched (``launch.resolve``); None: the config's own sharding, else plain DDP over ``num_processes``.
    Raises :class:`EstimateError` (one line) when the model's architecture is unknown.
    """
    from .launch import resolve

    notes: list[str] = []
    name = str(config.get("model_name_or_path") or "")
    arch = resolve_arch(name, model_config)
    on_cpu = _flag(config, "use_cpu", False)
    run = Launch() if on_cpu else (launch or resolve(config))
    if "assumed" in run.source:
        notes.append(f"{run.source}; pass --accelerate-config for ZeRO/FSDP")
    processes = max(1, run.world_size)
    stage = run.zero_stage if run.kind in ("deepspeed", "fsdp") else 0
    shards = processes if stage else 1

    batch = int(config.get("per_device_train_batch_size") or 8)
    prompt = int(setting(config, "max_prompt_length"))
    completion = int(setting(config, "max_completion_length"))
    seq = prompt + completion
    accumulation = int(config.get("gradient_accumulation_steps") or 1)
    if config.get("steps_per_generation"):
        gen_seqs = batch * int(config["steps_per_generation"])
    elif config.get("generation_batch_size"):
        gen_seqs = math.ceil(int(config["generation_batch_size"]) / processes)
    else:
        gen_seqs = batch * accumulation

    dtype_bytes = _bytes_of(config.get("dtype", config.get("torch_dtype")))
    four_bit, eight_bit = _flag(config, "load_in_4bit", False), _flag(config, "load_in_8bit", False)
    quantized = four_bit or eight_bit
    peft = _flag(config, "use_peft", False)
    act_bytes = 2 if quantized else dtype_bytes
    optim = str(config.get("optim") or "adamw_torch_fused")

    # W: the policy's weights
    embed, body = arch.embedding_params, arch.params - arch.embedding_params
    if quantized:
        full_weights = body * (NF4_BYTES_PER_PARAM if four_bit else INT8_BYTES_PER_PARAM) + embed * 2
    else:
        full_weights = arch.params * dtype_bytes
    weights = full_weights / (shards if stage == 3 else 1)
    if stage == 3 and shards > 1:  # the layers being gathered for the forward/backward, and the embedding
        weights += (2 * arch.layer_params + arch.vocab * arch.hidden) * dtype_bytes
    if peft and quantized and not eight_bit and dtype_bytes == 4:
        notes.append("4-bit: non-quantized weights counted as 16-bit (calibrated on TRL's QLoRA notebook)")

    # S: trainable state
    targets = _targets(config.get("lora_target_modules")) if peft else None
    lora_r = int(config.get("lora_r") or 16)
    if peft:
        lora = arch.lora_params(lora_r, targets or [])
        lora_bytes = 2 if (stage == 3 and not quantized) else 4  # TRL keeps ZeRO-3 adapters in bf16
        trainable = lora * (2 * lora_bytes + _moment_bytes(optim, 4 if lora_bytes == 4 else 2))
        trainable_params = lora
    else:
        trainable_params = arch.params
        if run.kind == "deepspeed":  # DeepSpeed mixed precision: fp32 master weights + fp32 moments, 16-bit grads
            grads, opt = dtype_bytes, 4 + _moment_bytes(optim, 4)
        else:
            grads, opt = dtype_bytes, _moment_bytes(optim, dtype_bytes)
        trainable = arch.params * (grads / (shards if stage >= 2 else 1) + opt / (shards if stage >= 1 else 1))
    if quantized and not peft:
        notes.append("quantized weights cannot be fully fine-tuned: set use_peft: true")

    # A: activations of the training micro-batch. With gradient checkpointing: every layer's input, plus the one
    # layer being recomputed during the backward (its full working set for the whole micro-batch).
    checkpointed = checkpointing(config)
    tokens_all = batch * seq
    dropout = float(config.get("lora_dropout", 0.05) or 0.0) if peft else 0.0
    fp32_adapters = not quantized and not (stage == 3 and peft)  # TRL: bf16 adapters for QLoRA and ZeRO-3
    layer_set = layer_working_set(arch, act_bytes, targets, dropout, lora_r, fp32_adapters)
    if checkpointed:
        activations = tokens_all * arch.layers * arch.hidden * act_bytes
        activations += recompute_working_set(arch, tokens_all, act_bytes, targets, dropout, lora_r, fp32_adapters)
    else:
        activations = tokens_all * arch.layers * (layer_set + arch.hidden * act_bytes)

    # L: TRL 1.16's fused LM head (tiles, saved hidden states and their fp32 grad; the head's grad if trained)
    tokens = batch * completion
    logits = FUSED_HEAD_TILE * act_bytes + tokens * (arch.hidden * (act_bytes + 4) + 48)
    if not peft:
        logits += arch.vocab * arch.hidden * 4

    # R: reference model
    beta = float(config.get("beta") or 0.0)
    reference = weights if (beta > 0 and not peft) else 0.0

    # Gen
    use_vllm = _flag(config, "use_vllm", False) and not on_cpu
    mode = str(config.get("vllm_mode") or "colocate")
    vllm_needed = vllm_minimum = None
    if use_vllm and mode == "colocate":
        tp = max(1, int(config.get("vllm_tensor_parallel_size") or 1))
        vllm_weights = vllm_weights_gib(arch, four_bit, tp)
        kv_token = arch.kv_bytes_per_token / tp
        max_len, where = vllm_max_len(config, arch, seq)
        if max_len < seq:
            notes.append(f"vllm_max_model_length {max_len} < max_prompt_length + max_completion_length ({seq}): "
                         "completions are cut short")
        vllm_needed = vllm_weights + kv_token * gen_seqs * min(seq, max_len) / GIB + VLLM_OVERHEAD_GIB
        vllm_minimum = vllm_weights + kv_token * max_len / GIB + VLLM_OVERHEAD_GIB
        fraction = float(config.get("vllm_gpu_memory_utilization") or 0.3)
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
        if _flag(config, "vllm_enable_sleep_mode", False):
            notes.append("vllm_enable_sleep_mode frees vLLM's memory during training steps: the peak is lower")
    elif use_vllm:
        generation = 0.0
        notes.append("vLLM server mode: generation runs on other GPUs")
    else:
        kv_bytes = 4 if (dtype_bytes == 4 and not quantized) else 2
        generation = gen_seqs * seq * arch.kv_bytes_per_token / 2 * kv_bytes
        generation += gen_seqs * arch.vocab * 4  # the last position's logits while sampling
        if stage == 3 and shards > 1 and _flag(config, "ds3_gather_for_generation", True):
            generation += full_weights - full_weights / shards

    if on_cpu:
        notes.append("CPU run: the total is system RAM, not GPU memory")
    estimate_ = Estimate(
        model=name,
        weights=weights / GIB,
        trainable=trainable / GIB,
        activations=activations / GIB,
        logits=logits / GIB,
        reference=reference / GIB,
        generation=generation / GIB,
        overhead=OVERHEAD_GIB,
        gpu_gb=None if on_cpu else gpu_gb,
        device="cpu" if on_cpu else "cuda",
        num_processes=processes,
        sharding=run.description,
        vllm_needed=vllm_needed,
        vllm_minimum=vllm_minimum,
        notes=notes,
    )
    estimate_.notes.insert(0, f"{arch.params / 1e9:.2f}B parameters, {trainable_params / 1e6:.1f}M trainable")
    return estimate_


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
    arch = resolve_arch(str(config.get("model_name_or_path") or ""), model_config)
    tp = max(1, int(config.get("vllm_tensor_parallel_size") or 1))
    fraction = float(config.get("vllm_gpu_memory_utilization") or 0.3)
    weights = vllm_weights_gib(arch, _flag(config, "load_in_4bit", False), tp)
    return fraction * gpu_gb - weights - VLLM_OVERHEAD_GIB


def vllm_one_request_gib(config: dict[str, Any], model_config: dict[str, Any] | None = None) -> tuple[float, int]:
    """KV cache of one full-length request as vLLM sizes it, and that length in tokens."""
    arch = resolve_arch(str(config.get("model_name_or_path") or ""), model_config)
    tp = max(1, int(config.get("vllm_tensor_parallel_size") or 1))
    seq = int(setting(config, "max_prompt_length")) + int(setting(config, "max_completion_length"))
    max_len, _ = vllm_max_len(config, arch, seq)
    return arch.kv_bytes_per_token / tp * max_len / GIB, max_len
