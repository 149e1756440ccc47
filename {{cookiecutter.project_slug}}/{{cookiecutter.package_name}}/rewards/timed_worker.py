"""A persistent helper process with a hard time limit per request: the way rewards bound work they cannot bound.

Some checks have no time bound of their own (sympy simplification behind math-verify, a dataset's regex ``pattern``
or ``uniqueItems`` in a JSON schema). They run in a :class:`TimedWorker`: a child Python process started from a
script file next to this module, speaking one JSON object per line over pipes (stdlib only). The child first writes
``{"ready": true}`` (or ``{"ready": false, "error": ...}`` when its imports fail), then answers each request line
with one reply line. A request that gets no reply within its timeout kills the child (SIGKILL); a replacement is
started at once, so it warms up while the caller goes on, and the caller gets ``None`` (the reward scores that
completion as not earned).

Bound per request: ``timeout`` seconds, plus at most one start of the child (capped by ``start_timeout``, typically
well under that) when the previous request killed it or on the first request.

Thread-safe: requests are serialised by a lock.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any


class TimedWorker:
    """A child ``python <script>`` answering JSON lines; killed and restarted when a request overruns.

    ``available`` is None until the first start, then True, or False for good when the child cannot be started or
    reports that its imports failed. ``extra_path`` entries go first on the child's ``PYTHONPATH``.
    """

    def __init__(self, script: str | Path, start_timeout: float = 60.0, extra_path: tuple[str, ...] = ()) -> None:
        self.script = str(script)
        self.start_timeout = start_timeout
        self.extra_path = extra_path
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._ready = False
        self.available: bool | None = None
        self.error = ""
        self.restarts = 0  # starts after the first one (after a kill or a crash)
        atexit.register(self.close)

    def _spawn(self) -> bool:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([*self.extra_path, *(p for p in sys.path if p)])
        try:
            self._proc = subprocess.Popen(
                [sys.executable, self.script],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
                env=env,
            )
        except Exception as exc:
            self._proc = None
            self.available = False
            self.error = repr(exc)
            return False
        self._ready = False
        return True

    def _ensure_ready(self) -> bool:
        if self._proc is None or self._proc.poll() is not None:
            self._kill()
            if self.available:
                self.restarts += 1
            if not self._spawn():
                return False
        if not self._ready:
            reply = self._read(self.start_timeout)
            if not reply or not reply.get("ready"):
                self.error = str((reply or {}).get("error", "the worker did not start in time"))
                self._kill()
                self.available = False
                return False
            self._ready = True
            self.available = True
        return True

    def _read(self, timeout: float) -> dict[str, Any] | None:
        proc = self._proc
        if proc is None or proc.stdout is None:
            return None
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                if not sel.select(max(0.0, timeout)):
                    return None
            line = proc.stdout.readline()
            reply = json.loads(line) if line else None
            return reply if isinstance(reply, dict) else None
        except Exception:
            return None

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        self._ready = False
        if proc is not None:
            try:
                proc.kill()
                proc.wait(timeout=5)
            except Exception:
                pass

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The child's reply to ``request``; None on timeout, a crash, or when the worker is unavailable."""
        with self._lock:
            if self.available is False or not self._ensure_ready():
                return None
            proc = self._proc
            assert proc is not None and proc.stdin is not None
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
            except Exception:
                self._kill()
                return None
            reply = self._read(timeout)
            if reply is None:  # overran or died: kill it and start the replacement now, so it warms up meanwhile
                self._kill()
                self.restarts += 1
                self._spawn()
            return reply

    def close(self) -> None:
        with self._lock:
            self._kill()
