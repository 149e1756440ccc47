"""Evaluation: a model on the eval split, scored with the training rewards (``python eval.py``).

- ``evaluate.py``: the command and the evaluation API, one import away
- ``options.py``: the settings (the config parsed as train.py parses it, model and adapter, command line)
- ``generation.py``: completions per prompt from vLLM or batched transformers ``generate``
- ``metrics.py``: every reward on every completion; accuracy, pass@k, format compliance, length, truncation
- ``report.py``: report.json, report.md, samples.jsonl, and the before/after comparison

Nothing is imported here; ``evaluation.evaluate`` is the entry point.
"""
