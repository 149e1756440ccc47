"""The math-verify worker: a child process that compares normalised answers with math-verify (parse + verify).

Started by ``math_task`` as ``python <this file>`` through :class:`~.timed_worker.TimedWorker`, which kills it when
a comparison overruns (math-verify's own timeouts need ``signal.alarm``, i.e. the main thread; here nothing limits
sympy, the parent's deadline does). Protocol, one JSON object per line: it writes ``{"ready": true}`` once
math-verify is imported and warm (``{"ready": false, "error": ...}`` when it cannot be imported), then answers each
request ``{"g": gold, "p": prediction}`` with ``{"ok": bool}`` (``"p"`` may be a list: true when every one
matches). Both sides are wrapped in ``\\boxed{...}`` before
parsing, so a list or "a or b" parses as a set, never as its last number.

Runs as a script, not as part of the package: stdlib plus math-verify only.
"""

from __future__ import annotations

import json
import logging
import os
import sys

# Pairs that take the common kinds of answer through sympy once (an equation of a line, a matrix with roots and
# functions, a tuple, a set, named values): a cold path costs seconds on a busy machine, more than a comparison's time
# limit, and a kill would throw the warm process away. Each pair adds to every (re)start, so rarer kinds (sums,
# logarithms) are left cold.
WARM_UP = [
    ("x^2+2x+1", "(x+1)^2"),
    ("\\frac{3}{4}", "[0.75, \\infty)"),
    ("3x + 2y - 1 = 0", "y = -\\frac{3}{2}x + \\frac{1}{2}"),
    ("\\begin{pmatrix}\\frac{1}{2\\sqrt[3]{y}^2}&1\\\\\\cos(y)&0\\end{pmatrix}",
     "\\begin{pmatrix}\\frac{1}{2y^{2/3}}&1\\\\\\cos(y)&0\\end{pmatrix}"),
    ("(2, \\frac{\\pi}{3})", "\\left( 2, \\frac{\\pi}{3} \\right)"),
    ("\\{1, 3\\}", "\\{3, 1\\}"),
    ("a = 2, b = 5", "b = 5, a = 2"),
]


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # never import siblings by accident
    logging.disable(logging.CRITICAL)
    try:
        from math_verify import parse, verify
    except Exception as exc:
        sys.stdout.write(json.dumps({"ready": False, "error": repr(exc)}) + "\n")
        sys.stdout.flush()
        return
    from functools import lru_cache

    def parse_boxed(text: str) -> list:
        return parse("\\boxed{" + text + "}", parsing_timeout=None)

    gold_cache = lru_cache(maxsize=4096)(parse_boxed)

    # warm up (lazy imports, the LaTeX grammar, sympy's caches) so the first real comparison is not a cold one
    for gold, pred in WARM_UP:
        verify(parse_boxed(gold), parse_boxed(pred), timeout_seconds=None)
    sys.stdout.write(json.dumps({"ready": True}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            req = json.loads(line)
            gold = gold_cache(str(req["g"]))
            preds = [parse_boxed(str(p)) for p in (req["p"] if isinstance(req["p"], list) else [req["p"]])]
            ok = bool(gold) and all(p and verify(gold, p, timeout_seconds=None) for p in preds)
        except Exception:
            ok = False
        sys.stdout.write(json.dumps({"ok": ok}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
