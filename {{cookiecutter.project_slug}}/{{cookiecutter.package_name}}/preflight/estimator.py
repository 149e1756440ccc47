"""Estimate the peak GPU memory of a GRPO run from its config, before loading anything (stdlib + PyYAML).

The command is ``python -m <package>.preflight.memory`` (memory.py); the A and L terms are computed in
``activation_memory.py``, colocated vLLM's share in ``vllm_memory.py``. The model (per GPU, GiB = 2**30 bytes) is
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
(``--model_config``, or ``model_name_or_path`` pointing at a local folder that has one). The estimate is a sizing
aid: measure with ``torch.cuda.max_memory_allocated()`` (``benchmarks/device_memory_check.py``) before trusting a
tight fit. Unsloth shares the vLLM weights with training, so it needs less than estimated here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..constants import GIB, NF4_BYTES_PER_PARAM
from ..settings import flag as _flag
from ..settings import setting
from .activation_memory import (  # noqa: F401 - re-exported: the estimator's names
    FUSED_HEAD_TILE,
    activation_bytes,
    fused_head_bytes,
    layer_working_set,
    recompute_working_set,
)
from .archs import LINEAR_LAYERS, Arch, resolve_arch
from .launch import Launch
from .vllm_memory import colocated_vllm

HEADROOM = 0.10  # the margin a preset should keep: estimates are +-25%, allocators fragment
OVERHEAD_GIB = 1.0  # CUDA context, allocator fragmentation, NCCL buffers
INT8_BYTES_PER_PARAM = 1.06
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


def weights_dtype(config: dict[str, Any]) -> Any:
    """The dtype the weights load in: ``dtype``, or ``torch_dtype`` (its older name), else the table's."""
    legacy = config.get("torch_dtype")
    return legacy if config.get("dtype") is None and legacy is not None else setting(config, "dtype")


def _bytes_of(dtype: Any) -> int:
    text = str(dtype).lower().replace("torch.", "")
    return 4 if text in ("float32", "fp32", "float", "none") else 2


CHECKPOINTING_KEYS = ("activation_checkpointing", "gradient_checkpointing")  # transformers >= 5.2x, its old name


def checkpointing_key(config: dict[str, Any]) -> str:
    """The activation-checkpointing field the config sets (``gradient_checkpointing`` on older transformers)."""
    return next((key for key in CHECKPOINTING_KEYS if config.get(key) is not None), CHECKPOINTING_KEYS[0])


def checkpointing(config: dict[str, Any]) -> bool:
    """Whether activations are checkpointed (TRL's default: on)."""
    return _flag(config, "gradient_checkpointing" if config.get("activation_checkpointing") is None
                 else "activation_checkpointing")


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


@dataclass
class _Run:
    """What the estimate's terms are computed from: the model, the launch, the batch shapes and the precision."""

    arch: Arch
    launch: Launch
    on_cpu: bool
    processes: int
    stage: int  # the ZeRO / FSDP stage; 0 without sharding
    batch: int
    prompt: int
    completion: int
    gen_seqs: int  # sequences of one generation batch on this device
    dtype_bytes: int
    four_bit: bool
    eight_bit: bool
    peft: bool
    optim: str
    targets: list[str] | None  # the LoRA target modules; None for full fine-tuning
    lora_r: int

    @property
    def shards(self) -> int:
        return self.processes if self.stage else 1

    @property
    def seq(self) -> int:
        return self.prompt + self.completion

    @property
    def quantized(self) -> bool:
        return self.four_bit or self.eight_bit

    @property
    def act_bytes(self) -> int:
        return 2 if self.quantized else self.dtype_bytes


def _run_of(config: dict[str, Any], arch: Arch, launch: Launch | None) -> _Run:
    """The run ``config`` describes, launched as ``launch`` (None: the config's own sharding, else plain DDP)."""
    from .launch import resolve

    on_cpu = _flag(config, "use_cpu")
    run = Launch() if on_cpu else (launch or resolve(config))
    processes = max(1, run.world_size)
    batch = int(setting(config, "per_device_train_batch_size"))
    prompt = int(setting(config, "max_prompt_length"))
    completion = int(setting(config, "max_completion_length"))
    gen_seqs = _generation_seqs(config, batch, processes)
    peft = _flag(config, "use_peft")
    return _Run(
        arch=arch, launch=run, on_cpu=on_cpu, processes=processes,
        stage=run.zero_stage if run.kind in ("deepspeed", "fsdp") else 0,
        batch=batch, prompt=prompt, completion=completion, gen_seqs=gen_seqs,
        dtype_bytes=_bytes_of(weights_dtype(config)),
        four_bit=_flag(config, "load_in_4bit"), eight_bit=_flag(config, "load_in_8bit"),
        peft=peft, optim=str(setting(config, "optim")),
        targets=_targets(config.get("lora_target_modules")) if peft else None,
        lora_r=int(setting(config, "lora_r")),
    )  # fmt: skip


