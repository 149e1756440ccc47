"""Rewards for the code task: the completion's Python is run against the row's tests in the sandbox.

* ``correctness`` in [0, 1]: the fraction of the row's test snippets that passed, counting only tests the
  sandbox's harness *proved* it ran (a per-execution nonce on a private pipe, see :mod:`..sandbox`). Exiting early,
  raising ``SystemExit`` or printing "passed" earns nothing for the tests that did not run. No code, or no
  tests in the row, scores 0.0. All completions of a batch run as one sandbox batch, in parallel.
* ``syntax`` in {0, 1}: 1.0 iff the extracted code parses with :mod:`ast` (cheap partial credit, no execution).

Code extraction (:func:`extract_code`): the last fenced block (```python, ```py or a bare ```) inside the last
``<answer>`` block, else the last fenced block anywhere in the completion, else the bare answer-block text.

Columns used: ``tests`` (list of snippets) and optionally ``entry_point`` (function name; when given and the code
defines no such name, the tests fail on their own, so it is only used for an early, cheap 0.0). Stdlib only at
module level; the sandbox starts its worker processes lazily, on the first ``correctness`` call.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from .. import sandbox
from ..answer_format import extract_answer
from .common import column, completion_text, register

# ```python / ```py / ``` fences; the closing fence must start a line. The body is captured lazily.
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*?)(?:\r?\n)?[ \t]*```", re.DOTALL | re.IGNORECASE)
_MAX_CODE_CHARS = 20_000
_MAX_TESTS = 50


def _last_block(text: str) -> str | None:
    blocks = _FENCE.findall(text)
    return blocks[-1] if blocks else None


def extract_code(text: str) -> str | None:
    """The code of a completion's text (see the module docstring), or None when there is nothing to run."""
    if not isinstance(text, str) or not text.strip():
        return None
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
    return code[:_MAX_CODE_CHARS]


def parses(code: str | None) -> bool:
    if not code:
        return False
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


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


def _safe_len(completions: object) -> int:
    return len(completions) if isinstance(completions, (list, tuple)) else 0


@register("correctness")
def correctness_reward(
    prompts: object = None, completions: object = None, tests: object = None, entry_point: object = None, **kwargs: Any
) -> list[float | None]:
    """Fraction of the row's tests that provably passed in the sandbox, in [0, 1]."""
    n = _safe_len(completions)
    scores: list[float | None] = [0.0] * n
    try:
        texts = [completion_text(c) for c in completions] if n else []  # type: ignore[union-attr]
        all_tests = column(tests, n)
        entries = column(entry_point, n)
        jobs: list[sandbox.Job] = []
        where: list[int] = []
        for i, text in enumerate(texts):
            code = extract_code(text)
            row_tests = _tests_of(all_tests[i])
            entry = entries[i] if isinstance(entries[i], str) else ""
            if not code or not row_tests or not parses(code) or (entry and not _defines(code, entry)):
                continue
            jobs.append(sandbox.Job(code=code, tests=row_tests))
            where.append(i)
        if jobs:
            for i, result in zip(where, sandbox.run_batch(jobs), strict=True):
                scores[i] = float(result.fraction)
    except sandbox.SandboxUnavailable:
        raise  # isolation is required and missing: a configuration error, not a bad completion
    except Exception:
        pass  # keep whatever was scored; a broken batch must not break a training step
    return scores


@register("syntax")
def syntax_reward(prompts: object = None, completions: object = None, **kwargs: Any) -> list[float | None]:
    """1.0 iff the completion's extracted code parses as Python, else 0.0."""
    n = _safe_len(completions)
    out: list[float | None] = []
    for c in completions if n else []:  # type: ignore[union-attr]
        try:
            out.append(1.0 if parses(extract_code(completion_text(c))) else 0.0)
        except Exception:
            out.append(0.0)
    return out


__all__ = ["correctness_reward", "extract_code", "parses", "syntax_reward"]
