"""Per-token log-probabilities in plain PyTorch, for TRL releases whose fused LM head needs Triton.

GRPOTrainer computes the policy's per-token log-probabilities through TRL's fused LM head
(``trl.trainer.utils.add_fused_lm_head``). TRL 1.16 folds the tiles in PyTorch when Triton is missing; TRL 1.15
(the Unsloth backend's pin) has only the Triton kernel and leaves ``_ChunkedLogProbFunction`` at ``None`` on a
machine without Triton, so training on CPU fails. :func:`install` fills that slot with :class:`TorchLogProbs`,
which computes the same outputs from the full ``[tokens, vocab]`` logits (fine for the small CPU runs; a GPU
run has Triton and keeps TRL's kernel). It changes nothing when TRL has its own function.
"""

from __future__ import annotations

import torch

OUTPUTS = ("log_probs", "entropy", "log_sum_sq_probs", "mean_logits", "is_top1")


class TorchLogProbs:
    """Same call and results as TRL's ``ChunkedLogProbFunction.apply``; autograd differentiates it directly."""

    @staticmethod
    def apply(
        hidden: torch.Tensor,  # [N, H]
        weight: torch.Tensor,  # [V, H]
        bias: torch.Tensor | None,
        targets: torch.Tensor,  # [N]
        temperature: float,
        chunk_size: int,  # TRL's tile width; unused, the logits are computed whole
        final_logit_softcapping: float | None = None,
        logit_scale: float = 1.0,
        outputs: tuple[str, ...] = OUTPUTS[1:],
    ) -> tuple[torch.Tensor | None, ...]:
        device = hidden.device.type
        dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else hidden.dtype
        with torch.autocast(device, enabled=False):
            logits = torch.nn.functional.linear(
                hidden.to(dtype), weight.to(dtype), None if bias is None else bias.to(dtype)
            ).float()
            logits = logits * logit_scale
            if final_logit_softcapping is not None:
                logits = final_logit_softcapping * torch.tanh(logits / final_logit_softcapping)
            logits = logits / temperature
            log_probs_all = torch.log_softmax(logits, dim=-1)
            log_probs = log_probs_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            entropy = None
            if "entropy" in outputs:
                entropy = -(log_probs_all.exp() * log_probs_all).sum(-1)
            with torch.no_grad():  # TRL marks these three non-differentiable
                log_sum_sq = torch.logsumexp(2 * log_probs_all, -1) if "log_sum_sq_probs" in outputs else None
                mean_logits = logits.mean(-1) if "mean_logits" in outputs else None
                is_top1 = logits.argmax(-1) == targets if "is_top1" in outputs else None
        return log_probs, entropy, log_sum_sq, mean_logits, is_top1


def install() -> bool:
    """Put :class:`TorchLogProbs` in TRL's slot when TRL has no log-prob function here; True when it did."""
    from trl.trainer import utils

    if getattr(utils, "_ChunkedLogProbFunction", TorchLogProbs) is not None:
        return False
    utils._ChunkedLogProbFunction = TorchLogProbs
    return True
