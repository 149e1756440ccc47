"""The trusted side of a job: runs the test snippets in this process, with every function of the solution
replaced by a stub that calls it in the sandbox over the job's own pipes with plain data. The row's own helpers
(``Job.helpers``, e.g. the ``encode_cyclic`` a HumanEval prompt defines and its tests call) run here too: a solution
that redefines them (say as the identity, with its target) is never called in their place.

Only plain values cross (``None``, bool, int, float, str and lists, tuples, dicts, sets of them), decoded here
into exact built-in types, so every comparison a test makes is between values this process built. A returned
object that is not plain data stays in the sandbox as a :class:`RemoteObject` whose methods a test may call; it
compares equal only to itself and has no truth value. The sandboxed
child never sees the tests, the expected values, or anything of this process.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import sys
import time
from collections.abc import Callable

from . import wire
from .types import Job, TestResult

_REASON = 300
# Exceptions a solution may raise that a test may catch by type; anything else arrives as RemoteError.
_MAPPED = {
    name: getattr(builtins, name)
    for name in (
        "ValueError", "TypeError", "KeyError", "IndexError", "ZeroDivisionError", "ArithmeticError", "LookupError",
        "OverflowError", "AttributeError", "NameError", "RuntimeError", "NotImplementedError", "RecursionError",
        "UnicodeError",
    )
}  # fmt: skip


_BUILTINS = frozenset(dir(builtins))
# Standard modules a test may name without importing them (``math.isclose(...)``), imported here; not the few whose
# import opens a window, a browser or prints.
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) - {
    "antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "__hello__", "__phello__"}  # fmt: skip


class RemoteError(Exception):
    """The solution raised something a test cannot catch by its own type."""


class JobEnded(BaseException):
    """The sandboxed child is gone (time, memory, exit); ``status`` says why. A BaseException, so that a test's
    ``except Exception`` cannot turn a dead solution into a pass."""

    def __init__(self, status: str, why: str) -> None:
        super().__init__(why)
        self.status = status


class Deadline(BaseException):
    """The job's time is up (a BaseException for the same reason as :class:`JobEnded`)."""


class RemoteObject:
    """An object the solution returned that is not plain data: it stays in the sandbox; a test may call its
    methods (``s.push(1)``). It equals only itself and has no truth value, length or other protocol here."""

    __slots__ = ("_call", "_index")

    def __init__(self, call: Callable[..., object], index: int) -> None:
        object.__setattr__(self, "_call", call)
        object.__setattr__(self, "_index", index)

    def __getattr__(self, name: str) -> Callable[..., object]:
        if name.startswith("__"):
            raise AttributeError(name)
        call, index = object.__getattribute__(self, "_call"), object.__getattribute__(self, "_index")
        return lambda *args, **kwargs: call(name, args, kwargs, index)

    def __bool__(self) -> bool:
        raise TypeError("a remote object has no truth value")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "<object in the sandbox>"


@functools.lru_cache(maxsize=8192)
def compile_test(test: str):
    return compile(test, "<test>", "exec")


@functools.lru_cache(maxsize=8192)
def _names(test: str) -> tuple[frozenset[str], frozenset[str]]:
    """(names a test reads, names it binds itself) from its syntax tree."""
    tree = ast.parse(test)
    read, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return frozenset(read), frozenset(bound)


@functools.lru_cache(maxsize=8192)
def _module_paths(test: str) -> frozenset[str]:
    """Dotted paths ``name.attr...`` a test reads whose first name is a standard module it does not bind itself."""
    tree = ast.parse(test)
    bound = _names(test)[1]
    out = set()
    for node in ast.walk(tree):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if parts and isinstance(node, ast.Name) and node.id in _STDLIB and node.id not in bound:
            out.add(".".join([node.id, *reversed(parts)]))
    return frozenset(out)


def add_modules(tests: list[str], ns: dict[str, object]) -> None:
    """Give the tests' namespace the standard modules they name and neither import nor define (MBPP's
    ``assert math.isclose(f(2), 1.41, rel_tol=1e-3)``, with or without ``import math`` in the solution): this
    process's own modules, which nothing of the solution can reach. Submodules named by a dotted path
    (``os.path``, ``xml.etree.ElementTree``) are imported too."""
    for test in tests:
        try:
            paths = _module_paths(test)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for path in sorted(paths):
            root = path.split(".")[0]
            if root in ns and ns[root] is not sys.modules.get(root):
                continue  # the row's helpers bound that name to something else
            parts = path.split(".")
            for i in range(1, len(parts) + 1):
                try:
                    importlib.import_module(".".join(parts[:i]))
                except Exception:  # a name that is not a module (math.isclose), or one that fails to import
                    break
            if root in sys.modules:
                ns[root] = sys.modules[root]


def stub_names(tests: list[str], offered: list[str], entry_point: str | None) -> set[str]:
    """The solution's functions the tests may call: ones the tests read but neither bind nor take from builtins
    (so a solution that defines ``sorted`` or ``check`` cannot answer for the test's own helpers)."""
    read: set[str] = set()
    bound: set[str] = set()
    for t in tests:
        try:
            r, b = _names(t)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        read |= r
        bound |= b
    want = (read - bound - _BUILTINS) | ({entry_point} if entry_point else set())
    return {n for n in offered if isinstance(n, str) and n in want}


