"""The code task's known-wrong completions of a row, for the verifier audit (``audit.py``).

Each is the row's reference solution (the ``solution`` column) with the entry point's body replaced: by
``return None``, by ``pass``, by ``raise NotImplementedError``, by returning an object that claims to equal
anything (``__eq__`` always True), and the ``return None`` stub followed by an exit of the interpreter before the
tests run (``sys.exit(0)``). None of them solves the problem, so a correctness reward must score each below the
reference. A row without a reference solution has no gold to audit: :func:`wrong_completions` returns None and the
audit skips it. Stdlib only.
"""

from __future__ import annotations

import ast

from .task import gold_completion

ALWAYS_EQUAL = (
    "class AlwaysEqual:\n"
    "    def __eq__(self, other):\n        return True\n\n"
    "    def __ne__(self, other):\n        return False\n\n"
    "    __hash__ = object.__hash__\n"
)
BODIES = {
    "returns None": "return None",
    "pass": "pass",
    "raises": "raise NotImplementedError",
    "always-equal value": "return AlwaysEqual()",
}


def stub(solution: str, entry_point: str | None, body: str) -> str | None:
    """``solution`` with the body of its entry point (else its first top-level function) replaced by ``body``; None
    when it does not parse or defines no function."""
    try:
        tree = ast.parse(solution)
    except (SyntaxError, ValueError):
        return None
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    target = next((f for f in functions if f.name == entry_point), functions[0] if functions else None)
    if target is None:
        return None
    target.body = ast.parse(body).body
    return ast.unparse(tree)


def with_code(row: dict, code: str) -> str:
    return gold_completion({**row, "solution": code})


def wrong_completions(row: dict) -> list[tuple[str, str]] | None:
    """(variant, completion) pairs, each a wrong solution of ``row``; None for a row without a reference."""
    solution = str(row.get("solution") or "").strip()
    if not solution:
        return None
    out = []
    for name, body in BODIES.items():
        code = stub(solution, row.get("entry_point"), body)
        if code is not None:
            out.append((name, with_code(row, f"{ALWAYS_EQUAL}\n{code}" if "AlwaysEqual" in body else code)))
    stubbed = stub(solution, row.get("entry_point"), "return None")
    if stubbed is not None:
        out.append(("exit before the tests", with_code(row, f"{stubbed}\nimport sys\nsys.exit(0)")))
    return out
