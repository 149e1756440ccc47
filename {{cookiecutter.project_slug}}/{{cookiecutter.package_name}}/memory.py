"""Estimate the peak GPU memory of a GRPO run from its config, before loading anything (stdlib + PyYAML).

    python -m <package>.memory --config configs/24gb.yaml                 # GPU size from the preset's name
    python -m <package>.memory --config configs/24gb.yaml --gpu-gb 16     # the same config on another GPU
    python -m <package>.memory --config my.yaml --model-config path/to/config.json   # a model it does not know
    python -m <package>.memory --config configs/8x80gb.yaml --accelerate-config configs/accelerate/ddp.yaml

The model (per GPU, GiB = 2**30 bytes) is ``peak = W + S + A + L + R + Gen + overhead``, the model from
``gpu-memory-evidence.md`` (public measured figures it was checked against are cited in ``tests/test_memory.py``),
adapted to what TRL 1.16's GRPOTrainer does:

- **W, weights**: parameters x bytes of ``dtype`` (2 for bf16/fp16, 4 for float32, TRL's default when ``dtype`` is
  unset). ``load_in_4bit``: non-embedding parameters x 0.56 bytes (NF4 + quantization constants), embeddings and the
  LM head kept 16-bit (reproduces the logged 7.49 GiB of Qwen3-4B bf16, 5.60 of Llama-3.1-8B 4-bit, ~2.0-2.2 of
  Qwen2.5-3B 4-bit). Under ZeRO-3 / FSDP full sharding each GPU holds 1/N of it plus the layers being gathered.
- **S, trainable state**: LoRA parameters (r x (in + out) for each targeted linear layer) in fp32: weight 4 + grad 4
  + AdamW moments 8 bytes (2 for 8-bit optimizers). Full fine-tuning: grads and moments in the weights' dtype
  (bf16 weights: 2 + 4 bytes/param; fp32: 4 + 8, so ~16 with W), or under DeepSpeed fp32 master weights + moments
  (12) + bf16 grads (2); ZeRO-1/2/3 shard the optimizer / + grads / + weights across ``num_processes``.
- **A, activations**: with gradient checkpointing each layer keeps its input, batch x (prompt + completion) x
  layers x hidden x 2 bytes (4 for float32 models); without it ~10x that. ``per_device_train_batch_size`` counts
  completions: it is the micro-batch of the training forward.
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
  ``vllm_gpu_memory_utilization`` x GPU memory, which must hold vLLM's own weight copy + KV + ~1 GiB; it is checked
  separately. vLLM in server mode runs on other GPUs (0 here).
- **overhead**: ~1 GiB of CUDA context, allocator fragmentation and communication buffers.

GPU sizes are taken as GiB of device memory (a "24 GB" card has ~24 GiB). Architecture facts of the presets'
default models ship below as their published ``config.json`` values; any other model needs its config.json
(``--model-config``, or ``model_name_or_path`` pointing at a local folder that has one). The estimate is a sizing
aid: measure with ``torch.cuda.max_memory_allocated()`` (``benchmarks/device_memory_check.py``) before trusting a
tight fit. Unsloth shares the vLLM weights with training, so it needs less than estimated here.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GIB = float(2**30)
HEADROOM = 0.10  # the margin a preset should keep: estimates are +-25%, allocators fragment
OVERHEAD_GIB = 1.0  # CUDA context, allocator fragmentation, NCCL buffers
VLLM_OVERHEAD_GIB = 1.0  # vLLM's activations, CUDA graphs and sampler inside its reserved fraction
NO_CHECKPOINTING_FACTOR = 10.0  # activations without gradient checkpointing, relative to the checkpointed ones
NF4_BYTES_PER_PARAM = 0.56  # 4-bit NF4 weights with their quantization constants
INT8_BYTES_PER_PARAM = 1.06
FUSED_HEAD_TILE = 4096 * 32768  # TRL 1.16 fused LM head: tokens per tile x vocabulary columns per tile
LINEAR_LAYERS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
PEFT_DEFAULT_TARGETS = ("q_proj", "v_proj")  # PEFT's default for Llama/Qwen/Mistral when no target is given

# Published config.json values (Hugging Face model repositories). kv bytes per token = 2 x layers x kv_heads x
# head_dim x 2: Qwen2.5 0.5B/1.5B/3B/7B = 12/28/36/56 KiB, Qwen3 0.6B/1.7B = 112, 4B/8B = 144, Llama-3.2-1B 32,
# Llama-3.2-3B 112, Llama-3.1-8B 128 (checked in tests/test_memory.py).
_QWEN2 = {"model_type": "qwen2", "vocab_size": 151936, "head_dim": 128, "attention_bias": True}
_QWEN3 = {"model_type": "qwen3", "vocab_size": 151936, "head_dim": 128, "num_key_value_heads": 8}
_LLAMA3 = {"model_type": "llama", "vocab_size": 128256, "num_key_value_heads": 8, "head_dim": 128}
KNOWN_MODELS: dict[str, dict[str, Any]] = {
    "Qwen/Qwen2.5-0.5B-Instruct": {**_QWEN2, "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                                   "num_attention_heads": 14, "num_key_value_heads": 2, "head_dim": 64,
                                   "tie_word_embeddings": True},
    "Qwen/Qwen2.5-1.5B-Instruct": {**_QWEN2, "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
                                   "num_attention_heads": 12, "num_key_value_heads": 2, "tie_word_embeddings": True},
    "Qwen/Qwen2.5-3B-Instruct": {**_QWEN2, "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
                                 "num_attention_heads": 16, "num_key_value_heads": 2, "tie_word_embeddings": True},
    "Qwen/Qwen2.5-7B-Instruct": {**_QWEN2, "vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944,
                                 "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                                 "tie_word_embeddings": False},
    "Qwen/Qwen3-0.6B": {**_QWEN3, "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
                        "num_attention_heads": 16, "tie_word_embeddings": True},
    "Qwen/Qwen3-1.7B": {**_QWEN3, "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 28,
                        "num_attention_heads": 16, "tie_word_embeddings": True},
    "Qwen/Qwen3-4B": {**_QWEN3, "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
                      "num_attention_heads": 32, "tie_word_embeddings": True},
    "Qwen/Qwen3-8B": {**_QWEN3, "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
                      "num_attention_heads": 32, "tie_word_embeddings": False},
    "meta-llama/Llama-3.2-1B-Instruct": {**_LLAMA3, "hidden_size": 2048, "intermediate_size": 8192,
                                         "num_hidden_layers": 16, "num_attention_heads": 32, "head_dim": 64,
                                         "tie_word_embeddings": True},
    "meta-llama/Llama-3.2-3B-Instruct": {**_LLAMA3, "hidden_size": 3072, "intermediate_size": 8192,
                                         "num_hidden_layers": 28, "num_attention_heads": 24,
                                         "tie_word_embeddings": True},
    "meta-llama/Llama-3.1-8B-Instruct": {**_LLAMA3, "hidden_size": 4096, "intermediate_size": 14336,
                                         "num_hidden_layers": 32, "num_attention_heads": 32,
                                         "tie_word_embeddings": False},
}
# Same architecture under another name (base models, Qwen2 = Qwen2.5 shapes, Qwen3 "-Base").
_ALIASES = {"qwen2-7b": "qwen2.5-7b", "qwen2-1.5b": "qwen2.5-1.5b", "qwen2-0.5b": "qwen2.5-0.5b"}


class EstimateError(ValueError):
    """The estimate cannot be made (unknown model, unreadable config); the message is one line."""


@dataclass(frozen=True)
class Arch:
    """The architecture facts the estimate needs, from a config.json."""

    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    attention_bias: bool = False
    qk_norm: bool = False
    checkpoint_bytes: int = 2  # dtype the checkpoint is stored in (vLLM loads this one)

    @property
    def embedding_params(self) -> int:
        """Input embedding plus the LM head when it is not tied to it."""
        return self.vocab * self.hidden * (1 if self.tied else 2)

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer of one decoder layer, by its usual module name."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        h, i = self.hidden, self.intermediate
        return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
                "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}

    @property
    def layer_params(self) -> int:
        shapes = self.linear_shapes()
        linear = sum(a * b for a, b in shapes.values())
        bias = (shapes["q_proj"][1] + 2 * shapes["k_proj"][1]) if self.attention_bias else 0
        norms = 2 * self.hidden + (2 * self.head_dim if self.qk_norm else 0)
        return linear + bias + norms

    @property
    def params(self) -> int:
        return self.layers * self.layer_params + self.embedding_params + self.hidden

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes per token in 16-bit: keys and values of every layer."""
        return 2 * self.layers * self.kv_heads * self.head_dim * 2

    def lora_params(self, r: int, targets: list[str]) -> int:
        """Trainable LoRA parameters: r x (in + out) for every targeted linear layer."""
        per_layer = sum(r * (a + b) for name, (a, b) in self.linear_shapes().items() if name in targets)
        head = r * (self.hidden + self.vocab) if "lm_head" in targets else 0
        return self.layers * per_layer + head


