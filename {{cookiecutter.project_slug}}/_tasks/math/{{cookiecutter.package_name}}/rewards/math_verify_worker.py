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
    verify(gold_cache("x^2+2x+1"), parse_boxed("(x+1)^2"), timeout_seconds=None)
    verify(gold_cache("\\frac{3}{4}"), parse_boxed("[0.75, \\infty)"), timeout_seconds=None)
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
