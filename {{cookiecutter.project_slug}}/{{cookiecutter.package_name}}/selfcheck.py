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

from . import audit, task
from .rewards import RewardSettings, build_reward, check_reward_config

ROOT = Path(__file__).resolve().parent.parent
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


POSITIVE_INTS = ("max_completion_length", "max_prompt_length", "per_device_train_batch_size",
                 "gradient_accumulation_steps", "num_processes", "eval_num_samples")
POSITIVE_NUMBERS = ("learning_rate", "temperature", "format_priming_lr")


def _number(value: object) -> float | None:
    """A setting's numeric value: a number, or text a number parses from (YAML reads ``1e-5`` as text; the config
    parser converts it); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    try:
        return float(value) if isinstance(value, str) else None
    except ValueError:
        return None


def check_values(config: dict) -> list[str]:
    """Problems with the settings a config gives (each checked only when present), one line each, starting with
    the key: sizes that must be positive, rates in range, and the reward names and weights."""
    problems = []
    for key in (k for k in POSITIVE_INTS if k in config):
        value = _number(config[key])
        if value is None or value != int(value) or value <= 0:
            problems.append(f"{key}: {config[key]!r} must be a positive integer")
    for key in (k for k in POSITIVE_NUMBERS if k in config):
        value = _number(config[key])
        if value is None or not value > 0:
            problems.append(f"{key}: {config[key]!r} must be a positive number")
    generations = _number(config.get("num_generations", 2))
    if generations is None or generations < 2:
        problems.append(f"num_generations: {config['num_generations']!r} must be at least 2 (GRPO compares a group)")
    steps = _number(config.get("format_priming_steps", 0))
    if steps is None or steps < 0:
        problems.append(f"format_priming_steps: {config['format_priming_steps']!r} must be 0 (none) or more")
    threads = _number(config.get("cpu_threads", 0))
    if threads is None or threads != int(threads) or threads < 0:
        problems.append(f"cpu_threads: {config['cpu_threads']!r} must be 0 (torch's default) or a positive integer")
    fraction = _number(config.get("eval_fraction", 0.5))
    if fraction is None or not 0 < fraction < 1:
        problems.append(f"eval_fraction: {config['eval_fraction']!r} must be between 0 and 1 (e.g. 0.1)")
    names, weights = config.get("reward_funcs"), config.get("reward_weights")
    if isinstance(names, str):
        problems.append(f"reward_funcs: {names!r} must be a list of reward names (write reward_funcs: [{names}])")
    elif weights is not None and not (isinstance(weights, list) and all(_number(w) is not None for w in weights)):
        problems.append(f"reward_weights: {weights!r} must be a list of numbers, one per reward_funcs entry")
    elif "reward_funcs" in config or "reward_weights" in config:
        problems.extend(check_reward_config(names or [], weights))
    return problems


def check_config(config: dict) -> list[str]:
    """Problems with one parsed config, one line each: the values (``check_values``), the lengths every config
    needs, and the batch rule."""
    problems = check_values(config)
    for key in ("max_completion_length", "max_prompt_length"):
        if key not in config:
            problems.append(f"{key} is not set")
    if any(line.startswith(("per_device_train_batch_size", "gradient_accumulation_steps", "num_processes",
                            "num_generations")) for line in problems):
        return problems
    try:
        per_device = int(config.get("per_device_train_batch_size", 8))
        accumulation = int(config.get("gradient_accumulation_steps", 1))
        processes = int(config.get("num_processes", 1))
        generations = int(config.get("num_generations", 8))
        steps_per_generation = int(config.get("steps_per_generation") or accumulation)
    except (TypeError, ValueError) as error:
        return [*problems, f"a batch setting is not an integer: {error}"]
    batch = int(config.get("generation_batch_size") or per_device * processes * steps_per_generation)
    if generations < 2:
        problems.append(f"num_generations={generations}: GRPO needs at least 2")
    elif batch % generations:
        problems.append(
            f"generation batch {batch} (= {per_device} per device x {processes} processes x {steps_per_generation} "
            f"steps) is not divisible by num_generations={generations}"
        )
    return problems


def check_configs(root: Path = ROOT) -> list[str]:
    import yaml  # PyYAML: installed with the project and with cookiecutter itself

    problems = []
    paths = sorted((root / "configs").glob("*.yaml"))
    if not paths:
        return ["no configs/*.yaml found"]
    for path in paths:
        try:
            config = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            problems.append(f"{path.name}: not valid YAML: {str(error).splitlines()[0]}")
            continue
        problems.extend(f"{path.name}: {line}" for line in check_config(config or {}))
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
