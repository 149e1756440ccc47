"""Evaluate a model on the eval split with the training rewards, and compare two evaluations.

    python eval.py --config configs/smoke.yaml --model outputs/smoke               # a full checkpoint
    python eval.py --config configs/24gb.yaml --model Qwen/Qwen2.5-1.5B-Instruct   # the base model, before training
    python eval.py --config configs/24gb.yaml --model outputs/24gb                 # a LoRA adapter dir (peft)
    python eval.py --config configs/24gb.yaml --model BASE --adapter LORA_DIR      # an adapter on a given base
    python eval.py ... --num_samples 8 --pass_k 1 8 --max_rows 200 --output eval_reports/after
    python eval.py --compare eval_reports/before/report.json eval_reports/after/report.json

The eval split is the one training holds out: the config's dataset settings through ``data.load_splits`` (its
test split, else the seeded ``eval_fraction`` hold-out), prompts from ``data.add_prompts`` with the tokenizer's chat
template. Every completion is scored by every reward in ``REWARD_FUNCS``, the same verifiers training uses.

Metrics (report.json ``metrics``):

* ``accuracy``: fraction of completions whose ``correctness`` is exactly 1.0 (for code: every test passed);
* ``pass@k``: the unbiased estimator of Chen et al. (2021) from ``n = num_samples`` completions per prompt,
  averaged over prompts, for each requested k <= n (``pass@1`` equals ``accuracy`` up to unscored rows);
* ``format_compliance``: fraction of completions with ``format_strict`` == 1.0;
* ``mean_completion_tokens``: completion length in tokens, the ending EOS included (as TRL counts it);
* ``truncation_rate``: fraction that hit ``max_completion_length`` without an EOS (TRL's ``clipped_ratio``);
* ``reward``: the weighted training reward (the config's ``reward_funcs`` x ``reward_weights``);
* ``rewards/<name>/mean``: each reward's mean over the completions it scored (``None`` = not applicable).

Generation uses vLLM when it is installed and the config sets ``use_vllm``, else batched transformers ``generate``
(left padding). Sampling uses the config's temperature/top_p/top_k/min_p/repetition_penalty; with
``--num_samples 1`` (the default) decoding is greedy. Results: ``report.json``, ``report.md`` and ``samples.jsonl``
(every completion with its scores) in ``--output``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field, fields
from importlib.util import find_spec
from pathlib import Path

from . import DEFAULT_CONFIG, data, task
from .rewards import REWARD_FUNCS, build_reward

ROOT = Path(__file__).resolve().parent.parent
TASK = task.NAME
HEADLINE = ["accuracy", "format_compliance", "mean_completion_tokens", "truncation_rate", "reward"]
RATE_METRICS = {"accuracy", "format_compliance", "truncation_rate"}


class EvalError(ValueError):
    """Bad evaluation input; its message is one line that says what to fix."""


# ------------------------------------------------------------------------------------------------- settings


@dataclass
class Settings:
    """What one evaluation run uses: the config's values with the command line's overrides."""

    config: str
    model: str
    adapter: str | None
    num_samples: int = 1
    pass_k: list[int] = field(default_factory=list)
    max_rows: int | None = None
    batch_size: int = 8
    backend: str = "auto"
    cfg: dict = field(default_factory=dict)

    def get(self, key: str, default=None):
        value = self.cfg.get(key)
        return default if value is None else value


def read_config(path: str, overrides: list[str] | tuple[str, ...] = ()) -> dict:
    """The config's settings exactly as train.py sees them: the same TrlParser, dataclasses and defaults."""
    import torch
    import yaml

    from . import config as project_config

    if not Path(path).is_file():
        raise EvalError(f"config file {path!r} does not exist")
    argv = ["--config", path, *overrides]
    if not torch.cuda.is_available():
        argv += ["--use_cpu", "true"]  # bf16 presets construct on a machine without a GPU (eval runs on CPU there)
    try:
        parsed = project_config.parse_args(argv)
    except yaml.YAMLError as error:
        raise EvalError(f"config {path!r} is not valid YAML: {str(error).splitlines()[0]}") from error
    except (ValueError, TypeError) as error:
        raise EvalError(f"config {path!r}: {str(error).strip().splitlines()[0]}") from error
    script_args, training_args, model_args, task_args = parsed
    return {**training_args.to_dict(), **vars(model_args), **vars(task_args), **vars(script_args)}


