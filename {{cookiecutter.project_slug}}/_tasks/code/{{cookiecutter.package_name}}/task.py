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
        if not self.sandbox_timeout_s > 0:
            raise ValueError(f"sandbox_timeout_s: {self.sandbox_timeout_s} must be a positive number of seconds "
                             "(e.g. sandbox_timeout_s: 3)")
        if self.sandbox_memory_mb < 32:
            raise ValueError(f"sandbox_memory_mb: {self.sandbox_memory_mb} must be at least 32 (e.g. 512)")


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


def generate_curriculum(n: int, seed: int = 0, part: str = "train") -> list[dict]:
    """``n`` one-line function problems (``f(x)`` returns ``x + c``, ``x - c`` or ``x * c``), sampled with ``seed``.

    The smoke curriculum (``dataset_name: curriculum:N``): the tests pin the operator and the constant. The problems
    are split once and for all into a ``priming`` part (format priming's gold completions) and a disjoint ``train``
    part (the GRPO rows), so any rise of correctness on the GRPO rows is GRPO's doing.
    """
    import random
    import zlib

    problems = [(op, c) for op in "+-*" for c in range(2, 10)]
    chosen = [p for p in problems if (zlib.crc32(repr(p).encode()) % 3 == 0) == (part == "priming")]
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        op, c = rng.choice(chosen)
        results = [x + c if op == "+" else x - c if op == "-" else x * c for x in (1, 4, 7)]
        rows.append({
            "question": f"Write a function f(x) that returns x {op} {c}.",
            "tests": [f"assert f({x}) == {y}" for x, y in zip((1, 4, 7), results, strict=True)],
            "entry_point": "f",
            "solution": f"def f(x):\n    return x {op} {c}",
        })
    return rows
