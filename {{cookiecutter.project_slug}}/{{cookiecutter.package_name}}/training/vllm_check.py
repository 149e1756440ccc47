"""The sampler gap of a vLLM run: how far vLLM's log-probabilities of the tokens it sampled are from the trainer's
on the same tokens, measured on the first generation batches (``FIRST_BATCHES``) and written to ``health.json``
under ``sampler_gap``.

TRL computes both when ``vllm_importance_sampling_correction`` is on (``sampling_per_token_logps`` from vLLM,
``old_per_token_logps`` from the trainer's forward pass, before any optimizer step on the batch) and logs the mean
and max of the per-token gap as ``sampling/sampling_logp_difference/*``. This check reads the same two tensors and
adds what TRL does not log: the fraction of sequences whose importance ratio (per sequence, or per token in the
``token_*`` modes) leaves TRL's clip range ``[vllm_importance_sampling_clip_min, ..._clip_max]`` and is therefore
masked or truncated, and of those whose ratio is far from 1 (beyond [1/3, 3]: with TRL's default clip_min None a
ratio near 0 is not masked, yet its sequence barely counts). It prints one line per batch, and a warning with the
likely causes when the gap is large:

* sampling truncation (``top_k``, ``top_p``, ``min_p``): vLLM's log-probs are of the truncated, renormalised
  distribution, the trainer's of the full one;
* dtype: vLLM serving in another precision than the trainer computes in;
* a stale weight sync: vLLM sampling from weights older than the trainer's;
* LoRA dropout: TRL scores the sampled tokens with the policy in train mode, dropout on.

The rank-0 batch is measured (every rank samples from the same synced weights).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch
from transformers import TrainerCallback

from .checkpoints import write_text

FIRST_BATCHES = 3
MEAN_MAX = 0.05  # mean per-token |log-prob gap| above which the gap is called large (bf16 on a GPU: ~1e-3..1e-2)
OUT_OF_RANGE_MAX = 0.1  # fraction of sequences outside the clip range (or far from 1) above which it is large
FAR = 3.0  # a ratio beyond [1/FAR, FAR] (or the clip range's own, if wider) is far from 1: with no clip_min (TRL's
# default) a ratio near 0 is not masked, yet its sequence barely counts


def measure(output: dict, mode: str, clip_min: float | None, clip_max: float | None) -> dict | None:
    """Gap figures of one generation batch from ``_generate_and_score_completions``'s output; None when the
    trainer's log-probs were not computed (importance-sampling correction off)."""
    old, sampled = output.get("old_per_token_logps"), output.get("sampling_per_token_logps")
    if old is None or sampled is None:
        return None
    mask = output["completion_mask"].bool() & ~torch.isnan(sampled)
    diff = torch.nan_to_num((old - sampled).float() * mask, nan=0.0)
    gaps = diff.abs()[mask]
    low = clip_min if clip_min is not None else 0.0
    high = clip_max if clip_max is not None else math.inf
    far = max(high, 1 / low if low > 0 else 0.0, FAR) if math.isfinite(high) else FAR
    if mode.startswith("sequence"):
        ratio = diff.sum(-1).exp()
        outside, beyond = (ratio < low) | (ratio > high), (ratio < 1 / far) | (ratio > far)
    else:  # token modes: a sequence counts when any of its tokens is outside
        ratio = diff.exp()
        outside = (((ratio < low) | (ratio > high)) & mask).any(-1)
        beyond = (((ratio < 1 / far) | (ratio > far)) & mask).any(-1)
    return {
        "tokens": int(gaps.numel()),
        "sequences": int(outside.numel()),
        "gap_mean": float(gaps.mean()) if gaps.numel() else 0.0,
        "gap_max": float(gaps.max()) if gaps.numel() else 0.0,
        "outside_clip": float(outside.float().mean()) if outside.numel() else 0.0,
        "far_from_one": float(beyond.float().mean()) if beyond.numel() else 0.0,
    }


def lora_dropout(model) -> float:
    """The policy's LoRA dropout (0 without an adapter)."""
    configs = getattr(model, "peft_config", None) or {}
    return max((float(getattr(c, "lora_dropout", 0) or 0) for c in configs.values()), default=0.0)