def default_config() -> str | None:
    """The GPU preset this project was generated for, if it exists."""
    return DEFAULT_CONFIG if Path(DEFAULT_CONFIG).is_file() else None


LOCAL_ROOTS = {"outputs", "eval_reports", "checkpoints", "runs"}  # "outputs/run" is never meant as a hub id


def looks_like_path(name: str) -> bool:
    """Whether a model argument is meant as a local path (a hub id is ``name`` or ``org/name``)."""
    if name.startswith((".", "/", "~")) or "\\" in name or name.count("/") > 1:
        return True
    first = name.split("/", 1)[0]
    return "/" in name and (first in LOCAL_ROOTS or Path(first).is_dir())


def check_model_path(name: str, what: str = "model") -> None:
    """Refuse a local path that does not exist before anything asks the hub for it."""
    if os.path.exists(os.path.expanduser(name)):
        return
    if looks_like_path(name):
        raise EvalError(f"{what} path {name!r} does not exist")
    if what == "adapter":
        raise EvalError(f"adapter {name!r} is not a directory (a peft LoRA dir with adapter_config.json)")


def resolve_model(model: str, adapter: str | None) -> tuple[str, str | None]:
    """(base model, adapter dir or None); a model dir that holds only an adapter is split into both."""
    check_model_path(model)
    if adapter is not None:
        check_model_path(adapter, "adapter")
        if not (Path(adapter) / "adapter_config.json").is_file():
            raise EvalError(f"adapter {adapter!r} has no adapter_config.json (not a peft LoRA dir)")
        return model, adapter
    path = Path(model)
    if (path / "adapter_config.json").is_file() and not (path / "config.json").is_file():
        try:
            base = json.loads((path / "adapter_config.json").read_text(encoding="utf-8"))["base_model_name_or_path"]
        except (OSError, ValueError, KeyError) as error:
            raise EvalError(f"{path / 'adapter_config.json'} names no base_model_name_or_path") from error
        if not base:
            raise EvalError(f"{path / 'adapter_config.json'} names no base model; pass it as --model with --adapter")
        return base, model
    if path.is_dir() and not (path / "config.json").is_file():
        raise EvalError(f"model dir {model!r} has neither config.json nor adapter_config.json (train it first?)")
    return model, None


# ----------------------------------------------------------------------------------------------------- data


def eval_rows(settings: Settings, tokenizer) -> list[dict]:
    """The eval split in the row contract, each row with its conversational ``prompt``, at most ``max_rows``."""
    seed = int(settings.get("seed", 42))
    _, split = data.load_splits(
        settings.get("dataset_name", ""),
        settings.get("dataset_config"),
        settings.get("dataset_train_split", "train"),
        settings.get("dataset_test_split", "test"),
        eval_fraction=float(settings.get("eval_fraction", 0.1)),
        seed=seed,
    )
    if settings.max_rows is not None:
        split = split.select(range(min(settings.max_rows, len(split))))
    splits = data.add_prompts(
        {"eval": split},
        tokenizer,
        max_prompt_length=int(settings.get("max_prompt_length", 512)),
        system_prompt=settings.get("system_prompt"),
        chat_template_kwargs=chat_template_kwargs(settings),
        log=lambda line: print(line, file=sys.stderr),
    )
    return splits["eval"].to_list()


def chat_template_kwargs(settings: Settings) -> dict:
    value = settings.get("chat_template_kwargs", {})
    return json.loads(value) if isinstance(value, str) else dict(value)


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
        "temperature": float(settings.get("temperature", 1.0)),
        "top_p": float(settings.get("top_p", 1.0)),
        "top_k": int(settings.get("top_k", 0)),
        "repetition_penalty": float(settings.get("repetition_penalty", 1.0)),
    }
    if settings.get("min_p") is not None:
        out["min_p"] = float(settings.get("min_p"))
    return out


