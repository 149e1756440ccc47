"""Model loading, by the ``model_backend`` config field.

``trl``: plain transformers + PEFT, as TRL's own grpo.py does it: GRPOTrainer loads the policy from its name with
``model_init_kwargs`` (dtype, attention, quantization) and wraps it in the LoRA adapter described by ModelConfig's
``use_peft``/``lora_*`` fields.

``unsloth``: Unsloth's FastLanguageModel loads the model and tokenizer and attaches the LoRA adapter itself (4-bit or
16-bit, vLLM fast inference when ``use_vllm``), so GRPOTrainer gets a ready PEFT model and no ``peft_config``.
Unsloth is GPU-only: with ``use_cpu: true`` (the smoke config) the transformers path is used instead.
"""

from __future__ import annotations

from pathlib import Path

from transformers import AutoTokenizer
from trl import get_peft_config, get_quantization_config

from . import distributed, logprobs_fallback


def load_transformers(model_args, training_args):
    """Return (model name, tokenizer, peft_config); GRPOTrainer loads the weights with ``model_init_kwargs``."""
    tokenizer = AutoTokenizer.from_pretrained(
        model_args.model_name_or_path,
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
    )
    init_kwargs = {
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
    }
    quantization = get_quantization_config(model_args)
    if quantization is not None:
        init_kwargs["quantization_config"] = quantization
    # Under several processes each rank loads onto its own device, never "auto" over every GPU (TRL only resets
    # "auto" for DDP and DeepSpeed, not for FSDP).
    placement = distributed.device_map(distributed.launch_env(), "transformers", quantized=quantization is not None)
    if placement != "default" and not training_args.use_cpu:
        init_kwargs["device_map"] = placement
    init_kwargs = {**init_kwargs, **(training_args.model_init_kwargs or {})}
    adapter = Path(model_args.model_name_or_path)
    if (adapter / "adapter_config.json").is_file():  # format priming's LoRA adapter: GRPO trains it on
        return load_adapter(adapter, init_kwargs), tokenizer, None
    training_args.model_init_kwargs = init_kwargs
    return model_args.model_name_or_path, tokenizer, get_peft_config(model_args)


def load_adapter(adapter: Path, init_kwargs: dict):
    """The base model the adapter names, with the adapter attached and trainable (what priming saved)."""
    import json

    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base_name = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))["base_model_name_or_path"]
    base = AutoModelForCausalLM.from_pretrained(base_name, **{k: v for k, v in init_kwargs.items() if v is not None})
    return PeftModel.from_pretrained(base, str(adapter), is_trainable=True)


def load_unsloth(model_args, training_args, max_prompt_length: int):
    """Return (PEFT model, tokenizer, None) loaded through Unsloth."""
    try:
        from unsloth import FastLanguageModel
    except ImportError as error:
        raise ValueError(f"backend unsloth: {error}; install it with pip install -e '.[unsloth]'") from error

    load_kwargs = {
        "model_name": model_args.model_name_or_path,
        "max_seq_length": max_prompt_length + training_args.max_completion_length,
        "dtype": unsloth_dtype(model_args.dtype),
        "load_in_4bit": model_args.load_in_4bit,
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "fast_inference": training_args.use_vllm,
        "max_lora_rank": model_args.lora_r,
        "gpu_memory_utilization": training_args.vllm_gpu_memory_utilization,
        "random_state": training_args.seed,
    }
    if model_args.attn_implementation is not None:  # honoured where Unsloth does not pick the kernel itself
        load_kwargs["attn_implementation"] = model_args.attn_implementation
    placement = distributed.device_map(distributed.launch_env(), "unsloth")
    if placement != "default":  # each rank on its own GPU, not every rank on the first one
        load_kwargs["device_map"] = placement
    policy, tokenizer = FastLanguageModel.from_pretrained(**load_kwargs)
    policy = FastLanguageModel.get_peft_model(
        policy,
        r=model_args.lora_r,
        lora_alpha=model_args.lora_alpha,
        lora_dropout=model_args.lora_dropout,
        target_modules=model_args.lora_target_modules
        or ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        modules_to_save=model_args.lora_modules_to_save,
        use_rslora=model_args.use_rslora,
        use_gradient_checkpointing="unsloth" if training_args.gradient_checkpointing else False,
        random_state=training_args.seed,
    )
    return policy, tokenizer, None


def unsloth_dtype(dtype):
    """ModelConfig's dtype for Unsloth, which takes None (its own choice) or a torch dtype, not "auto"."""
    import torch

    if dtype in (None, "auto"):
        return None
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype in ("float32", "bfloat16", "float16"):
        return getattr(torch, dtype)
    raise ValueError(f"dtype {dtype!r}: expected float32, bfloat16, float16 or auto")


def load(model_args, training_args, max_prompt_length: int, backend: str = "trl"):
    """Unsloth on a GPU when ``backend`` is unsloth; plain transformers otherwise and for CPU runs (the smoke
    config), which Unsloth does not support. ``max_prompt_length`` sizes Unsloth's sequence length."""
    if backend != "unsloth" or training_args.use_cpu:
        logprobs_fallback.install()  # TRL 1.15 (the Unsloth stack) has no log-prob path without Triton
        return load_transformers(model_args, training_args)
    return load_unsloth(model_args, training_args, max_prompt_length)
