"""Evaluation metrics: every reward on every completion; accuracy, pass@k, format compliance, length, truncation."""

from __future__ import annotations

import math

from ..rewards.common import RewardFunc
from .generation import Sample
from .options import Settings

HEADLINE = ["accuracy", "format_compliance", "mean_completion_tokens", "truncation_rate", "reward"]
RATE_METRICS = {"accuracy", "format_compliance", "truncation_rate"}


# -------------------------------------------------------------------------------------------------- scoring


def score_samples(
    rows: list[dict], samples: list[list[Sample]], rewards: dict[str, RewardFunc]
) -> dict[str, list[float | None]]:
    """Every reward (name -> the reward built for this run) on every completion (flattened prompt-major), with the
    rows' columns as TRL passes them: one element per completion, completions in conversational form,
    ``completion_ids`` for ``length``."""
    flat_rows = [row for row, group in zip(rows, samples, strict=True) for _ in group]
    flat = [s for group in samples for s in group]
    columns = {key: [row.get(key) for row in flat_rows] for key in (flat_rows[0] if flat_rows else {})}
    columns.pop("prompt", None)
    completions = [[{"role": "assistant", "content": s.text}] for s in flat]
    prompts = [row["prompt"] for row in flat_rows]
    scores: dict[str, list[float | None]] = {}
    for name, func in rewards.items():
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
    names = list(settings.get("reward_funcs"))
    weights = settings.get("reward_weights")
    totals = []
    for i in range(len(flat)):  # TRL's total: the weighted sum, a None (not applicable) counting as nothing
        parts = [(scores[n][i], w) for n, w in zip(names, weights, strict=False) if n in scores]
        totals.append(sum(w * v for v, w in parts if v is not None))
    metrics["reward"] = mean(totals)
    for name, values in scores.items():
        metrics[f"rewards/{name}/mean"] = mean([v for v in values if v is not None])
    metrics["unscored_correctness"] = float(len(correct) - len(scored))
    return metrics