def device_and_dtype(settings: Settings):
    import torch

    if torch.cuda.is_available() and not settings.get("use_cpu", False):
        name = str(settings.get("dtype", "auto"))
        dtype = "auto" if name == "auto" else getattr(torch, name)
        return "cuda", dtype
    return "cpu", torch.float32  # half precision on CPU is slow and not what the smoke model was trained in


def load_tokenizer(base: str, adapter: str | None, settings: Settings):
    from transformers import AutoTokenizer

    trust = bool(settings.get("trust_remote_code", False))
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
            revision=settings.get("model_revision", "main"),
            trust_remote_code=bool(settings.get("trust_remote_code", False)),
            attn_implementation=settings.get("attn_implementation"),
        )
    except (OSError, ValueError) as error:
        raise EvalError(f"cannot load model {base!r}: {str(error).strip().splitlines()[0]}") from error
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    return model.to(device).eval()


def generate_transformers(settings: Settings, base: str, adapter: str | None, tokenizer, prompts: list) -> list:
    """Completions per prompt (``num_samples`` each) from batched ``generate`` with left padding."""
    import torch
    from transformers import set_seed

    model = load_model(base, adapter, settings)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    stop = eos_ids(model, tokenizer)
    max_len = int(settings.get("max_completion_length", 256))
    set_seed(int(settings.get("seed", 42)))
    all_ids = prompt_ids(tokenizer, prompts, chat_template_kwargs(settings))
    kwargs = {
        **sampling(settings),
        "max_new_tokens": max_len,
        "num_return_sequences": settings.num_samples,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": stop,
    }
    out: list[list[Sample]] = []
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
    return out


def generate_vllm(settings: Settings, base: str, adapter: str | None, tokenizer, prompts: list) -> list:
    """Completions per prompt from vLLM (offline ``LLM``), the adapter applied as a LoRA request."""
    from vllm import LLM, SamplingParams

    max_len = int(settings.get("max_completion_length", 256))
    llm_kwargs = {
        "model": base,
        "tokenizer": adapter if adapter and (Path(adapter) / "tokenizer_config.json").is_file() else base,
        "dtype": str(settings.get("dtype", "auto")),
        "gpu_memory_utilization": float(settings.get("vllm_gpu_memory_utilization", 0.9)),
        "max_model_len": int(
            settings.get("vllm_max_model_length", int(settings.get("max_prompt_length", 512)) + max_len)
        ),
        "tensor_parallel_size": int(settings.get("vllm_tensor_parallel_size", 1)),
        "seed": int(settings.get("seed", 42)),
        "trust_remote_code": bool(settings.get("trust_remote_code", False)),
    }
    lora = None
    if adapter is not None:
        from vllm.lora.request import LoRARequest

        rank = json.loads((Path(adapter) / "adapter_config.json").read_text(encoding="utf-8")).get("r", 16)
        llm_kwargs.update(enable_lora=True, max_lora_rank=int(rank))
        lora = LoRARequest("adapter", 1, str(Path(adapter).resolve()))
    llm = LLM(**llm_kwargs)
    params = sampling(settings)
    greedy = not params.pop("do_sample")
    if greedy:
        params = {"temperature": 0.0}
    else:
        params["top_k"] = params["top_k"] or -1  # vLLM's "no top-k" is -1 (0 in older versions)
    sampling_params = SamplingParams(n=settings.num_samples, max_tokens=max_len, seed=llm_kwargs["seed"], **params)
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
    return "vllm" if settings.get("use_vllm", False) and find_spec("vllm") is not None else "transformers"


# -------------------------------------------------------------------------------------------------- scoring


