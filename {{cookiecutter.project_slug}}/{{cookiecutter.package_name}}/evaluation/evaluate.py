"""Evaluate a model on the eval split with the training rewards, and compare two evaluations.

    python eval.py --config configs/smoke.yaml --model outputs/smoke               # a full checkpoint
    python eval.py --config configs/24gb.yaml --model outputs/24gb                 # a LoRA adapter dir (peft)
    python eval.py --compare eval_reports/before/report.json eval_reports/after/report.json

The run: settings (``options``), generation (``generation``), metrics (``metrics``) and reports (``report``), the
modules beside this one; the metrics are described in ``docs/evaluation.md``.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import fields
from pathlib import Path

from .. import data, hub, task
from ..rewards import RewardSettings, build_reward, reward_names
from ..settings import setting, use_cpu_threads
from .generation import (  # noqa: F401  (the evaluation API, one import away)
    Sample,
    cut_at_eos,
    generate_transformers,
    generate_vllm,
    load_model,
    load_tokenizer,
    pick_backend,
    sampling,
    vllm_engine,
)
from .metrics import HEADLINE, RATE_METRICS, pass_at_k, score_samples, summarize  # noqa: F401
from .options import (  # noqa: F401
    EvalError,
    OneLineParser,
    Settings,
    build_parser,
    chat_template_kwargs,
    check_model_path,
    default_config,
    eval_rows,
    model_field,
    read_config,
    resolve_model,
    settings_from_args,
    split_rows,
)
from .report import compare, load_report, render_markdown, write_reports  # noqa: F401

TASK = task.NAME


# ------------------------------------------------------------------------------------------------------ run


def default_output(model: str, adapter: str | None) -> Path:
    parts = [p for p in Path(adapter or model).parts if p not in (".", "..", "/")][-2:]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(parts)).strip("-") or "model"
    return Path("eval_reports") / name


def reward_settings(settings: Settings) -> RewardSettings:
    """What the rewards are bound to, from the same config train.py reads (e.g. the code sandbox's settings)."""
    names = {f.name for f in fields(task.TaskArguments)}
    task_args = task.TaskArguments(**{key: value for key, value in settings.cfg.items() if key in names})
    return RewardSettings(int(settings.cfg["max_completion_length"]), task_args)


def evaluate(settings: Settings, out_dir: Path) -> dict:
    """Generate, score, summarize and write the reports; returns the report."""
    started = time.time()
    use_cpu_threads(setting(settings, "cpu_threads"))
    base, adapter = resolve_model(settings.model, settings.adapter, settings.model_field)
    backend = pick_backend(settings)
    rewards = {name: build_reward(name, reward_settings(settings)) for name in reward_names()}
    tokenizer = load_tokenizer(base, adapter, settings)
    rows = eval_rows(settings, tokenizer)
    prompts = [row["prompt"] for row in rows]
    print(f"eval: generating {len(prompts)} prompts x {settings.num_samples} samples ({backend})", file=sys.stderr,
          flush=True)
    if backend == "vllm":  # one batch: vLLM schedules every request itself
        samples = generate_vllm(settings, base, adapter, tokenizer, prompts)
    else:
        samples = generate_transformers(settings, base, adapter, tokenizer, prompts,
                                        progress=lambda line: print(f"eval: {line}", file=sys.stderr, flush=True))
    scores = score_samples(rows, samples, rewards)
    report = {
        "model": base,
        "adapter": adapter,
        "config": settings.config,
        "task": TASK,
        "rows": len(rows),
        "completions": sum(len(g) for g in samples),
        "settings": {
            "dataset": settings.get("dataset_name") or "",
            "num_samples": settings.num_samples,
            "pass_k": settings.pass_k,
            "temperature": None if settings.num_samples == 1 else float(settings.get("temperature")),
            "max_completion_length": int(settings.cfg["max_completion_length"]),
            "max_prompt_length": int(settings.get("max_prompt_length")),
            "backend": backend,
            "seed": int(setting(settings, "seed")),
            "reward_funcs": list(settings.get("reward_funcs")),
            "reward_weights": settings.get("reward_weights"),
        },
        "metrics": summarize(settings, samples, scores),
        "seconds": round(time.time() - started, 2),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_reports(out_dir, report, rows, samples, scores)
    return report


def user_errors() -> tuple[type[BaseException], ...]:
    return (EvalError, data.DataError, hub.HubError, FileNotFoundError, *task.ERRORS)


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
