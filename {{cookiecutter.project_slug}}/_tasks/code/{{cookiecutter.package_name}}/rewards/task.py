"""Rewards for the code task: the completion's Python is run against the row's tests in the sandbox.

* ``correctness`` in [0, 1]: the fraction of the row's test snippets that passed. The tests run outside the
  model's process and call the solution's functions in the sandbox with plain data (see :mod:`..sandbox`), so
  nothing the code does to its own interpreter, exit code or output earns credit. No code, or no tests in the
  row, scores 0.0. All completions of a batch run as one sandbox batch, in parallel; identical completions of the
  same row (a GRPO group's repeats) run once and share the score. Each run builds its own
  from the config's sandbox settings (:func:`correctness_for_run`); :func:`make_correctness` binds one to a
  :class:`..sandbox.Sandbox` you own.
* ``syntax`` in {0, 1}: 1.0 iff the extracted code parses with :mod:`ast` (cheap partial credit, no execution).

Code extraction (:func:`extract_code`): the last fenced block (```python, ```python3, ```py, ```py3 or a bare
```) inside the last ``<answer>`` block, else the last fenced block anywhere in the completion, else the bare
answer-block text. A leading byte-order mark is ignored, and a final fence left open runs to the end of the text.

Columns used: ``tests`` (list of snippets) and optionally ``entry_point`` (function name; when given and the code
defines no such name, the tests fail on their own, so it is only used for an early, cheap 0.0) and ``question``.
When a row has an ``entry_point`` and its question is Python (a HumanEval prompt) or holds fenced Python blocks, the
functions and classes it defines other than the entry point (with its imports and assignments) are the row's
helpers (:func:`prompt_helpers`): they run on the trusted side, so a test that calls ``encode_cyclic`` calls the
prompt's, never one the solution redefines (the identity, say, with an identity ``decode_cyclic``). A row without
an ``entry_point``, or whose helpers are only described in prose, has no such protection: the tests then call
whatever the solution defines under those names. Stdlib only at module level; the sandbox starts its workers when
the run builds the reward, so a missing bubblewrap is reported before any weight is loaded.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from typing import Any

from .. import sandbox
from .. import task as code_task
from ..answer_format import extract_answer
from ..sandbox import Sandbox, SandboxUnavailable
from .common import RewardSettings, column, completion_count, completion_text, factory, register

# ```python / ```python3 / ```py / ```py3 / ``` fences; the closing fence (or the end of the text, for a last fence
# left open) must start a line. The body is captured lazily.
_FENCE = re.compile(r"```[ \t]*(?:python3?|py3?)?[ \t]*\r?\n(.*?)(?:(?:\r?\n)?[ \t]*```|\Z)", re.DOTALL | re.IGNORECASE)
_MAX_CODE_CHARS = 20_000
_MAX_TESTS = 50


def _last_block(text: str) -> str | None:
    blocks = _FENCE.findall(text)
    return blocks[-1] if blocks else None


def extract_code(text: str) -> str | None:
    """The code of a completion's text (see the module docstring), or None when there is nothing to run."""
    if not isinstance(text, str) or not text.strip():
        return None
    text = text.lstrip("\ufeff")
    answer = extract_answer(text)
    code = None
    if answer is not None:
        code = _last_block(answer)
    if code is None:
        code = _last_block(text)
    if code is None and answer is not None:
        code = answer.strip("`\n ")
    if code is None or not code.strip():
        return None
    return code.lstrip("\ufeff").rstrip()[:_MAX_CODE_CHARS]


def parses(code: str | None) -> bool:
    if not code:
        return False
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


_HELPER_NODES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
                 ast.AnnAssign)  # fmt: skip


@functools.lru_cache(maxsize=4096)
def prompt_helpers(question: str, entry_point: str) -> str:
    """The definitions of a row's question other than ``entry_point``'s (see the module docstring), as code; "" when
    it defines no function or class besides the entry point. The question is Python itself, else its fenced blocks."""
    blocks = [question] + _FENCE.findall(question)
    for source in blocks:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        kept = [n for n in tree.body if isinstance(n, _HELPER_NODES) and getattr(n, "name", "") != entry_point]
        if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in kept):
            return ast.unparse(ast.Module(body=kept, type_ignores=[]))
    return ""


