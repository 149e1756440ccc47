"""The training loop: what ``python train.py`` runs, from the config to the verified final save.

- ``train.py``: the recipe (data, optional tiny model and format priming, model, rewards, GRPOTrainer, resume)
- ``backend.py``: the ``model_backend`` field (``trl`` or ``unsloth``; Unsloth is imported before trl)
- ``model.py``: model loading by backend
- ``logprobs_fallback.py``: per-token log-probabilities where TRL's fused LM head needs Triton
- ``priming.py``: format priming, a brief supervised pass on gold completions (``python -m <package>.training.priming``)
- ``difficulty.py``: the online difficulty pool
- ``checkpoints.py``: saves a kill cannot leave half-done, resuming from the last complete checkpoint
- ``distributed.py``: what the launch set up, the checks that depend on it, the verified final save
- ``progress.py``: one line per logging step, a Ctrl-C that keeps the work
- ``health.py``: the health monitor (warnings while the run goes, health.json at the end)
- ``tiny.py``: the tiny random-weight model of the smoke runs and tests

Nothing is imported here: train.py imports ``training.backend`` before anything loads trl.
"""
