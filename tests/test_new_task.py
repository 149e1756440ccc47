"""A new task is one new folder plus its name in cookiecutter.json: add a throwaway task to a copy of the template,
bake it with nothing else edited, and run the generated project's own tests."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

TASK = "reverse"
PKG = "{{cookiecutter.package_name}}"

FILES = {
    f"{PKG}/task.py": '''"""Reverse a word: a minimal task (``question`` = the word, ``answer`` = it reversed)."""

from __future__ import annotations

from dataclasses import dataclass

from .answer_format import FORMAT
from .contract import TEXT, Column, required

NAME = "reverse"
INSTRUCTION = "Reverse the word letter by letter; give only the reversed word in the answer block."
SYSTEM_PROMPT = FORMAT.system_prompt(INSTRUCTION)
COLUMNS = {"question": Column(TEXT, "the word"), "answer": Column(TEXT, "the word reversed")}
REQUIRED_COLUMNS = required(COLUMNS)
ERRORS: tuple[type[BaseException], ...] = ()


@dataclass
class TaskArguments:
    """No settings of its own."""


def normalize(row: dict) -> dict:
    return row


def from_hub_row(row: dict) -> dict:
    return {"question": row["question"], "answer": row["answer"]}


def user_message(row: dict) -> str:
    return str(row["question"]).strip()


def gold_completion(row: dict) -> str:
    return f"<reasoning>\\nRead it backwards.\\n</reasoning>\\n<answer>\\n{row['answer']}\\n</answer>"


def untagged_completion(row: dict) -> str:
    return f"Read it backwards: {row['answer']}"


def generate_curriculum(n: int, seed: int = 0, part: str = "train") -> list[dict]:
    """Easy rows for the smoke curriculum: three-letter words; priming, training and test words disjoint."""
    import itertools
    import random

    words = ["".join(w) for w in itertools.product("abcde", repeat=3)]
    chosen = [w for i, w in enumerate(words) if i % 6 in {"priming": (0, 3), "train": (1, 2, 4), "test": (5,)}[part]]
    rng = random.Random(seed)
    picked = [rng.choice(chosen) for _ in range(n)]
    return [{"question": f"Reverse: {w}", "answer": w[::-1]} for w in picked]
''',
    f"{PKG}/rewards/task.py": '''"""Rewards of the reverse task."""

from __future__ import annotations

from typing import Any

from ..answer_format import extract_answer
from .common import column, completion_texts, register


@register("correctness")
def correctness_reward(
    prompts: object = None, completions: object = None, answer: object = None, **kwargs: Any
) -> list[float | None]:
    """1.0 when the answer block holds the gold reversed word, else 0.0; None without a gold answer."""
    texts = completion_texts(completions)
    golds = column(answer, len(texts))
    return [
        None if gold is None else float((extract_answer(text) or "").strip() == str(gold))
        for text, gold in zip(texts, golds, strict=True)
    ]

''',
    f"{PKG}/audit_cases.py": '''"""The reverse task's hack catalogue: wrong completions derived from a row."""

from __future__ import annotations

from .task import gold_completion


def wrong_completions(row: dict) -> list[tuple[str, str]] | None:
    """(family, completion) pairs, each a wrong answer to ``row``; None for a row without a gold answer."""
    gold = str(row.get("answer") or "")
    if len(gold) < 2:
        return None
    head, _, _ = gold_completion(row).rpartition("<answer>")
    wrong = gold[1:] + gold[0]  # rotated: the right letters in a wrong order
    if wrong == gold or gold[::-1] == gold:  # "aa", "level": no wrong order of these letters to derive
        return None
    return [
        ("not reversed", f"{head}<answer>\\n{gold[::-1]}\\n</answer>"),
        ("rotated", f"{head}<answer>\\n{wrong}\\n</answer>"),
        ("right word after the answer block", f"{head}<answer>\\n{wrong}\\n</answer>\\n{gold}"),
        ("right word in the reasoning", f"<reasoning>\\n{gold}\\n</reasoning>\\n<answer>\\n{wrong}\\n</answer>"),
    ]