def _tests_of(value: object) -> list[str]:
    if isinstance(value, str):  # a single snippet, or a JSON list as stored in a CSV
        if value.lstrip().startswith("["):
            try:
                import json

                loaded = json.loads(value)
                if isinstance(loaded, list):
                    value = loaded
            except ValueError:
                pass
        if isinstance(value, str):
            value = [value]
    if not isinstance(value, (list, tuple)):
        return []
    return [t for t in value if isinstance(t, str) and t.strip()][:_MAX_TESTS]


def _defines(code: str, name: str) -> bool:
    """Whether the code could define ``name`` (cheap textual check; the tests are the real judge)."""
    return re.search(rf"\b{re.escape(name)}\b", code) is not None


class Correctness:
    """The ``correctness`` reward bound to one sandbox: fraction of the row's tests that passed, in [0, 1]."""

    __name__ = "correctness"

    def __init__(self, box: Sandbox) -> None:
        self.sandbox = box

    def __call__(
        self, prompts: object = None, completions: object = None, tests: object = None, entry_point: object = None,
        question: object = None, **kwargs: Any,
    ) -> list[float | None]:  # fmt: skip
        n = completion_count(completions)
        scores: list[float | None] = [0.0] * n
        try:
            texts = [completion_text(c) for c in completions] if n else []  # type: ignore[union-attr]
            all_tests = column(tests, n)
            entries = column(entry_point, n)
            questions = column(question, n)
            jobs: dict[tuple, sandbox.Job] = {}  # one job per distinct (code, tests, entry point, helpers)
            where: dict[int, tuple] = {}
            for i, text in enumerate(texts):
                code = extract_code(text)
                row_tests = _tests_of(all_tests[i])
                entry = entries[i] if isinstance(entries[i], str) and entries[i].isidentifier() else None
                if not code or not row_tests or not parses(code) or (entry and not _defines(code, entry)):
                    continue
                helpers = prompt_helpers(questions[i], entry) if entry and isinstance(questions[i], str) else ""
                key = (code, tuple(row_tests), entry, helpers)
                jobs.setdefault(key, sandbox.Job(code=code, tests=row_tests, entry_point=entry, helpers=helpers))
                where[i] = key
            if jobs:
                fractions = {key: float(r.fraction) for key, r in zip(jobs, self.sandbox.run_batch(list(jobs.values())),
                                                                       strict=True)}
                for i, key in where.items():
                    scores[i] = fractions[key]
        except SandboxUnavailable:
            raise  # bubblewrap is required and missing: a configuration error, not a bad completion
        except Exception:
            pass  # keep whatever was scored; a broken batch must not break a training step
        return scores

    def close(self) -> None:
        """Stop the sandbox's workers."""
        self.sandbox.close()


def make_correctness(box: Sandbox) -> Correctness:
    """The ``correctness`` reward running its code in ``box`` (the caller owns it and closes it)."""
    return Correctness(box)


@factory("correctness")
def correctness_for_run(settings: RewardSettings) -> Correctness:
    """``correctness`` for one run: a sandbox with the config's ``sandbox_*`` settings, started now (without
    bubblewrap, and no explicit unsafe mode, this refuses here with one line)."""
    box = Sandbox(code_task.sandbox_config(settings.task))
    print(f"code sandbox: {box.start()} isolation", file=sys.stderr)
    return Correctness(box)


@register("syntax")
def syntax_reward(prompts: object = None, completions: object = None, **kwargs: Any) -> list[float | None]:
    """1.0 iff the completion's extracted code parses as Python, else 0.0."""
    n = completion_count(completions)
    out: list[float | None] = []
    for c in completions if n else []:  # type: ignore[union-attr]
        try:
            out.append(1.0 if parses(extract_code(completion_text(c))) else 0.0)
        except Exception:
            out.append(0.0)
    return out


__all__ = [
    "Correctness", "correctness_for_run", "extract_code", "make_correctness", "parses", "prompt_helpers",
    "syntax_reward",
]  # fmt: skip