def likely_causes(args, dropout: float = 0.0) -> str:
    """The fixes to try, what this config sets first."""
    causes = []
    if dropout > 0:
        causes.append(f"lora_dropout {dropout:g}: TRL scores the sampled tokens in train mode, so the trainer's "
                      "log-probs carry dropout noise; set lora_dropout: 0 for an exact ratio")
    truncation = [f"{name}={getattr(args, name)}" for name, off in (("top_k", (0, -1, None)), ("top_p", (1.0, None)),
                                                                     ("min_p", (0.0, None)))
                  if getattr(args, name, None) not in off]
    if truncation:
        causes.append(f"sampling truncation ({', '.join(truncation)}): vLLM's log-probs are of the truncated "
                      "distribution, the trainer's of the full one, so the importance ratio is far from 1: unset them")
    causes.append("dtype: serve vLLM in the trainer's precision (dtype, bf16)")
    causes.append("a stale weight sync: vLLM sampling from older weights (check sync_weights in the logs, "
                  "vllm_enable_sleep_mode, DeepSpeed ZeRO-3 gathering)")
    return "; ".join(causes)


class SamplerGapCheck(TrainerCallback):
    """Wraps the trainer's batch generation for the first ``batches`` batches and reports the sampler gap."""

    def __init__(self, trainer, batches: int = FIRST_BATCHES, stream=None):
        self.records: list[dict] = []
        self.batches = batches
        self.stream = stream
        self.warned = False
        self.args = trainer.args
        self.dropout = lora_dropout(trainer.accelerator.unwrap_model(trainer.model))
        self.enabled = trainer.accelerator.is_main_process
        generate = trainer._generate_and_score_completions

        def measured(inputs):
            output = generate(inputs)
            if self.enabled and len(self.records) < self.batches:
                self.record(trainer.state.global_step, output)
            return output

        trainer._generate_and_score_completions = measured

    def record(self, step: int, output: dict) -> None:
        args = self.args
        found = measure(output, args.vllm_importance_sampling_mode, args.vllm_importance_sampling_clip_min,
                        args.vllm_importance_sampling_clip_max)
        if found is None:
            self.records.append({"step": step, "measured": False})
            self.say("vllm sampler gap: not measured (vllm_importance_sampling_correction is off, so the trainer "
                     "does not score vLLM's tokens)")
            self.batches = 0
            return
        self.records.append({"step": step, **found})
        self.say(f"vllm sampler gap at step {step}: per-token |logp vLLM - trainer| mean {found['gap_mean']:.2e}, "
                 f"max {found['gap_max']:.2e} over {found['tokens']} tokens; {found['outside_clip']:.0%} of "
                 f"{found['sequences']} sequences outside the importance-sampling clip range, "
                 f"{found['far_from_one']:.0%} with a ratio far from 1")
        if not self.warned and (found["gap_mean"] > MEAN_MAX
                                or max(found["outside_clip"], found["far_from_one"]) > OUT_OF_RANGE_MAX):
            self.warned = True
            self.say(f"warning: vLLM and the trainer disagree on the sampled tokens (step {step}): the updates are "
                     f"off-policy. Likely causes: {likely_causes(args, self.dropout)}")

    def say(self, line: str) -> None:
        print(line, file=self.stream or sys.stderr, flush=True)

    def summary(self) -> dict:
        measured = [r for r in self.records if r.get("tokens")]
        out = {"batches": self.records, "large": self.warned}
        if measured:
            out.update(gap_mean=sum(r["gap_mean"] for r in measured) / len(measured),
                       gap_max=max(r["gap_max"] for r in measured),
                       outside_clip=sum(r["outside_clip"] for r in measured) / len(measured))
        if self.warned:
            out["fix"] = likely_causes(self.args, self.dropout)
        return out

    def on_train_end(self, args, state, control, **kwargs):
        if not self.enabled or not self.records:
            return
        path = Path(args.output_dir) / "health.json"
        try:  # the health monitor's verdict, written just before (callbacks run in the order added): add a key
            health = json.loads(path.read_text())
        except (OSError, ValueError):
            health = {}
        health["sampler_gap"] = self.summary()
        write_text(path, json.dumps(health, indent=2, allow_nan=False, default=str) + "\n")


def attach(trainer) -> None:
    """Measure the sampler gap of a vLLM run (call after the health monitor is added)."""
    if getattr(trainer.args, "use_vllm", False):
        trainer.add_callback(SamplerGapCheck(trainer))
