"""Math word problems: what the model is asked, which columns a row needs, and how hub rows map onto them.

Row contract: ``question`` (the problem) and ``answer`` (a bare value, a GSM8K solution ending ``#### 72``, or
LaTeX). The default dataset is GSM8K (``openai/gsm8k``, config ``main``), whose rows already have these columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .answer_format import FORMAT
from .contract import TEXT, TEXT_OR_NUMBER, Column, required

NAME = "math"
INSTRUCTION = (
    "You are a careful math solver. Reason step by step, then give only the final answer "
    "(a number or a LaTeX expression, no units) in the answer block."
)
SYSTEM_PROMPT = FORMAT.system_prompt(INSTRUCTION)
COLUMNS = {  # the row contract, checked on every row before training (contract.py)
    "question": Column(TEXT, "the problem"),
    "answer": Column(TEXT_OR_NUMBER, "the final value, a GSM8K solution ending `#### 72`, or LaTeX"),
}
REQUIRED_COLUMNS = required(COLUMNS)


@dataclass
class TaskArguments:
    """Settings of this task in the config (parsed with the script arguments); this task has none."""


ERRORS: tuple[type[BaseException], ...] = ()  # errors that end a run with one line (besides bad data or config)


_CALCULATOR = re.compile(r"<<[^>]*>>")  # GSM8K's calculator annotations, e.g. "<<48/2=24>>"


def normalize(row: dict) -> dict:
    """Local rows already follow the contract."""
    return row


def from_hub_row(row: dict) -> dict:
    """GSM8K rows already follow the contract."""
    return {"question": row["question"], "answer": row["answer"]}


def user_message(row: dict) -> str:
    return str(row["question"]).strip()


def split_gold(answer: str) -> tuple[str, str]:
    """Split a gold answer into (worked solution, final answer); the solution is empty for bare golds."""
    text = str(answer)
    if "####" in text:
        solution, final = text.rsplit("####", 1)
        return _CALCULATOR.sub("", solution).strip(), final.strip()
    return "", text.strip()


def gold_completion(row: dict) -> str:
    """A well-formed completion that answers the row correctly (self-check and format priming)."""
    solution, final = split_gold(row["answer"])
    reasoning = solution or "The answer follows from the problem statement."
    return f"<reasoning>\n{reasoning}\n</reasoning>\n<answer>\n{final}\n</answer>"


def untagged_completion(row: dict) -> str:
    """The right answer written without the answer format, as instruct models answer by default: the working, then
    the final answer in a ``\\boxed{}`` (the README's reward table says what it earns)."""
    solution, final = split_gold(row["answer"])
    bare = final.strip().strip("$").strip()
    boxed = bare if bare.startswith("\\boxed{") else "\\boxed{" + bare + "}"
    return f"{solution or 'The answer follows from the problem statement.'}\n\nThe answer is ${boxed}$."


def generate_curriculum(n: int, seed: int = 0, part: str = "train") -> list[dict]:
    """``n`` one-step identities whose answer is one of the operands, sampled with ``seed``.

    The smoke curriculum (``dataset_name: curriculum:N``), a task a tiny model can learn with GRPO. Format priming
    learns the format and one rule from the ``priming`` part: ``a + 0``, ``a - 0`` and ``0 + a`` (a in 0..9) are
    ``a``, copy the operand that is not 0, whichever side it is on. The GRPO rows (``train`` part, disjoint) are
    ``a * 1`` and ``1 * a`` (a in 2..9): the primed model copies either operand, and GRPO has to learn to copy the
    one that is not 1. The ``test`` part holds out 4 of those 16 questions (each operand and each form still trains
    with the others): the eval split, which only a learnt rule answers.
    """
    import random

    rng = random.Random(seed)
    if part == "priming":
        questions = [(form, a) for form in ("{a} + 0", "{a} - 0", "0 + {a}") for a in range(10)]
    else:
        forms = ["{a} * 1", "1 * {a}"]
        questions = [(form, a) for index, form in enumerate(forms) for a in range(2, 10)
                     if ((a + index) % 4 == 0) == (part == "test")]
    rows = []
    for _ in range(n):
        form, a = rng.choice(questions)
        rows.append({"question": f"What is {form.format(a=a)}?", "answer": str(a)})
    return rows
