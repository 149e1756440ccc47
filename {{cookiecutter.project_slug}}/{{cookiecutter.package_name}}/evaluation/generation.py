"""Evaluation generation: completions per prompt from vLLM or batched transformers ``generate``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from .options import EvalError, Settings, chat_template_kwargs

# ----------------------------------------------------------------------------------------------- generation


@dataclass
class Sample:
    """One completion: its text, its token ids (through the first EOS, which is kept) and whether it was cut."""

    text: str
    ids: list[int]
    truncated: bool


def eos_ids(model, tokenizer) -> list[int]:
    """Every id that ends a completion: the generation config's eos ids and the tokenizer's (as TRL does)."""
    ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = [] if ids is None else [ids] if isinstance(ids, int) else list(ids)
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.insert(0, tokenizer.eos_token_id)
    return ids


def prompt_ids(tokenizer, prompts: list, template_kwargs: dict) -> list[list[int]]:
    """Token ids of each chat prompt with the generation prompt appended, tokenized as TRL tokenizes them."""
    out = []
    for prompt in prompts:
        encoded = tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, tokenize=True, return_dict=True, **template_kwargs
        )
        out.append(list(encoded["input_ids"]))
    return out


def cut_at_eos(ids: list[int], stop: set[int], max_len: int) -> tuple[list[int], bool]:
    """Ids through the first stop id (kept), and whether the completion was truncated (no stop within max_len)."""
    for i, token in enumerate(ids):
        if token in stop:
            return ids[: i + 1], False
    return ids[:max_len], len(ids) >= max_len


def sampling(settings: Settings) -> dict:
    """The config's sampling settings (TRL's defaults where unset); greedy when one sample per prompt."""
    if settings.num_samples == 1:
        return {"do_sample": False}
    out = {
        "do_sample": True,
        "temperature": float(settings.get("temperature")),
        "top_p": float(settings.get("top_p")),
        "top_k": int(settings.get("top_k")),
        "repetition_penalty": float(settings.get("repetition_penalty")),
    }
    if settings.get("min_p") is not None:
        out["min_p"] = float(settings.get("min_p"))
    return out


def device_and_dtype(settings: Settings):
    import torch

    if torch.cuda.is_available() and not settings.get("use_cpu"):
        name = str(settings.get("dtype"))
        dtype = "auto" if name == "auto" else getattr(torch, name)
        return "cuda", dtype
    return "cpu", torch.float32  # half precision on CPU is slow and not what the smoke model was trained in


def load_tokenizer(base: str, adapter: str | None, settings: Settings):
    from transformers import AutoTokenizer

    trust = bool(settings.get("trust_remote_code"))
    last: BaseException | None = None
    for source in (adapter, base):
        if not source:
            continue
        if source == adapter and not (Path(adapter) / "tokenizer_config.json").is_file():
            continue
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust)
        except (OSError, ValueError) as error:
            last = error
            continue
        if not getattr(tokenizer, "chat_template", None):
            raise EvalError(f"the tokenizer of {source!r} has no chat template; evaluate an instruct/chat model")
        return tokenizer
    raise EvalError(f"cannot load a tokenizer from {base!r}: {str(last).strip().splitlines()[0]}")


def load_model(base: str, adapter: str | None, settings: Settings):
    from transformers import AutoModelForCausalLM

    device, dtype = device_and_dtype(settings)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            base,
            dtype=dtype,
            revision=settings.get("model_revision"),
            trust_remote_code=bool(settings.get("trust_remote_code")),
            attn_implementation=settings.get("attn_implementation"),
        )
    except (OSError, ValueError) as error:
        raise EvalError(f"cannot load model {base!r}: {str(error).strip().splitlines()[0]}") from error
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    return model.to(device).eval()


def generate_transformers(
    settings: Settings, base: str, adapter: str | None, tokenizer, prompts: list, engine=None, progress=None
) -> list:
    """Completions per prompt (``num_samples`` each) from batched ``generate`` with left padding; ``engine`` is a
    model already loaded by ``load_model`` (loaded here when None); ``progress(line)`` hears of every batch."""
    import torch
    from transformers import set_seed

    model = engine if engine is not None else load_model(base, adapter, settings)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    stop = eos_ids(model, tokenizer)
    max_len = int(settings.get("max_completion_length"))
    set_seed(int(settings.get("seed")))
    all_ids = prompt_ids(tokenizer, prompts, chat_template_kwargs(settings))
    kwargs = {
        **sampling(settings),
        "max_new_tokens": max_len,
        "num_return_sequences": settings.num_samples,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": stop,
    }
    out: list[list[Sample]] = []
    started = time.monotonic()
    for start in range(0, len(all_ids), settings.batch_size):
        batch = all_ids[start : start + settings.batch_size]
        width = max(len(ids) for ids in batch)
        input_ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(ids)) + ids for ids in batch])
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in batch])
        with torch.no_grad():
            generated = model.generate(
                input_ids=input_ids.to(model.device), attention_mask=mask.to(model.device), **kwargs
            )
        completions = generated[:, width:].tolist()
        for i in range(len(batch)):
            group = []
            for ids in completions[i * settings.num_samples : (i + 1) * settings.num_samples]:
                ids, truncated = cut_at_eos(ids, set(stop), max_len)
                group.append(Sample(tokenizer.decode(ids, skip_special_tokens=True), ids, truncated))
            out.append(group)
        if progress is not None:
            elapsed = time.monotonic() - started
            progress(f"{len(out)}/{len(all_ids)} prompts x {settings.num_samples} samples, {elapsed:.0f} s, "
                     f"ETA {elapsed / len(out) * (len(all_ids) - len(out)):.0f} s")
    return out


def max_model_length(settings: Settings) -> int:
    """vLLM's context for evaluation: the config's ``vllm_max_model_length``, else prompt + completion (vLLM would
    size its KV cache for the model's whole context, and eval runs nothing longer)."""
    length = settings.get("vllm_max_model_length")
    if length is None:
        length = int(settings.get("max_prompt_length")) + int(settings.get("max_completion_length"))
    return int(length)


def vllm_engine(settings: Settings, base: str, adapter: str | None) -> tuple:
    """An offline vLLM ``LLM`` for the model and the LoRA request of the adapter (None without one)."""
    from vllm import LLM

    llm_kwargs = {
        "model": base,
        "tokenizer": adapter if adapter and (Path(adapter) / "tokenizer_config.json").is_file() else base,
        "dtype": str(settings.get("dtype")),
        "gpu_memory_utilization": float(settings.get("vllm_gpu_memory_utilization")),
        "max_model_len": max_model_length(settings),
        "tensor_parallel_size": int(settings.get("vllm_tensor_parallel_size")),
        "seed": int(settings.get("seed")),
        "trust_remote_code": bool(settings.get("trust_remote_code")),
    }
    lora = None
    if adapter is not None:
        from vllm.lora.request import LoRARequest

        rank = json.loads((Path(adapter) / "adapter_config.json").read_text(encoding="utf-8")).get("r", 16)
        llm_kwargs.update(enable_lora=True, max_lora_rank=int(rank))
        lora = LoRARequest("adapter", 1, str(Path(adapter).resolve()))
    return LLM(**llm_kwargs), lora


def generate_vllm(settings: Settings, base: str, adapter: str | None, tokenizer, prompts: list, engine=None) -> list:
    """Completions per prompt from vLLM, the adapter applied as a LoRA request; ``engine`` is ``vllm_engine``'s
    (llm, lora) pair (built here when None)."""
    from vllm import SamplingParams

    llm, lora = engine if engine is not None else vllm_engine(settings, base, adapter)
    max_len = int(settings.get("max_completion_length"))
    params = sampling(settings)
    greedy = not params.pop("do_sample")
    if greedy:
        params = {"temperature": 0.0}
    else:
        params["top_k"] = params["top_k"] or -1  # vLLM's "no top-k" is -1 (0 in older versions)
    sampling_params = SamplingParams(
        n=settings.num_samples, max_tokens=max_len, seed=int(settings.get("seed")), **params
    )
    requests = [{"prompt_token_ids": ids} for ids in prompt_ids(tokenizer, prompts, chat_template_kwargs(settings))]
    results = llm.generate(requests, sampling_params, lora_request=lora, use_tqdm=False)
    stop = set(eos_ids(None, tokenizer))
    out = []
    for result in results:
        group = []
        for completion in result.outputs:
            ids = list(completion.token_ids)
            truncated = completion.finish_reason == "length"
            text_ids = ids[:-1] if ids and ids[-1] in stop else ids
            group.append(Sample(tokenizer.decode(text_ids, skip_special_tokens=True), ids, truncated))
        out.append(group)
    return out


def pick_backend(settings: Settings) -> str:
    if settings.backend != "auto":
        if settings.backend == "vllm" and find_spec("vllm") is None:
            raise EvalError("--backend vllm: vllm is not installed (pip install -e '.[gpu]')")
        return settings.backend
    return "vllm" if settings.get("use_vllm") and find_spec("vllm") is not None else "transformers"