def score_samples(
    rows: list[dict], samples: list[list[Sample]], max_completion_length: int = 256
) -> dict[str, list[float | None]]:
    """Every registered reward on every completion (flattened prompt-major), with the rows' columns as TRL passes
    them: one element per completion, completions in conversational form, ``completion_ids`` for ``length``."""
    flat_rows = [row for row, group in zip(rows, samples, strict=True) for _ in group]
    flat = [s for group in samples for s in group]
    columns = {key: [row.get(key) for row in flat_rows] for key in (flat_rows[0] if flat_rows else {})}
    columns.pop("prompt", None)
    completions = [[{"role": "assistant", "content": s.text}] for s in flat]
    prompts = [row["prompt"] for row in flat_rows]
    scores: dict[str, list[float | None]] = {}
    for name in REWARD_FUNCS:
        func = build_reward(name, max_completion_length)
        values = func(prompts=prompts, completions=completions, completion_ids=[s.ids for s in flat], **columns)
        scores[name] = [None if v is None else float(v) for v in values]
    return scores


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(settings: Settings, samples: list[list[Sample]], scores: dict[str, list[float | None]]) -> dict:
    """The report's metrics from the completions and their scores."""
    flat = [s for group in samples for s in group]
    metrics: dict[str, float | None] = {}
    correct = scores.get("correctness", [])
    scored = [v for v in correct if v is not None]
    metrics["accuracy"] = mean([1.0 if v == 1.0 else 0.0 for v in scored])
    position = 0
    per_prompt: list[tuple[int, int]] = []
    for group in samples:
        values = [v for v in correct[position : position + len(group)] if v is not None]
        position += len(group)
        if values:
            per_prompt.append((len(values), sum(1 for v in values if v == 1.0)))
    for k in settings.pass_k:
        usable = [pass_at_k(n, c, k) for n, c in per_prompt if n >= k]
        metrics[f"pass@{k}"] = mean(usable)
    strict = [v for v in scores.get("format_strict", []) if v is not None]
    metrics["format_compliance"] = mean([1.0 if v == 1.0 else 0.0 for v in strict])
    metrics["mean_completion_tokens"] = mean([float(len(s.ids)) for s in flat])
    metrics["truncation_rate"] = mean([1.0 if s.truncated else 0.0 for s in flat])
    names = list(settings.get("reward_funcs", ["correctness", "format"]))
    weights = settings.get("reward_weights") or [1.0] * len(names)
    totals = []
    for i in range(len(flat)):  # TRL's total: the weighted sum, a None (not applicable) counting as nothing
        parts = [(scores[n][i], w) for n, w in zip(names, weights, strict=False) if n in scores]
        totals.append(sum(w * v for v, w in parts if v is not None))
    metrics["reward"] = mean(totals)
    for name, values in scores.items():
        metrics[f"rewards/{name}/mean"] = mean([v for v in values if v is not None])
    metrics["unscored_correctness"] = float(len(correct) - len(scored))
    return metrics


# -------------------------------------------------------------------------------------------------- reports


def fmt(value, metric: str = "") -> str:
    if value is None:
        return "n/a"
    if metric == "mean_completion_tokens":
        return f"{value:.1f}"
    if metric == "unscored_correctness":
        return f"{value:.0f}"
    return f"{value:.4f}"


def ordered_metrics(names) -> list[str]:
    names = list(dict.fromkeys(names))
    passes = sorted((n for n in names if n.startswith("pass@")), key=lambda n: int(n[5:]))
    head = [n for n in HEADLINE[:1] if n in names] + passes + [n for n in HEADLINE[1:] if n in names]
    return head + [n for n in names if n not in head]


