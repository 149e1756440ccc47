"""Python programming problems: what the model is asked, which columns a row needs, how MBPP rows map onto them.

Row contract: ``question`` (the problem), ``tests`` (a list of Python snippets run after the solution in its
namespace; a snippet passes if it raises nothing), optional ``entry_point`` (the function name) and optional
``solution`` (a reference solution, used by the self-check and format priming). The default dataset is MBPP
(``google-research-datasets/mbpp``, config ``full``): ``text`` becomes ``question``, ``test_list`` becomes ``tests``.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field

from . import sandbox
from .answer_format import FORMAT

NAME = "code"
INSTRUCTION = (
    "You are an expert Python programmer. Reason briefly about the approach, then put the complete solution "
    "in a single ```python fenced block inside the answer block. Do not print or read input."
)
SYSTEM_PROMPT = FORMAT.system_prompt(INSTRUCTION)
REQUIRED_COLUMNS = ("question", "tests")


@dataclass
class TaskArguments:
    """Settings of this task in the config, parsed with the script arguments: the code sandbox."""

    sandbox_isolation: str = field(
        default="auto",
        metadata={"help": "Code sandbox: auto (bubblewrap if available), required (refuse without it) or off."},
    )
    sandbox_timeout_s: float = field(default=3.0, metadata={"help": "Wall-clock limit per execution."})
    sandbox_memory_mb: int = field(default=512, metadata={"help": "Address-space limit per execution."})


ERRORS: tuple[type[BaseException], ...] = (sandbox.SandboxUnavailable,)  # end a run with one line


def setup(args: TaskArguments) -> None:
    """Configure the sandbox and start its workers: with isolation "required" and no bubblewrap this refuses now."""
    sandbox.configure(isolation=args.sandbox_isolation, timeout_s=args.sandbox_timeout_s,
                      memory_mb=args.sandbox_memory_mb)
    print(f"code sandbox: {sandbox.isolation_mode()} isolation", file=sys.stderr)

_DEF = re.compile(r"^\s*def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)


def normalize(row: dict) -> dict:
    """Local rows follow the contract; a CSV stores ``tests`` as a JSON list in a string."""
    if isinstance(row.get("tests"), str):
        row = {**row, "tests": json.loads(row["tests"])}
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
