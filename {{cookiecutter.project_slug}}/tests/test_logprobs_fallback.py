"""The plain-PyTorch log-prob function matches a direct computation and TRL's own, values and gradients."""

import pytest
import torch
from _pkg import mod

fallback = mod("training.logprobs_fallback")
OUTPUTS = ("log_probs", "entropy", "log_sum_sq_probs", "mean_logits", "is_top1")


def inputs(seed=0, tokens=7, hidden=16, vocab=50):
    generator = torch.Generator().manual_seed(seed)
    h = torch.randn(tokens, hidden, generator=generator, requires_grad=True)
    w = torch.randn(vocab, hidden, generator=generator, requires_grad=True)
    b = torch.randn(vocab, generator=generator, requires_grad=True)
    targets = torch.randint(0, vocab, (tokens,), generator=generator)
    return h, w, b, targets


@pytest.mark.parametrize("softcap,scale,temperature", [(None, 1.0, 1.0), (3.0, 0.5, 0.7)])
def test_matches_direct_computation(softcap, scale, temperature):
    h, w, b, targets = inputs()
    got = fallback.TorchLogProbs.apply(h, w, b, targets, temperature, 8, softcap, scale, OUTPUTS)
    logits = (h @ w.T + b) * scale
    if softcap is not None:
        logits = softcap * torch.tanh(logits / softcap)
    logp = torch.log_softmax(logits / temperature, -1)
    torch.testing.assert_close(got[0], logp.gather(-1, targets[:, None]).squeeze(-1))
    torch.testing.assert_close(got[1], -(logp.exp() * logp).sum(-1))
    torch.testing.assert_close(got[2], torch.log((logp.exp() ** 2).sum(-1)))
    torch.testing.assert_close(got[3], (logits / temperature).mean(-1))
    assert torch.equal(got[4], logp.argmax(-1) == targets)
    (grad_h,) = torch.autograd.grad(got[0].sum() + got[1].sum(), h)
    (expected,) = torch.autograd.grad(
        logp.gather(-1, targets[:, None]).sum() - (logp.exp() * logp).sum(), h)
    torch.testing.assert_close(grad_h, expected)


def test_matches_trl_where_trl_has_its_own():
    from trl.trainer import utils

    trl_function = getattr(utils, "_ChunkedLogProbFunction", None)
    h, w, b, targets = inputs(seed=3)
    ours = fallback.TorchLogProbs.apply(h, w, b, targets, 0.9, 8, None, 1.0, ("entropy",))
    assert ours[2] is None and ours[3] is None and ours[4] is None  # only what was asked for
    if trl_function is None:  # a TRL whose only kernel is Triton (1.15 on CPU): install fills the slot
        assert fallback.install() is True and utils._ChunkedLogProbFunction is fallback.TorchLogProbs
        return
    assert fallback.install() is False and utils._ChunkedLogProbFunction is trl_function  # left alone
    theirs = trl_function.apply(h, w, b, targets, 0.9, 8, None, 1.0, ("entropy",))
    torch.testing.assert_close(ours[0], theirs[0])
    torch.testing.assert_close(ours[1], theirs[1])
    ours_grad = torch.autograd.grad(ours[0].sum() + ours[1].sum(), (h, w, b))
    theirs_grad = torch.autograd.grad(theirs[0].sum() + theirs[1].sum(), (h, w, b))
    for mine, reference in zip(ours_grad, theirs_grad, strict=True):
        torch.testing.assert_close(mine, reference)