def render_markdown(report: dict) -> str:
    s = report["settings"]
    model = report["model"] + (f" + adapter {report['adapter']}" if report.get("adapter") else "")
    decoding = "greedy" if s["num_samples"] == 1 else f"temperature {s['temperature']}"
    lines = [
        f"# Evaluation: {model}",
        "",
        f"Task **{report['task']}**, dataset `{s['dataset']}` (eval split, {report['rows']} prompts), "
        f"{s['num_samples']} sample(s) per prompt ({decoding}), "
        f"max {s['max_completion_length']} completion tokens, backend {s['backend']}, config `{report['config']}`, "
        f"{report['seconds']:.0f} s.",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    for name in ordered_metrics(report["metrics"]):
        lines.append(f"| {name} | {fmt(report['metrics'][name], name)} |")
    lines += ["", "Every completion with its scores: `samples.jsonl`.", ""]
    return "\n".join(lines)


def write_reports(out_dir: Path, report: dict, rows: list[dict], samples, scores) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out_dir / "report.md").write_text(render_markdown(report), encoding="utf-8")
    with (out_dir / "samples.jsonl").open("w", encoding="utf-8") as handle:
        position = 0
        for row, group in zip(rows, samples, strict=True):
            for sample in group:
                record = {
                    "prompt": row["prompt"][-1]["content"],
                    "completion": sample.text,
                    "tokens": len(sample.ids),
                    "truncated": sample.truncated,
                    "scores": {name: values[position] for name, values in scores.items()},
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                position += 1


def load_report(path: str) -> dict:
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise EvalError(f"report {path!r} does not exist") from error
    except (OSError, ValueError) as error:
        raise EvalError(f"report {path!r} is not readable JSON: {str(error).splitlines()[0]}") from error
    if not isinstance(report, dict) or not isinstance(report.get("metrics"), dict):
        raise EvalError(f"report {path!r} has no metrics (is it a report.json from eval.py?)")
    return report


def label(report: dict) -> str:
    return str(report.get("adapter") or report.get("model") or "?")


def compare(before: dict, after: dict) -> str:
    """A Markdown table of the two reports' metrics with after - before deltas, and notes on unequal settings."""
    lines = [
        "| metric | before | after | delta |",
        "|---|---|---|---|",
    ]
    for name in ordered_metrics([*before["metrics"], *after["metrics"]]):
        a, b = before["metrics"].get(name), after["metrics"].get(name)
        delta = "n/a" if a is None or b is None else ("+" if b - a >= 0 else "-") + fmt(abs(b - a), name)
        lines.append(f"| {name} | {fmt(a, name)} | {fmt(b, name)} | {delta} |")
    lines += ["", f"before: {label(before)}", f"after: {label(after)}"]
    for key in ("dataset", "num_samples", "temperature", "max_completion_length"):
        x, y = (r.get("settings", {}).get(key, "?") for r in (before, after))
        if x != y:
            x, y = ("greedy" if v is None else v for v in (x, y))
            lines.append(f"note: {key} differs ({x} vs {y}); the numbers are not directly comparable")
    if before.get("rows") != after.get("rows"):
        lines.append(f"note: rows differ ({before.get('rows')} vs {after.get('rows')} prompts)")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------ run


def default_output(model: str, adapter: str | None) -> Path:
    parts = [p for p in Path(adapter or model).parts if p not in (".", "..", "/")][-2:]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(parts)).strip("-") or "model"
    return Path("eval_reports") / name


def configure_rewards(settings: Settings) -> None:
    """The task's own settings train.py applies (e.g. the code sandbox)."""
    names = {f.name for f in fields(task.TaskArguments)}
    task.setup(task.TaskArguments(**{key: value for key, value in settings.cfg.items() if key in names}))


