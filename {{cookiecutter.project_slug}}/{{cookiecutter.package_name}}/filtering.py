"""Offline pass-rate filtering: keep the training prompts the base model solves sometimes, but not always.

    python filter.py --config configs/24gb.yaml --samples 8                     # keep 0.1 <= pass rate <= 0.9
    python filter.py --config configs/24gb.yaml --samples 16 --low 0.05 --high 0.8 --output data/mid.jsonl

A group of GRPO completions that all score the same (all right or all wrong) has zero advantage and teaches
nothing. This command samples ``--samples`` completions per training prompt with the model (the config's
``model_name_or_path``, or ``--model``), scores each with the training ``correctness`` reward, and writes the rows
whose pass rate (fraction of completions with correctness 1.0) lies in ``[low, high]`` to a JSONL file: the
original row columns plus ``pass_rate``, ready to use as ``dataset_name:`` in a config.

The prompts are the training split exactly as train.py builds it (the config's dataset, seed, ``eval_fraction``
hold-out and ``max_prompt_length``); eval rows are never sampled. Generation reuses eval.py's generators (vLLM when
installed and ``use_vllm`` is set, else batched transformers ``generate``) with the config's sampling settings.

Resume: every finished prompt is appended to ``<output>.cache.jsonl``, keyed by a hash of the row and of the
generation settings; a rerun (after an interruption, or with another ``--low``/``--high``) samples only the prompts
not in it. Also written: ``<output>.report.json`` (counts per bucket, histogram) and ``<output>.hist.png``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from .evaluation import evaluate
from .files import atomic_file, write_text
from .rewards import RewardFunc, build_reward, reward_names

PASS = 1.0  # a completion passes when its correctness is 1.0 (for code: every test passed), as eval.py counts it


class FilterError(ValueError):
    """Bad filtering input; its message is one line that says what to fix."""


# --------------------------------------------------------------------------------------------------- scoring


def row_columns(row: dict) -> dict:
    """The row as it goes into the output: its dataset columns, without the chat ``prompt`` train.py adds."""
    return {k: v for k, v in row.items() if k != "prompt"}


def row_key(row: dict, fingerprint: str) -> str:
    """A stable id for a row under given generation settings (sha256 of both, canonical JSON)."""
    text = json.dumps([fingerprint, row_columns(row)], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def score_groups(rows: list[dict], samples: list[list], correctness: RewardFunc) -> list[dict]:
    """Score every completion with the run's ``correctness`` reward (dataset columns passed as TRL passes them)
    and summarise each prompt: pass rate over the scored completions (None when none was scorable)."""
    flat_rows = [row for row, group in zip(rows, samples, strict=True) for _ in group]
    flat = [s for group in samples for s in group]
    if not flat:
        return []
    columns = {key: [row.get(key) for row in flat_rows] for key in flat_rows[0] if key != "prompt"}
    values = correctness(
        prompts=[row["prompt"] for row in flat_rows],
        completions=[[{"role": "assistant", "content": s.text}] for s in flat],
        completion_ids=[s.ids for s in flat],
        **columns,
    )
    out, position = [], 0
    for group in samples:
        scores = [None if v is None else float(v) for v in values[position : position + len(group)]]
        position += len(group)
        scored = [v for v in scores if v is not None]
        passed = sum(1 for v in scored if v >= PASS)
        out.append({
            "pass_rate": passed / len(scored) if scored else None,
            "passed": passed,
            "scored": len(scored),
            "scores": scores,
            "tokens": [len(s.ids) for s in group],
            "truncated": sum(1 for s in group if s.truncated),
        })
    return out


def bucket(rate: float | None, low: float, high: float) -> str:
    """The report bucket of a pass rate: kept, or why not."""
    if rate is None:
        return "unscored"
    if keep(rate, low, high):
        return "kept"
    if rate <= 0.0:
        return "all wrong (0)"
    if rate >= 1.0:
        return "all right (1)"
    return "below low" if rate < low else "above high"


BUCKETS = ["all wrong (0)", "below low", "kept", "above high", "all right (1)", "unscored"]


def keep(rate: float | None, low: float, high: float) -> bool:
    return rate is not None and low <= rate <= high


# ------------------------------------------------------------------------------------------------------ cache


def read_cache(path: Path) -> dict[str, dict]:
    """Finished prompts by key; a line cut short by an interruption is ignored (that prompt is sampled again)."""
    done: dict[str, dict] = {}
    if not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            done[record["key"]] = record
    return done


def append_cache(path: Path, records: list[dict]) -> None:
    """Append whole lines and sync them to disk, so an interruption loses at most the batch in flight."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":  # a line cut short by a kill: end it so the next line stays parseable
                handle.write(b"\n")
        for record in records:
            handle.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


