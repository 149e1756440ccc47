"""Evaluation reports: report.json, report.md, samples.jsonl, and the before/after comparison."""

from __future__ import annotations

import json
from pathlib import Path

from ..files import atomic_file, write_text
from .metrics import HEADLINE
from .options import EvalError

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
    write_text(out_dir / "report.json", json.dumps(report, indent=2) + "\n")
    write_text(out_dir / "report.md", render_markdown(report))
    with atomic_file(out_dir / "samples.jsonl") as handle:
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