def evaluate(settings: Settings, out_dir: Path) -> dict:
    """Generate, score, summarize and write the reports; returns the report."""
    started = time.time()
    base, adapter = resolve_model(settings.model, settings.adapter)
    backend = pick_backend(settings)
    configure_rewards(settings)
    tokenizer = load_tokenizer(base, adapter, settings)
    rows = eval_rows(settings, tokenizer)
    generate = generate_vllm if backend == "vllm" else generate_transformers
    samples = generate(settings, base, adapter, tokenizer, [row["prompt"] for row in rows])
    scores = score_samples(rows, samples, int(settings.get("max_completion_length", 256)))
    report = {
        "model": base,
        "adapter": adapter,
        "config": settings.config,
        "task": TASK,
        "rows": len(rows),
        "completions": sum(len(g) for g in samples),
        "settings": {
            "dataset": settings.get("dataset_name", ""),
            "num_samples": settings.num_samples,
            "pass_k": settings.pass_k,
            "temperature": None if settings.num_samples == 1 else float(settings.get("temperature", 1.0)),
            "max_completion_length": int(settings.get("max_completion_length", 256)),
            "max_prompt_length": int(settings.get("max_prompt_length", 512)),
            "backend": backend,
            "seed": int(settings.get("seed", 42)),
            "reward_funcs": list(settings.get("reward_funcs", [])),
            "reward_weights": settings.get("reward_weights"),
        },
        "metrics": summarize(settings, samples, scores),
        "seconds": round(time.time() - started, 2),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_reports(out_dir, report, rows, samples, scores)
    return report


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints usage + message; one line is enough
        self.exit(2, f"error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="eval.py", description="Evaluate a model on the eval split with the training rewards."
    )
    parser.add_argument("--config", help="the training config (default: the project's GPU preset)")
    parser.add_argument("--model", help="model dir, hub id or LoRA adapter dir (default: the config's model)")
    parser.add_argument("--adapter", help="a LoRA adapter dir (peft) to apply to --model")
    parser.add_argument("--num_samples", type=int, default=1, help="completions per prompt (1 = greedy)")
    parser.add_argument("--pass_k", type=int, nargs="+", help="k values for pass@k (default: 1 and num_samples)")
    parser.add_argument("--max_rows", type=int, help="evaluate only the first N eval prompts")
    parser.add_argument("--batch_size", type=int, default=8, help="prompts per generate call (transformers)")
    parser.add_argument("--backend", choices=["auto", "transformers", "vllm"], default="auto")
    parser.add_argument("--temperature", type=float, help="override the config's sampling temperature")
    parser.add_argument("--max_completion_length", type=int, help="override the config's completion limit")
    parser.add_argument("--output", help="report directory (default: eval_reports/<model name>)")
    parser.add_argument(
        "--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print a before/after table of two report.json"
    )
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    config = args.config or default_config()
    if config is None:
        raise EvalError("no config: pass --config configs/<preset>.yaml")
    overrides = []
    if args.temperature is not None:
        overrides += ["--temperature", str(args.temperature)]
    if args.max_completion_length is not None:
        overrides += ["--max_completion_length", str(args.max_completion_length)]
    cfg = read_config(config, overrides)
    model = args.model or cfg.get("model_name_or_path")
    if not model:
        raise EvalError(f"no model: pass --model (config {config!r} has no model_name_or_path)")
    model = os.path.expanduser(model)
    adapter = os.path.expanduser(args.adapter) if args.adapter else None
    if args.num_samples < 1:
        raise EvalError(f"--num_samples must be at least 1, got {args.num_samples}")
    if args.max_rows is not None and args.max_rows < 1:
        raise EvalError(f"--max_rows must be at least 1, got {args.max_rows}")
    if args.batch_size < 1:
        raise EvalError(f"--batch_size must be at least 1, got {args.batch_size}")
    ks = sorted(set(args.pass_k or [1, args.num_samples]))
    bad = [k for k in ks if not 1 <= k <= args.num_samples]
    if bad:
        raise EvalError(f"--pass_k {bad}: each k must be in [1, num_samples={args.num_samples}]")
    return Settings(
        config=config, model=model, adapter=adapter, num_samples=args.num_samples, pass_k=ks,
        max_rows=args.max_rows, batch_size=args.batch_size, backend=args.backend, cfg=cfg,
    )


def user_errors() -> tuple[type[BaseException], ...]:
    return (EvalError, data.DataError, FileNotFoundError, *task.ERRORS)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.compare:
            before, after = (load_report(path) for path in args.compare)
            print(compare(before, after))
            return 0
        settings = settings_from_args(args)
        out_dir = Path(args.output) if args.output else default_output(settings.model, settings.adapter)
        report = evaluate(settings, out_dir)
    except user_errors() as error:
        text = str(error).strip()
        print(f"error: {text.splitlines()[0] if text else type(error).__name__}", file=sys.stderr)
        return 1
    print(render_markdown(report))
    print(f"reports written to {out_dir}/report.json and {out_dir}/report.md", file=sys.stderr)
    return 0
