"""Evaluate a model on the eval split with the training rewards; compare two evaluations.

    python eval.py --config configs/smoke.yaml --model outputs/smoke --output eval_reports/after
    python eval.py --config configs/24gb.yaml --model Qwen/Qwen2.5-1.5B-Instruct --output eval_reports/before
    python eval.py --config configs/24gb.yaml --model BASE --adapter outputs/24gb --num_samples 8 --pass_k 1 8
    python eval.py --compare eval_reports/before/report.json eval_reports/after/report.json

Writes report.json, report.md and samples.jsonl; see ``<package>/evaluation/`` for the metrics.
"""

import importlib

PACKAGE = "{{ cookiecutter.package_name }}"

if __name__ == "__main__":
    importlib.import_module(f"{PACKAGE}.commands").evaluate()
