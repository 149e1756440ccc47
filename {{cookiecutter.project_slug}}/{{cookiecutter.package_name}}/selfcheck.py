"""Quick self-check, stdlib + PyYAML only (it runs in cookiecutter's interpreter right after generation).

    python -m <package>.selfcheck

1. every .py file of the project compiles;
2. every config in ``configs/`` is sane: the generation batch (per-device batch x processes x accumulation) is
   divisible by ``num_generations``, lengths are positive, every reward name exists and has one weight;
3. the verifier audit (``audit.py``) on the shipped sample data: the gold answer of every row scores 1.0 on
   ``correctness`` and the task's known-wrong completions derived from it score less (rates within the defaults).

Exit status 0 when every step passed; each failure prints the step and why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import ROOT, audit, task
from .rewards import RewardSettings, build_reward
from .rules import check_config
from .settings import ConfigError, read_yaml

SAMPLE = ROOT / "data" / "sample.jsonl"
SKIP_DIRS = {".venv", ".smoke", "outputs", "__pycache__", ".git"}


def compile_all(root: Path = ROOT) -> list[str]:
    """Compile (in memory, writing no .pyc) every project .py file; return one line per file that fails."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        if SKIP_DIRS.intersection(path.relative_to(root).parts):
            continue
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
        except (SyntaxError, ValueError, UnicodeDecodeError) as error:
            problems.append(f"{path.relative_to(root)}: {error}")
    return problems


def check_configs(root: Path = ROOT) -> list[str]:
    problems = []
    paths = sorted((root / "configs").glob("*.yaml"))
    if not paths:
        return ["no configs/*.yaml found"]
    for path in paths:
        try:
            config = read_yaml(path)  # PyYAML: installed with the project and with cookiecutter itself
        except ConfigError as error:
            problems.append(str(error))
            continue
        problems.extend(f"{path.name}: {line}" for line in check_config(config))
    return problems


def load_sample(path: Path = SAMPLE) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def reward_selfcheck(rows: list[dict]) -> tuple[list[str], int]:
    """Score each row's gold completion; return (problems, rows not checked because a verifier is missing)."""
    completions = [task.gold_completion(row) for row in rows]
    columns = {key: [row.get(key) for row in rows] for key in {k for row in rows for k in row}}
    correctness = build_reward("correctness", RewardSettings())  # the task's default settings
    scores = correctness(prompts=[row.get("question") for row in rows], completions=completions, **columns)
    problems = []
    unchecked = 0
    for index, score in enumerate(scores):
        if score is None:
            unchecked += 1
        elif score != 1.0:
            problems.append(f"row {index} of {SAMPLE.name}: gold answer scored {score} on correctness, not 1.0")
    return problems, unchecked


def main() -> int:
    failed = False

    def report(step: str, problems: list[str], ok: str) -> None:
        nonlocal failed
        if problems:
            failed = True
            print(f"[FAIL] {step}:")
            for line in problems:
                print(f"       {line}")
        else:
            print(f"[ok]   {step}: {ok}")

    report("compile", compile_all(), "every .py file compiles")
    report("configs", check_configs(), "every config meets the batch rule and names known rewards")
    result = reward_audit(load_sample())
    if not result["gold_checked"] and not result["wrong_checked"]:
        print(f"[skip] verifier audit: the verifier is not importable in {sys.executable}; "
              f"after `pip install -e .[dev]` run `python -m {__package__}.selfcheck`")
    else:
        problem = audit.check(result)
        lines = audit.report(result, SAMPLE.name)
        report("verifier audit", [problem, *lines[1:]] if problem else [],
               f"{result['gold_checked']}/{result['gold_checked']} gold answers score 1.0, "
               f"{result['false_positives']}/{result['wrong_checked']} known-wrong completions credited")
    return 1 if failed else 0


def reward_audit(rows: list[dict]) -> dict:
    """The verifier audit (audit.py) of ``correctness`` with the task's default settings on ``rows``."""
    correctness = build_reward("correctness", RewardSettings())
    try:
        return audit.run(audit.sample(rows, None), correctness)
    finally:
        if hasattr(correctness, "close"):
            correctness.close()


if __name__ == "__main__":
    sys.exit(main())