def _generation_seqs(config: dict[str, Any], batch: int, processes: int) -> int:
    """Sequences of one generation batch on each device."""
    if config.get("generation_batch_size") and not config.get("steps_per_generation"):
        return math.ceil(int(config["generation_batch_size"]) / processes)
    return batch * int(setting(config, "steps_per_generation"))  # unset: gradient_accumulation_steps


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
    notes: list[str] = []
    name = str(setting(config, "model_name_or_path") or "")
    run = _run_of(config, resolve_arch(name, model_config), launch)
    arch = run.arch
    if "assumed" in run.launch.source:
        notes.append(f"{run.launch.source}; pass --accelerate_config for ZeRO/FSDP")
    full_weights = _full_weight_bytes(run)
    weights = _weight_bytes(run, full_weights, notes)
    trainable, trainable_params = _trainable_bytes(run, notes)
    dropout = float(setting(config, "lora_dropout")) if run.peft else 0.0
    fp32_adapters = not run.quantized and not (run.stage == 3 and run.peft)  # TRL: bf16 adapters for QLoRA, ZeRO-3
    activations = activation_bytes(arch, run.batch * run.seq, run.act_bytes, checkpointing(config), run.targets,
                                   dropout, run.lora_r, fp32_adapters)
    logits = fused_head_bytes(arch, run.batch * run.completion, run.act_bytes, head_trained=not run.peft)
    beta = float(setting(config, "beta"))  # R: the reference model
    reference = weights if (beta > 0 and not run.peft) else 0.0
    generation, vllm_needed, vllm_minimum = _generation_bytes(config, run, gpu_gb, full_weights, notes)
    if run.on_cpu:
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
        gpu_gb=None if run.on_cpu else gpu_gb,
        device="cpu" if run.on_cpu else "cuda",
        num_processes=run.processes,
        sharding=run.launch.description,
        vllm_needed=vllm_needed,
        vllm_minimum=vllm_minimum,
        notes=notes,
    )
    estimate_.notes.insert(0, f"{arch.params / 1e9:.2f}B parameters, {trainable_params / 1e6:.1f}M trainable")
    return estimate_


def _full_weight_bytes(run: _Run) -> float:
    """The policy's whole weights: 4-bit/8-bit body with 16-bit embeddings, else every parameter in its dtype."""
    arch = run.arch
    embed, body = arch.embedding_params, arch.params - arch.embedding_params
    if run.quantized:
        return body * (NF4_BYTES_PER_PARAM if run.four_bit else INT8_BYTES_PER_PARAM) + embed * 2
    return arch.params * run.dtype_bytes


def _weight_bytes(run: _Run, full_weights: float, notes: list[str]) -> float:
    """W: the policy's weights on one device (1/N of them under ZeRO-3, plus the layers being gathered)."""
    stage, shards = run.stage, run.shards
    weights = full_weights / (shards if stage == 3 else 1)
    if stage == 3 and shards > 1:  # the layers being gathered for the forward/backward, and the embedding
        weights += (2 * run.arch.layer_params + run.arch.vocab * run.arch.hidden) * run.dtype_bytes
    if run.peft and run.quantized and not run.eight_bit and run.dtype_bytes == 4:
        notes.append("4-bit: non-quantized weights counted as 16-bit (calibrated on TRL's QLoRA notebook)")
    return weights


def _trainable_bytes(run: _Run, notes: list[str]) -> tuple[float, float]:
    """S: the trainable state on one device (parameters, gradients, optimizer moments), and how many parameters
    train: the LoRA adapter in fp32 (bf16 under ZeRO-3), or every weight (sharded by ZeRO-1/2/3)."""
    arch, stage, shards, optim = run.arch, run.stage, run.shards, run.optim
    if run.peft:
        lora = arch.lora_params(run.lora_r, run.targets or [])
        lora_bytes = 2 if (stage == 3 and not run.quantized) else 4  # TRL keeps ZeRO-3 adapters in bf16
        trainable = lora * (2 * lora_bytes + _moment_bytes(optim, 4 if lora_bytes == 4 else 2))
        trainable_params = lora
    else:
        trainable_params = arch.params
        if run.launch.kind == "deepspeed":  # DeepSpeed mixed precision: fp32 master weights + moments, 16-bit grads
            grads, opt = run.dtype_bytes, 4 + _moment_bytes(optim, 4)
        else:
            grads, opt = run.dtype_bytes, _moment_bytes(optim, run.dtype_bytes)
        trainable = arch.params * (grads / (shards if stage >= 2 else 1) + opt / (shards if stage >= 1 else 1))
    if run.quantized and not run.peft:
        notes.append("quantized weights cannot be fully fine-tuned: set use_peft: true")
    return trainable, trainable_params


def _generation_bytes(config: dict[str, Any], run: _Run, gpu_gb: float | None, full_weights: float,
                      notes: list[str]) -> tuple[float, float | None, float | None]:
    """Gen: (bytes, vllm_needed, vllm_minimum). Colocated vLLM's share of the GPU; none in vLLM's server mode;
    without vLLM, transformers' KV cache and sampling logits, plus the weights gathered under ZeRO-3."""
    use_vllm = _flag(config, "use_vllm") and not run.on_cpu
    mode = str(setting(config, "vllm_mode"))
    if use_vllm and mode == "colocate":
        return colocated_vllm(config, run.arch, run.four_bit, run.seq, run.gen_seqs, gpu_gb, notes)
    if use_vllm:
        notes.append("vLLM server mode: generation runs on other GPUs")
        return 0.0, None, None
    kv_bytes = 4 if (run.dtype_bytes == 4 and not run.quantized) else 2
    generation = run.gen_seqs * run.seq * run.arch.kv_bytes_per_token / 2 * kv_bytes
    generation += run.gen_seqs * run.arch.vocab * 4  # the last position's logits while sampling
    if run.stage == 3 and run.shards > 1 and _flag(config, "ds3_gather_for_generation"):
        generation += full_weights - full_weights / run.shards
    return generation, None, None