# ----------------------------------------------------------------------------------------------------- report


def summarize(results: list[dict], samples: int, low: float, high: float) -> dict:
    """Counts per bucket and the histogram of pass rates (one bin per possible value j / samples)."""
    counts = dict.fromkeys(BUCKETS, 0)
    histogram = dict.fromkeys((f"{j}/{samples}" for j in range(samples + 1)), 0)
    for result in results:
        counts[bucket(result["pass_rate"], low, high)] += 1
        if result["pass_rate"] is not None and result["scored"] == samples:
            histogram[f"{result['passed']}/{samples}"] += 1
    rates = [r["pass_rate"] for r in results if r["pass_rate"] is not None]
    return {
        "prompts": len(results),
        "kept": counts["kept"],
        "buckets": counts,
        "histogram": histogram,
        "mean_pass_rate": sum(rates) / len(rates) if rates else None,
    }


def plot_histogram(path: Path, results: list[dict], low: float, high: float, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = [r["pass_rate"] for r in results if r["pass_rate"] is not None]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(rates, bins=[i / 20 for i in range(21)], color="#4c72b0", edgecolor="white")
    ax.axvspan(low, high, color="#55a868", alpha=0.15, label=f"kept [{low:g}, {high:g}]")
    ax.set_xlim(0, 1)
    ax.set_xlabel("pass rate (correctness 1.0)")
    ax.set_ylabel("prompts")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper center")
    fig.tight_layout()
    with atomic_file(path, "wb") as handle:
        fig.savefig(handle, dpi=100, format="png")
    plt.close(fig)


# -------------------------------------------------------------------------------------------------------- run


def output_paths(output: Path) -> dict[str, Path]:
    stem = output.with_suffix("")
    return {
        "data": output,
        "cache": Path(f"{stem}.cache.jsonl"),
        "report": Path(f"{stem}.report.json"),
        "plot": Path(f"{stem}.hist.png"),
    }


def fingerprint(settings: evaluate.Settings, base: str, adapter: str | None, backend: str) -> str:
    """What the samples depend on; a cached prompt is reused only under the same values."""
    keys = ["temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_completion_length",
            "system_prompt", "chat_template_kwargs", "seed"]
    values = {k: settings.get(k) for k in keys}
    values.update(model=base, adapter=adapter, samples=settings.num_samples, backend=backend)
    return json.dumps(values, sort_keys=True, default=str)


def train_rows(settings: evaluate.Settings, tokenizer) -> list[dict]:
    """The training split as train.py builds it, each row with its chat ``prompt``."""
    return evaluate.split_rows(settings, tokenizer, "train")


def build_tiny_if_asked(settings: evaluate.Settings, model: str) -> None:
    """The smoke configs build their tiny model on first use; do the same here (train.py's step)."""
    if settings.get("build_tiny_model") and not (Path(model) / "config.json").is_file():
        from .training import tiny

        tiny.build_tiny_model(model, settings.get("dataset_name") or "", system_prompt=settings.get("system_prompt"))


def sample_pending(
    settings, base, adapter, backend, tokenizer, pending, key_of, cache_path, correctness, log=print
) -> None:
    """Generate and score the pending prompts batch by batch, appending each batch to the cache."""
    if not pending:
        return
    if backend == "vllm":
        engine = evaluate.vllm_engine(settings, base, adapter)
        generate = evaluate.generate_vllm
    else:
        engine = evaluate.load_model(base, adapter, settings)
        generate = evaluate.generate_transformers
    started, total = time.time(), len(pending)
    for start in range(0, total, settings.batch_size):
        batch = pending[start : start + settings.batch_size]
        samples = generate(settings, base, adapter, tokenizer, [row["prompt"] for row in batch], engine=engine)
        results = score_groups(batch, samples, correctness)
        append_cache(cache_path, [{"key": key_of(row), **result} for row, result in zip(batch, results, strict=True)])
        done = start + len(batch)
        elapsed = time.time() - started
        eta = elapsed / done * (total - done)
        log(f"filter: {done}/{total} prompts sampled ({len(batch)} x {settings.num_samples} completions in the last "
            f"batch), {elapsed:.0f} s elapsed, ETA {eta:.0f} s")


def plan(rows: list[dict], key_of, cache: dict) -> tuple[list[dict], int, int]:
    """(the rows to sample, how many distinct rows the cache holds, how many rows repeat an earlier one): a
    duplicated row is sampled, or read from the cache, once."""
    pending, seen, cached = [], set(), 0
    for row in rows:
        key = key_of(row)
        if key in seen:
            continue
        seen.add(key)
        if key in cache:
            cached += 1
        else:
            pending.append(row)
    return pending, cached, len(rows) - len(seen)


def run(args: argparse.Namespace, log=print) -> dict:
    """Sample what the cache lacks, then write the filtered dataset and the reports; returns the summary."""
    settings = settings_from_args(args)
    paths = output_paths(Path(args.output) if args.output else default_output(settings.config))
    model = settings.model
    build_tiny_if_asked(settings, model)
    base, adapter = evaluate.resolve_model(model, settings.adapter, settings.model_field)
    backend = evaluate.pick_backend(settings)
    correctness = build_reward("correctness", evaluate.reward_settings(settings))  # as train.py builds it
    tokenizer = evaluate.load_tokenizer(base, adapter, settings)
    rows = train_rows(settings, tokenizer)
    if args.max_prompts is not None:
        rows = rows[: args.max_prompts]
    fp = fingerprint(settings, base, adapter, backend)

    def key_of(row: dict) -> str:
        return row_key(row, fp)

    pending, cached, duplicates = plan(rows, key_of, read_cache(paths["cache"]))
    log(f"filter: {len(rows)} training prompts ({duplicates} duplicates of another), {cached} from the cache "
        f"{paths['cache']}, {len(pending)} to sample with {settings.num_samples} completions each ({backend})")
    sample_pending(settings, base, adapter, backend, tokenizer, pending, key_of, paths["cache"], correctness, log)

    cache = read_cache(paths["cache"])
    results = [cache[key_of(row)] for row in rows]
    kept = [(row, r) for row, r in zip(rows, results, strict=True) if keep(r["pass_rate"], args.low, args.high)]
    with atomic_file(paths["data"]) as handle:  # never a half-written dataset under the final name
        for row, result in kept:
            record = {**row_columns(row), "pass_rate": result["pass_rate"]}
            handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")

    summary = {
        **summarize(results, settings.num_samples, args.low, args.high),
        "low": args.low,
        "high": args.high,
        "samples": settings.num_samples,
        "sampled_now": len(pending),
        "from_cache": cached,
        "duplicates": duplicates,
        "model": base,
        "adapter": adapter,
        "backend": backend,
        "config": settings.config,
        "dataset": settings.get("dataset_name") or "",
        "output": str(paths["data"]),
        "dataset_settings": [k for k in ("dataset_config", "dataset_train_split", "dataset_test_split")
                             if settings.get(k) not in (None, "train", "test")],
        "cache": str(paths["cache"]),
    }
    write_text(paths["report"], json.dumps(summary, indent=2) + "\n")
    title = f"{Path(settings.config).name}: {summary['prompts']} prompts x {settings.num_samples} samples"
    plot_histogram(paths["plot"], results, args.low, args.high, title)
    summary["report"], summary["plot"] = str(paths["report"]), str(paths["plot"])
    return summary


def default_output(config: str) -> Path:
    return Path("data") / f"filtered-{Path(config).stem}.jsonl"


def settings_from_args(args: argparse.Namespace) -> evaluate.Settings:
    if not (0.0 <= args.low <= 1.0 and 0.0 <= args.high <= 1.0):
        raise FilterError(f"--low and --high must be in [0, 1], got {args.low} and {args.high}")
    if args.low > args.high:
        raise FilterError(f"--low ({args.low}) is above --high ({args.high}); nothing could be kept")
    if args.samples < 2:
        raise FilterError(f"--samples must be at least 2 (one sample gives a pass rate of 0 or 1), got {args.samples}")
    if args.batch_size < 1:
        raise FilterError(f"--batch_size must be at least 1, got {args.batch_size}")
    if args.max_prompts is not None and args.max_prompts < 1:
        raise FilterError(f"--max_prompts must be at least 1, got {args.max_prompts}")
    config = args.config or evaluate.default_config()
    if config is None:
        raise FilterError("no config: pass --config configs/<preset>.yaml")
    cfg = evaluate.read_config(config)
    if args.temperature is not None:
        cfg["temperature"] = args.temperature
    if "correctness" not in reward_names():
        raise FilterError("the reward registry has no 'correctness' reward to score pass rates with")
    model = os.path.expanduser(args.model or cfg.get("model_name_or_path") or "")
    if not model:
        raise FilterError(f"no model: pass --model (config {config!r} has no model_name_or_path)")
    if not (cfg.get("build_tiny_model") and model == cfg.get("model_name_or_path")):
        evaluate.check_model_path(model)
    return evaluate.Settings(
        config=config, model=model, adapter=os.path.expanduser(args.adapter) if args.adapter else None,
        num_samples=args.samples, batch_size=args.batch_size, backend=args.backend, cfg=cfg,
        model_field=evaluate.model_field(args.model, config),
    )


def build_parser() -> argparse.ArgumentParser:
    parser = evaluate.OneLineParser(
        allow_abbrev=False,
        description="Keep the training prompts whose pass rate lies in [low, high].",
    )
    parser.add_argument("--config", help="the training config (default: the project's GPU preset)")
    parser.add_argument("--samples", type=int, default=8, help="completions per prompt (default 8)")
    parser.add_argument("--low", type=float, default=0.1, help="lowest pass rate kept (default 0.1)")
    parser.add_argument("--high", type=float, default=0.9, help="highest pass rate kept (default 0.9)")
    parser.add_argument("--output", help="filtered JSONL (default: data/filtered-<config name>.jsonl)")
    parser.add_argument("--model", help="model to sample with (default: the config's model_name_or_path)")
    parser.add_argument("--adapter", help="a LoRA adapter dir (peft) to apply to --model")
    parser.add_argument("--batch_size", type=int, default=8, help="prompts per generation call (default 8)")
    parser.add_argument("--max_prompts", type=int, help="only the first N training prompts")
    parser.add_argument("--temperature", type=float, help="override the config's sampling temperature")
    parser.add_argument("--backend", choices=["auto", "transformers", "vllm"], default="auto")
    return parser


def nothing_kept_because(buckets: dict[str, int]) -> str:
    """Why no prompt was kept, from the pass-rate buckets, and what to do."""
    scored = {name: count for name, count in buckets.items() if count and name != "unscored"}
    if list(scored) == ["all wrong (0)"]:
        return ("the model answered every prompt wrong: it cannot do this task yet (an untrained model, such as the "
                "smoke config's tiny one before priming, answers nothing); sample the model you will train, after "
                "format priming if you use it (--model outputs/<run>/format-primed), or a stronger one")
    if list(scored) == ["all right (1)"]:
        return "the model answered every prompt right: these prompts teach it nothing; use harder data"
    return "widen --low/--high or sample with a stronger model"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    errors = (FilterError, *evaluate.user_errors())
    try:
        summary = run(args, log=lambda line: print(line, file=sys.stderr, flush=True))
    except errors as error:
        text = str(error).strip()
        print(f"error: {text.splitlines()[0] if text else type(error).__name__}", file=sys.stderr)
        return 1
    buckets = ", ".join(f"{name}: {count}" for name, count in summary["buckets"].items())
    print(f"{summary['prompts']} prompts ({summary['from_cache']} from the cache), pass rate buckets: {buckets}")
    print(f"kept {summary['kept']} prompts with {args.low:g} <= pass rate <= {args.high:g} -> {summary['output']}")
    print(f"report: {summary['report']}, histogram: {summary['plot']}")
    if summary["kept"] == 0:
        print(f"warning: no prompt was kept; {nothing_kept_because(summary['buckets'])}", file=sys.stderr)
        return 0
    print("to train on them, put this line in your config (the eval split is then held out from this file):")
    print(f"dataset_name: {summary['output']}")
    if summary["dataset_settings"]:
        print(f"and remove {', '.join(summary['dataset_settings'])} (a local JSONL has one split, 'train')")
    return 0
