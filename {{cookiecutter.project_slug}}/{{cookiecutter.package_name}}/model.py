"""Model loading, by the ``model_backend`` config field.

``trl``: plain transformers + PEFT, as TRL's own grpo.py does it: GRPOTrainer loads the policy from its name with
``model_init_kwargs`` (dtype, attention, quantization) and wraps it in the LoRA adapter described by ModelConfig's
``use_peft``/``lora_*`` fields.

``unsloth``: Unsloth's FastLanguageModel loads the model and tokenizer and attaches the LoRA adapter itself (4-bit or
16-bit, vLLM fast inference when ``use_vllm``), so GRPOTrainer gets a ready PEFT model and no ``peft_config``.
Unsloth is GPU-only: with ``use_cpu: true`` (the smoke config) the transformers path is used instead.
"""

from __future__ import annotations

from transformers import AutoTokenizer
from trl import get_peft_config, get_quantization_config


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
    training_args.model_init_kwargs = {**init_kwargs, **(training_args.model_init_kwargs or {})}
    return model_args.model_name_or_path, tokenizer, get_peft_config(model_args)


def load_unsloth(model_args, training_args, max_prompt_length: int):
    """Return (PEFT model, tokenizer, None) loaded through Unsloth."""
    try:
        from unsloth import FastLanguageModel
    except ImportError as error:
        raise ValueError(f"backend unsloth: {error}; install it with pip install -e '.[unsloth]'") from error

    policy, tokenizer = FastLanguageModel.from_pretrained(
        model_name=model_args.model_name_or_path,
        max_seq_length=max_prompt_length + training_args.max_completion_length,
        load_in_4bit=model_args.load_in_4bit,
        fast_inference=training_args.use_vllm,
        max_lora_rank=model_args.lora_r,
        gpu_memory_utilization=training_args.vllm_gpu_memory_utilization,
    )
    policy = FastLanguageModel.get_peft_model(
        policy,
        r=model_args.lora_r,
        lora_alpha=model_args.lora_alpha,
        target_modules=model_args.lora_target_modules
        or ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        use_gradient_checkpointing="unsloth" if training_args.gradient_checkpointing else False,
        random_state=training_args.seed,
    )
    return policy, tokenizer, None


def load(model_args, training_args, max_prompt_length: int, backend: str = "trl"):
    """Unsloth on a GPU when ``backend`` is unsloth; plain transformers otherwise and for CPU runs (the smoke
    config), which Unsloth does not support. ``max_prompt_length`` sizes Unsloth's sequence length."""
    if backend != "unsloth" or training_args.use_cpu:
        return load_transformers(model_args, training_args)
    return load_unsloth(model_args, training_args, max_prompt_length)