def arch_from_config(config: dict[str, Any], name: str = "model") -> Arch:
    """Read the architecture from a config.json dict (a multimodal config's ``text_config`` is used)."""
    cfg = config.get("text_config") or config
    try:
        hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        model_type = str(cfg.get("model_type", config.get("model_type", "")))
        dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or config.get("torch_dtype") or "bfloat16")
        return Arch(
            name=name,
            hidden=hidden,
            intermediate=int(cfg["intermediate_size"]),
            layers=int(cfg["num_hidden_layers"]),
            heads=heads,
            kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            vocab=int(cfg["vocab_size"]),
            tied=bool(cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", False))),
            attention_bias=bool(cfg.get("attention_bias", model_type == "qwen2")),
            qk_norm=model_type.startswith("qwen3"),
            checkpoint_bytes=4 if dtype in ("float32", "torch.float32") else 2,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise EstimateError(f"{name}: config.json lacks a usable {error} (need hidden_size, intermediate_size, "
                            "num_hidden_layers, num_attention_heads, vocab_size)") from None


def _short(name: str) -> str:
    base = name.rstrip("/").rsplit("/", 1)[-1].lower()
    base = re.sub(r"-(instruct|base|it|chat)$", "", base)
    return _ALIASES.get(base, base)


def read_model_config(path: str | Path) -> dict[str, Any]:
    """A config.json, or a model folder that holds one."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise EstimateError(f"cannot read model config {path}: {error}") from None


def resolve_arch(model_name: str, model_config: dict[str, Any] | None = None) -> Arch:
    """The architecture of ``model_name``: the given config.json, a local folder's, or the shipped facts."""
    if model_config is not None:
        return arch_from_config(model_config, model_name)
    if model_name and (Path(model_name) / "config.json").is_file():
        return arch_from_config(read_model_config(model_name), model_name)
    wanted = _short(model_name or "")
    for known, facts in KNOWN_MODELS.items():
        if known.lower() == (model_name or "").lower() or _short(known) == wanted:
            return arch_from_config(facts, model_name)
    raise EstimateError(
        f"no architecture facts for model {model_name!r}: pass --model-config path/to/config.json "
        f"(known: {', '.join(KNOWN_MODELS)})"
    )


def gpu_gb_from_preset(name: str | Path) -> float | None:
    """GPU memory per device named by a preset file (``24gb`` -> 24, ``40-48gb`` -> 40, ``8x80gb`` -> 80).

    None for ``cpu-only`` and for names that carry no size.
    """
    stem = Path(name).stem.lower()
    match = re.fullmatch(r"(?:\d+x)?(\d+)(?:-\d+)?gb", stem)
    return float(match.group(1)) if match else None


def load_config(path: str | Path) -> dict[str, Any]:
    """The YAML config train.py reads, as a dict."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise EstimateError(f"cannot read config {path}: {error}") from None
    if not isinstance(data, dict):
        raise EstimateError(f"config {path} is not a mapping")
    return data


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


def _zero_stage(config: dict[str, Any], zero_stage: int | None, notes: list[str]) -> int:
    """ZeRO stage from an explicit argument, a DeepSpeed config (dict or JSON path), FSDP, or the preset recipe."""
    if zero_stage is not None:
        return zero_stage
    processes = int(config.get("num_processes") or 1)
    deepspeed = config.get("deepspeed")
    if isinstance(deepspeed, str) and deepspeed:
        try:
            deepspeed = json.loads(Path(deepspeed).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            found = re.search(r"zero[_-]?(\d)", deepspeed.lower())
            notes.append(f"could not read DeepSpeed config {config['deepspeed']}; assumed from its name")
            return int(found.group(1)) if found else 3
    if isinstance(deepspeed, dict):
        return int((deepspeed.get("zero_optimization") or {}).get("stage", 0))
    fsdp = config.get("fsdp")
    fsdp_text = " ".join(fsdp) if isinstance(fsdp, list) else str(fsdp or "")
    if "full_shard" in fsdp_text or "hybrid_shard" in fsdp_text:
        return 3
    if "shard_grad_op" in fsdp_text:
        return 2
    if processes > 1 and not _flag(config, "use_peft", False):
        notes.append(f"no deepspeed/fsdp setting in the config: assumed DeepSpeed ZeRO-3 over {processes} processes "
                     "(the multi-GPU preset's recipe); --zero-stage 0 estimates plain DDP")
        return 3
    return 0


def zero_stage_from_accelerate(path: str | Path) -> int:
    """The sharding an accelerate launch config sets up, as a ZeRO stage (FSDP full shard = 3, DDP = 0)."""
    import yaml

    try:
        launch = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise EstimateError(f"cannot read accelerate config {path}: {error}") from None
    kind = str(launch.get("distributed_type", "")).upper()
    if kind == "DEEPSPEED":
        return int((launch.get("deepspeed_config") or {}).get("zero_stage", 0))
    if kind == "FSDP":
        fsdp = launch.get("fsdp_config") or {}
        strategy = str(fsdp.get("fsdp_sharding_strategy", "")).upper()
        if "SHARD_GRAD_OP" in strategy or fsdp.get("fsdp_reshard_after_forward") is False:
            return 2
        return 0 if "NO_SHARD" in strategy else 3
    return 0


def estimate(
    config: dict[str, Any],
    gpu_gb: float | None = None,
    model_config: dict[str, Any] | None = None,
    zero_stage: int | None = None,
) -> Estimate:
    """Estimate the peak memory per device of a GRPO run described by ``config`` (the YAML keys train.py reads).

    Missing keys take TRL 1.16's defaults. ``gpu_gb`` is the memory of one device (None: no verdict).
    ``model_config`` is a config.json dict for models the module does not know. Raises :class:`EstimateError`
    (one line) when the model's architecture is unknown.
    """
    notes: list[str] = []
    name = str(config.get("model_name_or_path") or "")
    arch = resolve_arch(name, model_config)
    on_cpu = _flag(config, "use_cpu", False)
    processes = max(1, int(config.get("num_processes") or 1))
    stage = 0 if on_cpu else _zero_stage(config, zero_stage, notes)
    shards = processes if stage else 1

    batch = int(config.get("per_device_train_batch_size") or 8)
    prompt = int(config.get("max_prompt_length") or 512)
    completion = int(config.get("max_completion_length") or 512)
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
    if peft:
        lora = arch.lora_params(int(config.get("lora_r") or 16), _targets(config.get("lora_target_modules")))
        lora_bytes = 2 if (stage == 3 and not quantized) else 4  # TRL keeps ZeRO-3 adapters in bf16
        trainable = lora * (2 * lora_bytes + _moment_bytes(optim, 4 if lora_bytes == 4 else 2))
        trainable_params = lora
    else:
        trainable_params = arch.params
        if stage:  # DeepSpeed mixed precision: fp32 master weights + fp32 moments, 16-bit grads
            grads, opt = dtype_bytes, 4 + _moment_bytes(optim, 4)
        else:
            grads, opt = dtype_bytes, _moment_bytes(optim, dtype_bytes)
        trainable = arch.params * (grads / (shards if stage >= 2 else 1) + opt / (shards if stage >= 1 else 1))
    if quantized and not peft:
        notes.append("quantized weights cannot be fully fine-tuned: set use_peft: true")

    # A: activations of the training micro-batch
    checkpointing = _flag(config, "gradient_checkpointing", True)
    activations = batch * seq * arch.layers * arch.hidden * act_bytes
    if not checkpointing:
        activations *= NO_CHECKPOINTING_FACTOR

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
        vllm_needed = vllm_weights + kv_token * gen_seqs * seq / GIB + VLLM_OVERHEAD_GIB
        vllm_minimum = vllm_weights + kv_token * seq / GIB + VLLM_OVERHEAD_GIB
        fraction = float(config.get("vllm_gpu_memory_utilization") or 0.3)
        if gpu_gb is None:
            generation = vllm_needed * GIB
            notes.append(f"no GPU size: vLLM counted at what it needs ({vllm_needed:.1f} GiB), not at its fraction")
        else:
            generation = fraction * gpu_gb * GIB
            reserved = fraction * gpu_gb
            if reserved < vllm_minimum:
                notes.append(f"vLLM's {fraction:g} x {gpu_gb:g} = {reserved:.1f} GiB cannot hold its weights + one "
                             f"sequence + ~1 GiB ({vllm_minimum:.1f} GiB): it will not start")
            elif reserved < vllm_needed:
                held = int((reserved - vllm_minimum) * GIB / (kv_token * seq)) + 1
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
        sharding=f"ZeRO-{stage} over {processes}" if stage else "none",
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


def _patched(config: dict[str, Any], **changes: Any) -> dict[str, Any]:
    new = copy.deepcopy(config)
    new.update(changes)
    return new


def _knobs(config: dict[str, Any], est: Estimate) -> list[tuple[str, dict[str, Any]]]:
    """Candidate config changes, first knobs first."""
    batch = int(config.get("per_device_train_batch_size") or 8)
    accumulation = int(config.get("gradient_accumulation_steps") or 1)
    completion = int(config.get("max_completion_length") or 512)
    generations = int(config.get("num_generations") or 8)
    knobs: list[tuple[str, dict[str, Any]]] = []
    if not _flag(config, "use_peft", False):
        knobs.append(("use_peft: true (LoRA) instead of full fine-tuning", {"use_peft": True, "lora_r": 32,
                                                                             "lora_target_modules": "all-linear"}))
    if not _flag(config, "gradient_checkpointing", True):
        knobs.append(("gradient_checkpointing: true", {"gradient_checkpointing": True}))
    if batch > 1:
        knobs.append((f"per_device_train_batch_size {batch} -> {batch // 2} with gradient_accumulation_steps "
                      f"{accumulation} -> {accumulation * 2} (same batch)",
                      {"per_device_train_batch_size": batch // 2, "gradient_accumulation_steps": accumulation * 2}))
    if completion > 256:
        knobs.append((f"max_completion_length {completion} -> {completion // 2}",
                      {"max_completion_length": completion // 2}))
    if generations > 4 and generations % 2 == 0:
        knobs.append((f"num_generations {generations} -> {generations // 2}", {"num_generations": generations // 2}))
    if not _flag(config, "load_in_4bit", False):
        lora = {"use_peft": True, "lora_r": int(config.get("lora_r") or 32),
                "lora_target_modules": config.get("lora_target_modules") or "all-linear"}
        knobs.append(("load_in_4bit: true (QLoRA)" if _flag(config, "use_peft", False) else
                      "load_in_4bit: true with use_peft: true (QLoRA)", {"load_in_4bit": True, **lora}))
    if "8bit" not in str(config.get("optim") or ""):
        knobs.append(("optim: adamw_8bit", {"optim": "adamw_8bit"}))
    if float(config.get("beta") or 0.0) > 0 and not _flag(config, "use_peft", False):
        knobs.append(("beta: 0.0 (no reference model)", {"beta": 0.0}))
    if est.vllm_needed is not None and est.gpu_gb and est.vllm_ok and est.vllm_minimum is not None:
        fraction = float(config.get("vllm_gpu_memory_utilization") or 0.3)
        wanted = math.ceil(est.vllm_needed / est.gpu_gb * 20) / 20  # what vLLM needs, rounded up to 0.05
        floor = math.ceil(est.vllm_minimum / est.gpu_gb * 20) / 20  # the least it starts with
        if wanted < fraction:
            knobs.append((f"vllm_gpu_memory_utilization {fraction:g} -> {wanted:g} (what vLLM needs)",
                          {"vllm_gpu_memory_utilization": wanted}))
        elif floor < fraction:
            lower = max(floor, round(fraction - 0.1, 2))
            knobs.append((f"vllm_gpu_memory_utilization {fraction:g} -> {lower:g} (vLLM queues more sequences)",
                          {"vllm_gpu_memory_utilization": lower}))
    elif not _flag(config, "use_vllm", False) and est.generation > 1.0:
        knobs.append(("max_completion_length or num_generations lower (the KV cache of the generation batch)", {}))
    return knobs


def advice(est: Estimate, config: dict[str, Any] | None = None, model_config: dict[str, Any] | None = None,
           zero_stage: int | None = None) -> list[str]:
    """What to change when ``est`` does not fit (empty when it fits or has no GPU size).

    Names the dominant parts, then the knobs to turn first; with ``config`` each knob is re-estimated and shown
    with what it saves, the ones that make it fit first.
    """
    if est.fits is not False:
        return []
    ranked = sorted(est.parts().items(), key=lambda item: item[1], reverse=True)
    dominant = ", ".join(f"{name} {value:.1f} GiB" for name, value in ranked[:2])
    over = est.total - (est.gpu_gb or 0)
    lines = [f"{'over by ' + format(over, '.1f') if over > 0 else 'total ' + format(est.total, '.1f')} GiB; "
             f"the largest parts: {dominant}"]
    if not est.vllm_ok:
        lines.append(f"vLLM's reserved fraction is below the {est.vllm_minimum:.1f} GiB it needs to start: raise "
                     "vllm_gpu_memory_utilization or use a smaller model")
    generic = {
        "weights": "load_in_4bit: true, a smaller model, or ZeRO-3 over more GPUs",
        "trainable": "use_peft: true, a lower lora_r, or optim: adamw_8bit",
        "activations": "gradient_checkpointing: true, a lower per_device_train_batch_size (raise "
                       "gradient_accumulation_steps to keep the batch) or a shorter max_completion_length",
        "logits": "a lower per_device_train_batch_size or max_completion_length",
        "reference": "beta: 0.0, or use_peft: true (the reference is then the base model, free)",
        "generation": "a lower vllm_gpu_memory_utilization (with vLLM) or fewer/shorter generations (without)",
        "overhead": "",
    }
    if config is None:
        return lines + [f"{name}: {generic[name]}" for name, _ in ranked[:2] if generic[name]]
    base, fixes = config, []
    if not est.vllm_ok and est.gpu_gb and est.vllm_minimum is not None:
        needed = math.ceil(est.vllm_minimum / est.gpu_gb * 20) / 20
        if needed <= 0.9:  # vLLM must start first: give it the least it needs, then find room for it
            base = _patched(config, vllm_gpu_memory_utilization=needed)
            fixes.append(f"vllm_gpu_memory_utilization -> {needed:g}")
            est = estimate(base, est.gpu_gb, model_config, zero_stage)
            lines.append(f"first vllm_gpu_memory_utilization -> {needed:g} so that vLLM starts: {est.total:.1f} GiB")
    scored: list[tuple[str, dict[str, Any], Estimate]] = []
    hints = []
    for label, patch in _knobs(base, est):
        if not patch:
            hints.append(f"try {label}")
            continue
        new = estimate(_patched(base, **patch), est.gpu_gb, model_config, zero_stage)
        if new.total < est.total - 0.05:
            scored.append((label, patch, new))
    scored.sort(key=lambda item: (not item[2].fits, item[2].total))
    for label, _, new in scored[:5]:
        verdict = "fits" if new.fits else "still over"
        lines.append(f"try {label}: saves {est.total - new.total:.1f} GiB -> {new.total:.1f} GiB ({verdict})")
    lines += hints
    if scored and not scored[0][2].fits:  # no single knob is enough: combine the biggest savers until it fits
        combined, names = base, list(fixes)
        for label, patch, _ in sorted(scored, key=lambda item: item[2].total):
            combined = _patched(combined, **patch)
            names.append(label.split(" (")[0])
            new = estimate(combined, est.gpu_gb, model_config, zero_stage)
            if not new.fits and new.vllm_minimum is not None and est.gpu_gb:  # vLLM may now need less
                floor = math.ceil(new.vllm_minimum / est.gpu_gb * 20) / 20
                trial = _patched(combined, vllm_gpu_memory_utilization=floor)
                if estimate(trial, est.gpu_gb, model_config, zero_stage).fits:
                    combined, new = trial, estimate(trial, est.gpu_gb, model_config, zero_stage)
                    names.append(f"vllm_gpu_memory_utilization -> {floor:g}")
            if new.fits:
                lines.append(f"together: {'; '.join(names)} -> {new.total:.1f} GiB (fits)")
                break
        else:
            lines.append("no combination of these knobs fits: use a smaller model or a larger GPU")
    if not scored:
        lines += [f"{name}: {generic[name]}" for name, _ in ranked[:2] if generic[name]]
    return lines


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
               model_config: dict[str, Any] | None = None) -> list[str]:
    """Warnings for train.py to print at start-up; empty when the run fits with >= 10% headroom.

    ``gpu_gb`` defaults to the memory of the visible GPU. Never raises: an estimate that cannot be made is one
    warning line.
    """
    if _flag(config, "use_cpu", False):
        return []
    if gpu_gb is None:
        gpu_gb = detect_gpu_gb()
    if gpu_gb is None:
        return []
    try:
        est = estimate(config, gpu_gb, model_config)
    except EstimateError as error:
        return [f"memory estimate skipped: {error}"]
    warnings: list[str] = []
    if est.fits is False:
        reason = "" if est.vllm_ok else ": vLLM's fraction is too small to start"
        warnings.append(f"estimated peak GPU memory {est.total:.1f} GiB does not fit {gpu_gb:g} GiB{reason} "
                        f"({summary(est)})")
        warnings += [f"  {line}" for line in advice(est, config, model_config)]
    elif est.margin is not None and est.margin < HEADROOM:
        warnings.append(f"estimated peak GPU memory {est.total:.1f} GiB leaves only {est.margin:.0%} of "
                        f"{gpu_gb:g} GiB free: an OOM is possible ({summary(est)})")
    return warnings


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
        lines.append("GPU: size unknown (pass --gpu-gb)")
    elif est.fits:
        tight = "" if (est.margin or 0) >= HEADROOM else f" - below the {HEADROOM:.0%} headroom a preset keeps"
        lines.append(f"fits on {est.gpu_gb:g} GB: {est.margin:.0%} free ({est.gpu_gb - est.total:.1f} GiB){tight}")
    else:
        over = est.total - est.gpu_gb
        why = [f"over by {over:.1f} GiB"] if over > 0 else []
        why += [] if est.vllm_ok else ["vLLM's fraction is too small to start"]
        lines.append(f"does not fit on {est.gpu_gb:g} GB: {'; '.join(why)}")
    lines += [f"note: {note}" for note in est.notes]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Estimate the peak GPU memory of a GRPO config.")
    parser.add_argument("--config", required=True, help="a YAML config, e.g. configs/24gb.yaml")
    parser.add_argument("--gpu-gb", type=float, default=None, help="memory of one GPU (default: from the preset name)")
    parser.add_argument("--model-config", default=None, help="config.json (or its folder) of a model not shipped here")
    parser.add_argument("--zero-stage", type=int, choices=[0, 1, 2, 3], default=None,
                        help="DeepSpeed ZeRO stage (default: from the config; multi-GPU full fine-tunes assume 3)")
    parser.add_argument("--accelerate-config", default=None,
                        help="the accelerate launch config (configs/accelerate/*.yaml): its sharding and processes")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        if args.accelerate_config and args.zero_stage is None:
            args.zero_stage = zero_stage_from_accelerate(args.accelerate_config)
        model_config = read_model_config(args.model_config) if args.model_config else None
        gpu_gb = args.gpu_gb if args.gpu_gb is not None else gpu_gb_from_preset(args.config)
        est = estimate(config, gpu_gb, model_config, args.zero_stage)
    except EstimateError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report(est))
    for line in advice(est, config, model_config, args.zero_stage):
        print(f"advice: {line}")
    return 0 if est.fits is not False else 1


if __name__ == "__main__":
    sys.exit(main())