def run_tests(job: Job, send: Callable[[bytes], bytes], start_reply: bytes, deadline: float, max_calls: int
              ) -> tuple[list[TestResult], str]:  # fmt: skip
    """Evaluate ``job.tests`` here; ``send`` forwards one request to the sandbox and returns its reply."""
    n = len(job.tests)
    try:
        first = wire.decode(start_reply)
    except (ValueError, RecursionError):
        first = {"end": "error", "why": "malformed reply"}
    if not isinstance(first, dict) or "names" not in first or not isinstance(first["names"], list):
        status, why = _ended(first)
        return [TestResult(status, why)] * n, why

    gone: list[JobEnded] = []
    lost: list[Exception] = []  # the worker failed: re-raised after the tests, so the caller replaces it
    remote = _remote(send, deadline, max_calls, gone, lost)

    def proxy(name: str) -> Callable:
        def call(*args: object, **kwargs: object) -> object:
            return remote(name, args, kwargs)

        call.__name__ = name
        return call

    ns: dict[str, object] = {"__name__": "__test__", "__builtins__": builtins}
    if job.helpers:
        try:
            exec(compile_test(job.helpers), ns)
        except Exception as exc:
            why = f"the row's helpers failed: {_describe(exc)}"[:_REASON]
            return [TestResult("error", why)] * n, why
    add_modules(job.tests, ns)  # before the stubs: a solution's function named ``math`` is not the test's math
    for name in stub_names(job.tests, first["names"], job.entry_point):
        if name == job.entry_point or name not in ns:  # the row's helpers stay the row's
            ns[name] = proxy(name)
    results: list[TestResult] = []
    for test in job.tests:
        results.append(_run_test(test, ns, gone, deadline))
    if lost:
        raise lost[0]
    return results, ""


def _remote(send: Callable[[bytes], bytes], deadline: float, max_calls: int, gone: list[JobEnded],
            lost: list[Exception]) -> Callable[..., object]:
    """The function that makes one call in the sandbox: ``remote(name, args, kwargs, obj=None)`` sends it (a method
    of the returned object ``obj`` when given) and returns the decoded value, a :class:`RemoteObject`, or raises the
    solution's exception. A child that ended or tampered with its channel is recorded in ``gone`` (and a failed
    worker in ``lost``): every later call raises it."""
    calls = [0]

    def remote(name: str, args: tuple, kwargs: dict, obj: int | None = None) -> object:
        if gone:
            raise gone[0]
        if time.monotonic() > deadline:
            raise Deadline("time limit exceeded")
        calls[0] += 1
        if calls[0] > max_calls:
            raise RemoteError("call budget exceeded")
        try:
            req = {"n": name, "a": wire.encode(args), "k": wire.encode(kwargs)}
            if obj is not None:
                req["o"] = obj
            request = wire.dumps(req)
        except (TypeError, ValueError, RecursionError) as exc:
            raise TypeError(f"argument is not plain data: {exc}") from None
        try:
            raw = send(request)
        except Exception as exc:  # no test may catch this and go on to pass
            lost.append(exc)
            gone.append(JobEnded("error", "the sandbox worker failed"))
            raise gone[0] from None
        try:
            reply = wire.decode(raw)
        except (ValueError, RecursionError, TypeError):  # only a child that tampered with its channel sends this
            gone.append(JobEnded("error", "malformed reply"))
            raise gone[0] from None
        if isinstance(reply, dict) and len(reply) == 1:
            if "v" in reply:
                return reply["v"]
            if "h" in reply and type(reply["h"]) is int:
                return RemoteObject(remote, reply["h"])
            if "x" in reply:
                kind, msg = _pair(reply["x"])
                raise _MAPPED.get(kind, RemoteError)(f"{kind}: {msg}")
        gone.append(JobEnded(*_ended(reply)))
        raise gone[0]

    return remote


def _run_test(test: str, ns: dict[str, object], gone: list[JobEnded], deadline: float) -> TestResult:
    """Run one test snippet in ``ns``: passed, failed (an assertion), or how the solution or the job ended."""
    if gone:
        return TestResult(gone[0].status, str(gone[0])[:_REASON])  # type: ignore[arg-type]
    if time.monotonic() > deadline:
        return TestResult("timeout", "time limit exceeded")
    try:
        exec(compile_test(test), ns)
        return TestResult("passed")
    except AssertionError as exc:
        return TestResult("failed", _describe(exc))
    except JobEnded as exc:
        return TestResult(exc.status, str(exc)[:_REASON])  # type: ignore[arg-type]
    except Deadline as exc:
        return TestResult("timeout", str(exc))
    except MemoryError as exc:
        return TestResult("memory", _describe(exc))
    except Exception as exc:
        status = "memory" if str(exc).startswith("MemoryError") else "error"
        return TestResult(status, _describe(exc))  # type: ignore[arg-type]


def _pair(value: object) -> tuple[str, str]:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value[0][:100], value[1][:_REASON]
    return "Exception", ""


def _ended(reply: object) -> tuple[str, str]:
    if isinstance(reply, dict) and "load" in reply:
        kind, msg = _pair(reply["load"])
        status = "memory" if kind == "MemoryError" else "error"
        return status, f"solution raised {kind}: {msg}"[:_REASON]
    if isinstance(reply, dict) and reply.get("end") in ("timeout", "memory", "error"):
        return str(reply["end"]), str(reply.get("why", ""))[:_REASON]
    return "error", "the program ended"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:_REASON]
