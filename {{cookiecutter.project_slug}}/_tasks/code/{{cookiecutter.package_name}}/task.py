"""Python programming problems: what the model is asked, which columns a row needs, how MBPP rows map onto them.

Row contract: ``question`` (the problem), ``tests`` (a list of Python snippets run after the solution in its
namespace; a snippet passes if it raises nothing), optional ``entry_point`` (the function name) and optional
``solution`` (a reference solution, used by the self-check and format priming). The default dataset is MBPP
(``google-research-datasets/mbpp``, config ``full``): ``text`` becomes ``question``, ``test_list`` becomes ``tests``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from . import sandbox
from .answer_format import FORMAT
from .contract import TEXT, TEXT_LIST, Column, required

NAME = "code"
INSTRUCTION = (
    "You are an expert Python programmer. Reason briefly about the approach, then put the complete solution "
    "in a single ```python fenced block inside the answer block. Do not print or read input."
)
SYSTEM_PROMPT = FORMAT.system_prompt(INSTRUCTION)
COLUMNS = {  # the row contract, checked on every row before training (contract.py)
    "question": Column(TEXT, "the problem"),
    "tests": Column(TEXT_LIST, "Python snippets run after the solution; each passes if it raises nothing"),
    "entry_point": Column(TEXT, "the function the tests call", required=False),
    "solution": Column(TEXT, "a reference solution (self-check, format priming)", required=False),
}
REQUIRED_COLUMNS = required(COLUMNS)


@dataclass
class TaskArguments:
    """Settings of this task in the config, parsed with the script arguments: the code sandbox."""

    sandbox_isolation: str = field(
        default="auto",
        metadata={"help": "Code sandbox: auto/required/bwrap (refuse without bubblewrap) or unsafe-rlimit-only."},
    )
    sandbox_timeout_s: float = field(default=3.0, metadata={"help": "Wall-clock limit per execution."})
    sandbox_memory_mb: int = field(default=512, metadata={"help": "Memory budget per execution (all processes)."})

    def __post_init__(self) -> None:
        """Refuse bad sandbox settings while the config is parsed, long before the sandbox starts."""
        if str(self.sandbox_isolation) not in sandbox.ISOLATION_MODES:
            raise ValueError(f"sandbox_isolation: {self.sandbox_isolation!r} is not one of "
                             f"{', '.join(sandbox.ISOLATION_MODES)} (auto needs bubblewrap: {sandbox.INSTALL_HINT})")
        problems = sandbox.bound_problems({"timeout_s": self.sandbox_timeout_s, "memory_mb": self.sandbox_memory_mb},
                                          prefix="sandbox_")  # the sandbox's own bounds (sandbox/types.py)
        if problems:
            raise ValueError(problems[0])


ERRORS: tuple[type[BaseException], ...] = (sandbox.SandboxUnavailable,)  # end a run with one line


def sandbox_config(args: TaskArguments | None) -> sandbox.SandboxConfig:
    """The sandbox settings of a config (the defaults when ``args`` is None)."""
    args = args or TaskArguments()
    return sandbox.SandboxConfig(
        isolation=args.sandbox_isolation, timeout_s=args.sandbox_timeout_s, memory_mb=args.sandbox_memory_mb
    )


_DEF = re.compile(r"^\s*def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)


def normalize(row: dict) -> dict:
    """Local rows follow the contract; a CSV stores ``tests`` as a JSON list in a string."""
    if isinstance(row.get("tests"), str):
        try:
            row = {**row, "tests": json.loads(row["tests"])}
        except ValueError:
            pass  # left as a string: the row contract check says what is wrong with it
    return row


def from_hub_row(row: dict) -> dict:
    """Map an MBPP row onto the contract."""
    setup = (row.get("test_setup_code") or "").strip()
    tests = [f"{setup}\n{t}" if setup else t for t in row["test_list"]]
    match = _DEF.search(row.get("code") or "")
    return {
        "question": row["text"],
        "tests": tests,
        "entry_point": match.group(1) if match else "",
        "solution": row.get("code") or "",
    }


def user_message(row: dict) -> str:
    tests = list(row["tests"] or [])
    example = f"\nYour code must pass tests like:\n{tests[0]}" if tests else ""
    return f"{str(row['question']).strip()}{example}"


def gold_completion(row: dict) -> str:
    """A well-formed completion built from the row's reference solution."""
    code = str(row.get("solution") or "").strip()
    return (
        "<reasoning>\nImplement the function directly.\n</reasoning>\n"
        f"<answer>\n```python\n{code}\n```\n</answer>"
    )


def untagged_completion(row: dict) -> str:
    """The reference solution written without the answer format: a sentence, then a fenced Python block (the README's
    reward table says what it earns)."""
    code = str(row.get("solution") or "").strip()
    return f"Implement the function directly.\n\n```python\n{code}\n```"


def generate_curriculum(n: int, seed: int = 0, part: str = "train") -> list[dict]:
    """``n`` two-argument functions that return one of their arguments, sampled with ``seed``.

    The smoke curriculum (``dataset_name: curriculum:N``), a task a tiny model can learn with GRPO. Format priming
    learns the format and one rule from the ``priming`` part: ``f`` returns its first argument. In the GRPO rows
    (``train`` part) ``f`` returns the first or the second argument, half each; the tests call ``f(3, 8)`` and
    ``f(5, 2)``, so only the argument the question names passes, and GRPO has to learn to return that one. The
    argument names are pairs of letters, split once and for all between the parts, so they share no question; the
    ``test`` part (the eval split) has pairs of its own, which only a learnt rule answers.
    """
    import random
    import zlib

    pairs = [(x, y) for x in "abcdpqrsuvw" for y in "abcdpqrsuvw" if x != y]
    bucket = {"priming": (0, 3), "train": (1, 2, 4), "test": (5,)}[part]
    chosen = [p for p in pairs if zlib.crc32("".join(p).encode()) % 6 in bucket]
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        first, second = rng.choice(chosen)
        returned = first if part == "priming" else rng.choice([first, second])
        position = 0 if returned == first else 1
        rows.append({
            "question": f"Write a function f({first}, {second}) that returns {returned}.",
            "tests": [f"assert f({x}, {y}) == {(x, y)[position]}" for x, y in [(3, 8), (5, 2)]],
            "entry_point": "f",
            "solution": f"def f({first}, {second}):\n    return {returned}",
        })
    return rows