''',
    "tests/test_rewards_reverse.py": '''"""The reverse task's correctness reward."""

from _pkg import mod

task = mod("task")
rewards = mod("rewards")


def test_gold_scores_one_and_wrong_scores_zero():
    row = {"question": "stressed", "answer": "desserts"}
    good = task.gold_completion(row)
    bad = good.replace("desserts", "stressed")
    scores = rewards.REWARD_FUNCS["correctness"](completions=[good, bad, "junk"], answer=["desserts"] * 3)
    assert scores == [1.0, 0.0, 0.0]
''',
    "task.toml": '''smoke_max_completion_length = 32
smoke_learning_rate = "8.0e-4"
smoke_max_steps = 30
readme_chat_prompt = '"Reverse: acb"'  # a question of the curriculum's held-out test part

[dataset]
dataset_name = "data/sample.jsonl"
dataset_train_split = "train"
dataset_test_split = "test"

[reward_mixes]
balanced = { correctness = 1.0, format = 0.2, length = 0.1, repetition = 0.1 }
correctness-first = { correctness = 1.0, format = 0.05 }
format-first = { correctness = 1.0, format = 0.5, format_strict = 0.25 }

[[readme_columns]]
name = "question"
type = "string"
required = true
meaning = "a word"

[[readme_columns]]
name = "answer"
type = "string"
required = true
meaning = "it reversed"
''',
    "task.md": '''# The reverse task

## data

Default: the bundled sample of words to reverse.

## correctness

the answer block holds the reversed word

## audit cases

the word not reversed, its letters rotated, the right word after the answer block or in the reasoning

## curriculum

- reverse three-letter words
- reverse other words
- words no other part uses
''',
}
WORDS = ["stressed", "drawer", "parts", "lived", "diaper", "reward", "gateman", "sleets", "looter", "spoons",
         "animal", "deliver", "straw", "stops", "repaid", "redraw", "keels", "knits", "snips", "devil"]


def make_template(dest: Path) -> Path:
    template = dest / "template"
    skip = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", ".venv", "build")
    shutil.copytree(ROOT, template, ignore=skip)
    folder = template / "{{cookiecutter.project_slug}}" / "_tasks" / TASK
    for relative, text in FILES.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    rows = [{"question": word, "answer": word[::-1]} for word in WORDS]
    (folder / "data").mkdir()
    (folder / "data" / "sample.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    options = json.loads((template / "cookiecutter.json").read_text())
    options["task"].append(TASK)  # the only edit outside the task folder
    (template / "cookiecutter.json").write_text(json.dumps(options, indent=2))
    return template


def test_a_new_task_folder_bakes_and_its_project_tests_pass(tmp_path):
    template = make_template(tmp_path)
    cookiecutter = Path(sys.executable).with_name("cookiecutter")
    out = tmp_path / "out"
    baked = subprocess.run(
        [str(cookiecutter), "--no-input", "-o", str(out), str(template), f"task={TASK}", "smoke_test=quick"],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert baked.returncode == 0, baked.stdout[-3000:] + baked.stderr[-3000:]
    assert "[ok]   verifier audit: 20/20 gold answers score 1.0, 0/80 known-wrong completions credited" in baked.stdout
    root = out / "grpo-reasoner"
    assert (root / "grpo_reasoner" / "task.py").read_text() == FILES[f"{PKG}/task.py"]
    assert (root / "tests" / "test_rewards_reverse.py").is_file() and not (root / "_tasks").exists()
    assert not (root / "task.toml").exists() and not (root / "task.md").exists()
    assert not (root / "grpo_reasoner" / "sandbox.py").exists()
    readme = (root / "README.md").read_text()
    assert "| `answer` | string | yes | it reversed |" in readme and "Default: the bundled sample" in readme

    # The new task's own tests and every shared test that is neither a training run nor task-agnostic (the real
    # tasks' bakes run those).
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m",
                           "not slow and not any_task"],
                          cwd=root, capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary
