"""The code sandbox against hostile programs, in every mode the project allows.

Each hostile program defines a wrong ``add`` (or none) and tries to earn credit anyway, or to reach the host. Any
credit is a hack. After each program, a wrong and a right solution on the same pool must score exactly 0 and 1;
no process and no file may be left behind. Probes (``probe() == []`` passes iff nothing leaked) check the host's
protection in bubblewrap mode; CI sets GRPO_REQUIRE_BWRAP=1, where bubblewrap's absence is a failure.
"""

# ruff: noqa: E501  (the hostile programs are kept one statement per source line)
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import pytest
from _pkg import mod

sandbox = mod("sandbox")

TESTS = [
    "assert add(1234, 4321) == 5555",
    "assert add(-7, 19) == 12",
    "assert add(0, 3) == 3",
    "assert all(map(lambda p: add(*p) == sum(p), [(5, 6), (7, 8)]))",  # a StopIteration must not end map early
    "try:\n    r = add(10, 1)\nexcept Exception:\n    r = None\nassert r == 11",  # nor may a dead child be caught
]
RIGHT = "def add(a, b):\n    return a + b"
WRONG = "def add(a, b):\n    return a - b"
HAVE_BWRAP = shutil.which("bwrap") is not None
PROJECT = Path(__file__).resolve().parents[1]


def _need_bwrap() -> None:
    if not HAVE_BWRAP:
        if os.environ.get("GRPO_REQUIRE_BWRAP") == "1":
            pytest.fail("GRPO_REQUIRE_BWRAP=1 but bubblewrap is not installed")
        pytest.skip("bubblewrap not installed")


def _need_root_to_look_inside(mode: str) -> None:
    """Jobs see no /proc: a test that reads their IPC namespace (bubblewrap's) or their memory from outside needs
    root (CI runs as root)."""
    if mode.startswith("bwrap") and os.geteuid() != 0:
        pytest.skip("reads a sandbox's namespaces from outside, which needs root")


def _box(isolation: str, **kw: object):
    cfg = {"isolation": isolation, "timeout_s": 1.5, "memory_mb": 256, "workers": 2, "max_procs": 8, **kw}
    return sandbox.Sandbox(sandbox.SandboxConfig(**cfg))


def _unsafe_allowed() -> bool:
    """Whether this machine allows the unsafe mode (as root it needs an interpreter other uids can read)."""
    b = sandbox.Sandbox(sandbox.SandboxConfig(isolation="unsafe-rlimit-only", workers=1))
    try:
        b.start()
        return True
    except sandbox.SandboxUnavailable as exc:
        assert os.geteuid() == 0 and "apt-get install bubblewrap" in str(exc)
        return False
    finally:
        b.close()


def test_unsafe_mode_runs_or_refuses_with_the_fix() -> None:
    """As root with an interpreter other uids cannot read, the unsafe mode refuses (naming the fix) rather than
    run model code as root; elsewhere it runs. ``_unsafe_allowed`` asserts the refusal's reason and message."""
    allowed = _unsafe_allowed()
    assert allowed or os.geteuid() == 0


# The modes every battery runs in: bubblewrap, and the unsafe mode where this machine allows it (as root with an
# interpreter other uids cannot read it refuses, which the test above checks).
MODES = ["bwrap", *(["unsafe-rlimit-only"] if _unsafe_allowed() else [])]


@pytest.fixture(params=MODES)
def box(request: pytest.FixtureRequest):
    if request.param == "bwrap":
        _need_bwrap()
    b = _box(request.param)
    b.start()
    yield b
    b.close()


def _get_add(body: str) -> str:
    return body + "\n" + WRONG if "def add" not in body else body


# Programs that only attack the verdict (safe to run in every mode).
VERDICT = {
    "builtins_bool": "import builtins\nbuiltins.bool = lambda *a: True",
    "builtins_type_and_always_equal": (
        "import builtins\nclass E:\n    def __eq__(s, o): return True\n    __ne__ = lambda s, o: False\n"
        "builtins.type = lambda *a: int\ndef add(a, b): return E()"
    ),
    "always_equal_object": "class E:\n    def __eq__(s, o): return True\ndef add(a, b): return E()",
    "always_equal_int_subclass": "class I(int):\n    def __eq__(s, o): return True\ndef add(a, b): return I(0)",
    "always_equal_str_subclass": "class S(str):\n    __eq__ = lambda s, o: True\ndef add(a, b): return S('x')",
    "always_equal_list_subclass": "class L(list):\n    __eq__ = lambda s, o: True\ndef add(a, b): return L()",
    "builtins_assertionerror": "import builtins\nbuiltins.AssertionError = type('X', (BaseException,), {})",
    "globals_patch": "globals()['__builtins__'].__dict__['AssertionError'] = KeyError",
    "sys_modules_main_patch": (
        "import sys\nfor m in list(sys.modules.values()):\n    d = getattr(m, '__dict__', {})\n"
        "    for k in list(d):\n        if 'eq' in k or 'report' in k or 'verdict' in k:\n"
        "            try: d[k] = (lambda *a, **k: True)\n            except Exception: pass"
    ),
    "gc_patch": (
        "import gc\nfor o in gc.get_objects():\n    if isinstance(o, dict):\n"
        "        for k in list(o):\n            if k in ('status', 'passed', 'nonce', 'report'):\n"
        "                try: o[k] = 'passed'\n                except Exception: pass"
    ),
    "frame_getframe_locals": (
        "import sys\ndef add(a, b):\n    f = sys._getframe()\n    while f:\n"
        "        f.f_locals.update(status='passed', expected=a - b)\n        f = f.f_back\n    return a - b"
    ),
    "inspect_stack_expected": (
        "import inspect, re\ndef add(a, b):\n    for fr in inspect.stack():\n"
        "        for v in fr.frame.f_locals.values():\n            if isinstance(v, str) and '==' in v:\n"
        "                return int(re.findall(r'== *(-?\\d+)', v)[0])\n    return a - b"
    ),
    "traceback_frames": (
        "import sys\ndef add(a, b):\n    try:\n        raise ValueError\n    except ValueError:\n"
        "        f = sys.exc_info()[2].tb_frame\n    while f:\n        for k, v in f.f_globals.items():\n"
        "            if isinstance(v, (list, tuple)) and any('assert' in str(x) for x in v): return v\n"
        "        f = f.f_back\n    return a - b"
    ),
    "read_test_source": (
        "import sys, re\ndef add(a, b):\n    f = sys._getframe(1)\n    while f:\n"
        "        src = str(f.f_code.co_consts) + str(f.f_locals)\n        m = re.search(r'add\\((-?\\d+), (-?\\d+)\\) == (-?\\d+)', src)\n"
        "        if m: return int(m.group(3))\n        f = f.f_back\n    return a - b"
    ),
    "settrace_flip": (
        "import sys\ndef t(frame, event, arg):\n    frame.f_locals['status'] = 'passed'\n    return t\n"
        "sys.settrace(t)\nsys.setprofile(t)"
    ),
    "sys_exit_0": "import sys\nsys.exit(0)",
    "os_exit_0": "import os\nos._exit(0)",
    "raise_systemexit": "raise SystemExit(0)",
    "exit_in_call": "import sys\ndef add(a, b): sys.exit(0)",
    "os_exit_in_call": "import os\ndef add(a, b): os._exit(0)",
    "keyboard_interrupt_in_call": "def add(a, b): raise KeyboardInterrupt",
    "stopiteration_in_call": "def add(a, b): raise StopIteration",
    "exit_after_first_call": "import os\nn = []\ndef add(a, b):\n    n.append(1)\n    if len(n) > 1: os._exit(0)\n    return a - b",
    "print_passed": "print('3 passed\\nok\\nPASSED'); import sys; sys.stderr.write('passed\\n')",
    "forge_reply_frames": (
        "import os, json, struct\nfor v in (5555, 12, 3) * 3:\n    d = json.dumps({'v': v}).encode()\n"
        "    try: os.write(4, struct.pack('!I', len(d)) + d)\n    except OSError: pass"
    ),
    "forge_proc_fds": (
        "import os, json, struct\nd = json.dumps({'v': 5555}).encode()\nd = struct.pack('!I', len(d)) + d\n"
        "for p in os.listdir('/proc'):\n    if p.isdigit():\n        try: fds = os.listdir(f'/proc/{p}/fd')\n"
        "        except OSError: continue\n        for fd in fds:\n"
        "            try:\n                with open(f'/proc/{p}/fd/{fd}', 'wb', buffering=0) as f: f.write(d * 4)\n"
        "            except OSError: pass"
    ),
    "timing_sleep_in_call": "import time\ndef add(a, b):\n    time.sleep(30)\n    return a + b",
    "infinite_loop_at_load": "while True: pass",
    "infinite_loop_in_call": "def add(a, b):\n    while True: pass",
    "fork_bomb": (
        "import os\nfor _ in range(200):\n    try:\n        if os.fork() == 0:\n"
        "            import time; time.sleep(60)\n    except OSError: pass"
    ),
    "fork_answering_child": ("import os, time\nif os.fork() == 0:\n    time.sleep(0.2)\n    os._exit(0)"),
    "join_worker_group": (  # its own process group keeps a member while the job's process moves to the worker's
        "import os, time\nif os.fork() == 0:\n    time.sleep(60)\nos.setpgid(0, os.getpgid(os.getppid()))\n"
        "def add(a, b):\n    time.sleep(60)"
    ),
    "close_channel_and_run": "import os, time\ndef add(a, b):\n    os.close(4)\n    time.sleep(60)",
    "partial_reply_frame": (  # announces a long reply, sends a little of it, then stalls
        "import os, struct, time\ndef add(a, b):\n    os.write(4, struct.pack('!I', 100) + b'{\"v\": 5')\n    time.sleep(60)"
    ),
    "stop_reading_requests": (  # keeps its request pipe open but reads another one that stays empty
        "import os\ndef add(a, b):\n    keep = os.dup(3)\n    r, w = os.pipe()\n    os.dup2(r, 3)\n    return a - b"
    ),
    "setsid_daemon": (  # leaves the job's process group and session, double-forked
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(60)\n"
        "    os._exit(0)\ntime.sleep(0.1)"
    ),
    "memory_bomb": "x = []\nwhile True: x.append(bytearray(50 << 20))",
    "memory_bomb_forked_children": (
        "import os, time\nfor _ in range(6):\n    try:\n        if os.fork() == 0:\n"
        "            b = bytearray(200 << 20)\n            b[::4096] = b'x' * len(b[::4096])\n            time.sleep(30)\n"
        "    except OSError: pass\ntime.sleep(0.5)"
    ),
    "thread_bomb": (
        "import threading, time\nfor _ in range(100):\n    try: threading.Thread(target=time.sleep, args=(30,)).start()\n"
        "    except Exception: pass"
    ),
    "raise_rlimits": "import resource\nfor r in range(16):\n    try: resource.setrlimit(r, (-1, -1))\n    except Exception: pass",
    "deep_nested_return": "def add(a, b):\n    x = []\n    for _ in range(100000): x = [x]\n    return x",
    "huge_return": "def add(a, b): return 'x' * (40 << 20)",
    "non_plain_return": "def add(a, b): return (lambda: 5555)",
    "generator_return": "def add(a, b): return (i for i in [a + b])",
    "nan_return": "def add(a, b): return float('nan')",
    "shadow_builtins_and_helpers": (
        "def sorted(*a): return [5555]\ndef len(*a): return 3\ndef check(*a): return True\n"
        "class AssertionError(Exception): pass\ndef isinstance(*a): return True"
    ),
    "signal_parent": "import os, signal\nfor p in (os.getppid(), 1, -1):\n    try: os.kill(p, signal.SIGKILL)\n    except OSError: pass",
    "close_own_channel": "import os\nos.close(3)\nos.close(4)",
    "ptrace_worker_mem": (
        "import os\nfor p in os.listdir('/proc'):\n    if p.isdigit() and int(p) != os.getpid():\n"
        "        try: open(f'/proc/{p}/mem', 'wb').write(b'x')\n        except OSError: pass"
    ),
    "fill_tmp": "try:\n    with open('/tmp/fill', 'wb') as f:\n        while True: f.write(b'x' * (1 << 20))\nexcept OSError: pass",
    # Replies that cost the trusted side time or memory to decode (ints k * (2**61 - 1) all hash to 0).
    "colliding_set_reply": (
        "import os, struct, time\ndef add(a, b):\n    d = ('{\"v\":{\"s\":[' + ','.join(str(k * (2**61 - 1)) for k in range(1, 40000)) + ']}}').encode()\n"
        "    os.write(4, struct.pack('!I', len(d)) + d)\n    time.sleep(60)"
    ),
    "colliding_names_frame": (  # the first frame the trainer reads: the solution's names, decoded before any test
        "import os, struct\nd = ('{\"names\":{\"f\":[' + ','.join('{\"t\":[%d]}' % (k * (2**61 - 1)) for k in range(1, 40000)) + ']}}').encode()\n"
        "os.write(4, struct.pack('!I', len(d)) + d)"
    ),
    "empty_lists_reply": (
        "import os, struct, time\ndef add(a, b):\n    d = b'{\"v\":[' + b','.join([b'[]'] * (1 << 20)) + b']}'\n"
        "    os.write(4, struct.pack('!I', len(d)) + d)\n    time.sleep(60)"
    ),
    "unreadable_tmp_dir": "import os\nos.makedirs('/tmp/locked/inner', exist_ok=True)\nos.chmod('/tmp/locked/inner', 0)\nos.chmod('/tmp/locked', 0)",
}


def _host_programs(port: int, upath: str, abstract: str, canaries: list[str]) -> dict[str, str]:
    writes = "\n".join(f"try: open({c!r}, 'w').write('x')\nexcept OSError: pass" for c in canaries)
    return {
        "write_host_paths": writes,
        "tcp_host": f"import socket\ntry: socket.create_connection(('127.0.0.1', {port}), timeout=0.5).send(b'hi')\nexcept OSError: pass",
        "udp_host": f"import socket\ntry: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'hi', ('127.0.0.1', {port}))\nexcept OSError: pass",
        "unix_host": f"import socket\ns = socket.socket(socket.AF_UNIX)\ntry: s.connect({upath!r}); s.send(b'hi')\nexcept OSError: pass",
        "abstract_unix_host": f"import socket\ns = socket.socket(socket.AF_UNIX)\ntry: s.connect({abstract!r}); s.send(b'hi')\nexcept OSError: pass",
        "signal_trainer": f"import os, signal\ntry: os.kill({os.getpid()}, signal.SIGTERM)\nexcept OSError: pass",
    }


def _check_health(b) -> None:
    res = b.run_batch([sandbox.Job(WRONG, TESTS), sandbox.Job(RIGHT, TESTS)] * 2)  # on both workers
    assert [r.fraction for r in res] == [0.0, 1.0, 0.0, 1.0], res


def _left_behind(b) -> list[int]:
    """Processes under the workers other than bubblewrap's init, the workers themselves and each worker's next job's
    process, made ahead: a child of the worker's own, which the worker names (by its pid in the worker's namespace)."""
    out = []
    for w in b._workers:
        if w is None:
            continue
        kids = _children(w.proc.pid)  # parents first: bwrap's pid 1, then the worker
        allowed = 2 if b.mode.startswith("bwrap") else 0  # bwrap's pid 1 and the worker
        worker = kids[1] if allowed else w.proc.pid
        level = len(_nspid(worker)) - 1  # the worker's own namespace
        out += [k for k in kids[allowed:] if not (w.spare and _ppid(k) == worker and _nspid(k)[level] == w.spare)]
    return out


def _nspid(pid: int) -> list[int]:
    """A process's pid in each pid namespace it is in, outermost first."""
    with open(f"/proc/{pid}/status") as f:
        return [int(p) for line in f if line.startswith("NSpid:") for p in line.split()[1:]]


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


# The unsafe mode has no filesystem isolation by name: these would write into the host's /tmp. As a normal user
# (not root, so no uid of its own) the job also shares the trainer's uid, and attacks on that uid's processes and
# descriptors would hit the test runner itself.
UNSAFE_SKIP = {"fill_tmp", "unreadable_tmp_dir"}
SAME_UID_HARM = {"signal_parent", "forge_proc_fds", "ptrace_worker_mem"}


def test_hostile_battery(box) -> None:
    assert len(VERDICT) >= 40
    before = set(os.listdir(tempfile.gettempdir()))
    skip = set()
    if box.mode == "unsafe-rlimit-only":
        skip = UNSAFE_SKIP | (SAME_UID_HARM if os.geteuid() != 0 else set())
    for name, code in VERDICT.items():
        if name in skip:
            continue
        (res,) = box.run_batch([sandbox.Job(_get_add(code), TESTS)])
        assert res.n_passed == 0, (name, res)
        assert res.elapsed_s < box.config.timeout_s + 3.0, (name, res)  # ended by the job's own limit, not a lost worker
        _check_health(box)
        assert _left_behind(box) == [], name
    if box.mode.startswith("bwrap"):
        (probe,) = box.run_batch(
            [sandbox.Job("import os\ndef probe(): return os.listdir('/tmp')", ["assert probe() == []"])]
        )
        assert probe.fraction == 1.0, probe
    else:  # job directories live in one directory per worker, removed with the worker; between jobs it holds only
        # the next job's directory, made with its process, and that is empty
        roots = [w.scratch_root for w in box._workers if w is not None]
        dirs = [[os.path.join(r, d) for d in os.listdir(r)] for r in roots]
        assert roots and all(len(d) <= 1 for d in dirs) and all(os.listdir(d) == [] for ds in dirs for d in ds), dirs
        box.close()
        assert [r for r in roots if os.path.exists(r)] == []
        assert {n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("sbx-")} == set()


def test_host_is_out_of_reach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _need_bwrap()
    secret = "SECRET_" + uuid.uuid4().hex
    monkeypatch.setenv("HF_TOKEN", secret)
    site = next(p for p in sys.path if p.endswith("site-packages"))
    canaries = [os.path.join(site, f"zz_{uuid.uuid4().hex}.pth"), str(PROJECT / f"canary_{uuid.uuid4().hex}"),
                f"/root/canary_{uuid.uuid4().hex}", str(tmp_path / "canary")]  # fmt: skip
    got: list[bytes] = []
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    tcp.settimeout(0.1)
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", port))
    udp.settimeout(0.1)
    upath = str(tmp_path / "u.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(upath)
    unix.listen()
    unix.settimeout(0.1)
    abstract = "\0grpo-" + uuid.uuid4().hex
    unix_abs = socket.socket(socket.AF_UNIX)
    unix_abs.bind(abstract)
    unix_abs.listen()
    unix_abs.settimeout(0.1)
    stop = threading.Event()

    def listen() -> None:
        while not stop.is_set():
            for s in (tcp, unix, unix_abs):
                try:
                    got.append(s.accept()[0].recv(10))
                except OSError:
                    pass
            try:
                got.append(udp.recv(10))
            except OSError:
                pass

    th = threading.Thread(target=listen, daemon=True)
    th.start()
    old = signal.signal(signal.SIGTERM, lambda *a: got.append(b"SIGTERM"))
    b = _box("bwrap")
    try:
        for name, code in _host_programs(port, upath, abstract, canaries).items():
            (res,) = b.run_batch([sandbox.Job(_get_add(code), TESTS)])
            assert res.n_passed == 0, (name, res)
            _check_health(b)
        probes = {
            "environ": f"import os\ndef probe():\n    found = []\n    for p in os.listdir('/proc'):\n"
            f"        try: found += [p] if {secret!r}.encode() in open('/proc/' + p + '/environ', 'rb').read() else []\n"
            "        except OSError: pass\n    return found",
            "secret_files": "import os\ndef probe():\n    return [p for p in ('/etc/shadow', '/root', '/home', '/etc', '/run', "
            f"{str(PROJECT)!r}, {site!r}) if os.path.exists(p)]",
            "unprivileged": "import os\ndef probe():\n    return [u for u in (os.getuid(), os.geteuid()) if u == 0]",
            "write_tmp_then_read_next": "def probe():\n    open('/tmp/job_secret', 'w').write('x')\n    return []",
            "read_previous_job": "import os\ndef probe():\n    return os.listdir('/tmp') + os.listdir('/dev/shm')",
        }
        for name, code in probes.items():
            (res,) = b.run_batch([sandbox.Job(code, ["assert probe() == []"])])
            assert res.fraction == 1.0, (name, res)
    finally:
        b.close()
        signal.signal(signal.SIGTERM, old)
        stop.set()
        th.join()
    assert got == []
    assert [c for c in canaries if os.path.exists(c)] == []


def test_statuses_plain_data_and_partial_credit(box) -> None:
    jobs = [
        sandbox.Job(RIGHT, TESTS),
        sandbox.Job("def add(a, b):\n    return a + b if a >= 0 else 0", TESTS),
        sandbox.Job(
            "def add(a, b):\n    raise ValueError('no')", ["try:\n    add(1, 2)\nexcept ValueError:\n    pass"]
        ),
        sandbox.Job(
            "def f(x):\n    return (x, [x], {x: {x}}, frozenset([x]), None, 1.5)",
            ["assert f(2) == (2, [2], {2: {2}}, frozenset([2]), None, 1.5)", "assert f(2) != [2]"],
        ),
        sandbox.Job("def f(x):\n    return x", ["assert f(lambda: 1) == 1"]),  # non-plain argument: fails
        sandbox.Job("def f():\n    while True: pass", ["f()", "assert True"]),
        sandbox.Job(
            "def candidate_impl(x):\n    return x * 2",
            ["def check(candidate):\n    assert candidate(3) == 6\ncheck(candidate_impl)"],
        ),
        sandbox.Job(
            "class S:\n    def __init__(self): self.v = []\n    def push(self, x): self.v.append(x)\n"
            "    def pop(self): return self.v.pop()\n    def __eq__(self, o): return True\ndef make(): return S()",
            [
                "s = make()\ns.push(4)\nassert s.pop() == 4",
                "assert make() == 1",
                "assert make()",
                "assert make().__eq__(1)",
            ],
        ),
    ]
    stalls = (  # stops reading its requests; the next one (1 MiB) does not fit the pipe
        "import os\ndef f(x):\n    keep = os.dup(3)\n    r, w = os.pipe()\n    os.dup2(r, 3)\n    return 1"
    )
    jobs.append(sandbox.Job(stalls, ["assert f(1) == 1", "assert f('x' * (1 << 20)) == 1"]))
    res = box.run_batch(jobs)
    assert [r.fraction for r in res] == [1.0, pytest.approx(4 / 5), 1.0, 1.0, 0.0, 0.0, 1.0, 0.25, 0.5]
    assert res[4].tests[0].status == "error"
    assert [t.status for t in res[5].tests] == ["timeout", "timeout"]
    assert [t.status for t in res[8].tests] == ["passed", "timeout"], res[8]  # the worker was not held
    assert all(r.elapsed_s < box.config.timeout_s + 3.0 for r in res), res


def test_solutions_import_the_standard_library(box) -> None:
    """HumanEval-style solutions import modules the worker has not loaded; the job's unprivileged uid must be able
    to read the interpreter's standard library (as root, bubblewrap makes missing bind parents 0700)."""
    code = (
        "from typing import List\nimport math, collections, itertools, heapq, fractions, decimal, re, json\n"
        "import hashlib, statistics, bisect, functools, string\n"
        "def add(a: int, b: int) -> int:\n"
        "    return int(math.fsum([a, b])) + len(collections.Counter()) + sum(itertools.repeat(0, 2))"
    )
    (res,) = box.run_batch([sandbox.Job(code, TESTS)])
    assert res.fraction == 1.0, res


# (solution, test, score): a value of a subclass of a plain type is compared as Python compares that type, from the
# plain data it holds (never by a method of its class); a standard module the test names is the trainer's own.
VALUES = [
    ("from collections import Counter\ndef f(s): return Counter(s)", "assert f('aab') == {'a': 2, 'b': 1}", 1),
    ("from collections import Counter\ndef f(s): return Counter(s)", "assert f('ab') == collections.Counter('ba')", 1),
    ("import collections\ndef f(): return collections.OrderedDict([('b', 1), ('a', 2)])", "assert f() == {'a': 2, 'b': 1}", 1),
    ("import collections\ndef f(): return collections.defaultdict(list, a=[1])", "assert f() == {'a': [1]}", 1),
    ("from typing import NamedTuple\nclass P(NamedTuple):\n    x: int\n    y: int\ndef f(): return [P(1, 2)]", "assert f() == [(1, 2)]", 1),
    ("import enum\nclass C(enum.IntEnum):\n    RED = 3\ndef f(): return {C.RED: C.RED}", "assert f() == {3: 3}", 1),
    ("import enum\nclass C(str, enum.Enum):\n    RED = 'red'\ndef f(): return C.RED", "assert f() == 'red'", 1),
    ("class Stack(list):\n    def push(self, x): self.append(x)\ndef f(): return Stack()", "s = f()\ns.push(1)\nassert s.pop() == 1", 1),
    # Python's own answer is no: an OrderedDict against one of another order, a Counter with another count
    ("import collections\ndef f(): return collections.OrderedDict([('b', 1), ('a', 2)])",
     "assert f() == collections.OrderedDict([('a', 2), ('b', 1)])", 0),
    ("from collections import Counter\ndef f(s): return Counter(s)", "assert f('aab') == collections.Counter('ab')", 0),
    # subclasses whose __eq__ (or __hash__) lies: compared as the plain value they hold
    ("class I(int):\n    __eq__ = lambda s, o: True\n    __hash__ = lambda s: 0\ndef f(): return {I(0): I(0)}", "assert f() == {3: 3}", 0),
    ("import collections\nclass D(collections.Counter):\n    __eq__ = lambda s, o: True\ndef f(s): return D()",
     "assert f('ab') == {'a': 1, 'b': 1}", 0),
    ("import collections\nP = collections.namedtuple('P', 'x y')\nP.__eq__ = lambda s, o: True\ndef f(): return P(0, 0)", "assert f() == (1, 2)", 0),
    ("import enum\nclass C(enum.IntEnum):\n    RED = 2\n    def __eq__(s, o): return True\ndef f(): return C.RED", "assert f() == 3", 0),
    # modules: the test's math is the trainer's, whether the solution imported math, patched it, or is named math
    ("import math\ndef f(x): return math.sqrt(x)", "assert math.isclose(f(2), 1.41421, rel_tol=1e-3)", 1),
    ("def f(x): return x ** 0.5", "assert math.isclose(f(2), 1.41421, rel_tol=1e-3)", 1),
    ("def f(): return 'b'", "assert os.path.join('a', f()) == 'a/b' and xml.etree.ElementTree.fromstring('<b/>').tag == f()", 1),
    ("import math\nmath.isclose = lambda *a, **k: True\ndef f(x): return 0", "assert math.isclose(f(2), 1.41421, rel_tol=1e-3)", 0),
    ("def math(): pass\nmath.isclose = lambda *a, **k: True\ndef f(x): return 0", "assert math.isclose(f(2), 1.41421)", 0),
    # Unix sockets stay allowed (only they: see test_no_state_outlives_a_job)
    ("import socket\ndef f():\n    a, b = socket.socketpair()\n    a.send(b'x')\n    return b.recv(1).decode()", "assert f() == 'x'", 1),
]


def test_values_compare_as_python_compares_their_plain_type(box) -> None:
    """Both ways in one batch: every right answer scores exactly 1 beside the hostile ones, every wrong one 0."""
    res = box.run_batch([sandbox.Job(code, [test]) for code, test, _ in VALUES])
    assert [r.fraction for r in res] == [float(score) for _, _, score in VALUES], [
        (test, r.tests[0].reason) for (_, test, score), r in zip(VALUES, res, strict=True) if r.fraction != score]


def test_jobs_share_no_state(box) -> None:
    """Each job runs in a fresh process: what one job does to modules the worker preloads, to builtins or to its
    directory (/tmp with bubblewrap) is gone for the next job on the same worker."""
    poison = (
        "import builtins, math, typing, re\nmath.MARK = 1\nmath.fsum = lambda *a: 5555\ntyping.List = None\n"
        "re.compile = None\nbuiltins.len = lambda *a: 0\nopen('mark', 'w').write('x')\n" + RIGHT
    )
    clean = (
        "import builtins, math, os, re\nfrom typing import List\n"
        "def add(a, b):\n    assert not hasattr(math, 'MARK') and List is not None and len([1]) == 1\n"
        "    assert re.compile('x') and not os.path.exists('mark')\n    return int(math.fsum([a, b]))"
    )
    res = box.run_batch([sandbox.Job(poison, TESTS)] * 2 + [sandbox.Job(clean, TESTS)] * 4)
    assert [r.fraction for r in res[2:]] == [1.0] * 4, res  # (the poisoned jobs break their own replies: len)


# A learner that keeps state across jobs through process numbers: each copy reads the mark the previous copy on its
# worker left (its own pid, a thread's id, /proc/self, /proc/loadavg's last pid), then leaves one by starting threads
# until the last id it got is 37 mod 64, so that the next job's pid is 38. It answers right only when it found the
# mark. Where pids are counted in a namespace that outlives the job, every copy after the first scores 1.
PID_LEARNER = (
    "import os, threading\n"
    "def tid():\n    t = threading.Thread(target=len, args=((),))\n    t.start()\n    t.join()\n    return t.native_id\n"
    "def marks():\n    out = [os.getpid() % 64 == 38, tid() % 64 == 39]\n"
    "    for read in (lambda: os.readlink('/proc/self'), lambda: open('/proc/loadavg').read().split()[-1]):\n"
    "        try: out.append(int(read()) % 64 in (38, 39, 40))\n        except (OSError, ValueError): pass\n    return out\n"
    "seen = any(marks())\nfor _ in range(128):\n    if tid() % 64 == 37: break\n"
    "def add(a, b): return a + b if seen else a - b"
)
# What a job can read of process numbers and of the machine's counters: the same for every job, whatever ran before
# (a job that started 40 threads and 3 processes, here).
NUMBERS = (
    "import os, threading\ndef numbers():\n    t = threading.Thread(target=len, args=((),))\n    t.start()\n    t.join()\n"
    "    return [os.getpid(), os.getppid(), t.native_id, os.getpgid(0), os.listdir('/proc')]"
)
CHURN = (
    "import os, threading\nfor _ in range(40):\n    threading.Thread(target=len, args=((),)).start()\n"
    "for _ in range(3):\n    if os.fork() == 0:\n        os._exit(0)\n    os.wait()\n" + RIGHT
)


def test_no_state_crosses_jobs_through_process_numbers(box1) -> None:
    """Each job is pid 1 of a pid namespace of its own and sees no /proc: copies of the pid-counter learner around a
    correct sibling all score 0 (each one after the first scored 1 when the worker's pid namespace outlived its
    jobs), the sibling exactly 1; a job reads the same numbers whatever the job before it did."""
    assert box1.job_pidns, box1._workers[0].hello
    learner = sandbox.Job(PID_LEARNER, TESTS)
    res = box1.run_batch([learner] * 4 + [sandbox.Job(RIGHT, TESTS)] + [learner] * 2)
    assert [r.fraction for r in res] == [0.0] * 4 + [1.0] + [0.0] * 2, res
    _SEEN.clear()
    probe = sandbox.Job(NUMBERS, ["seen.append(numbers())"], helpers="from test_sandbox import _SEEN as seen")
    res = box1.run_batch([probe, sandbox.Job(CHURN, TESTS), probe])
    assert [r.fraction for r in res] == [1.0] * 3, res
    assert _SEEN == [[1, 0, 2, 1, []]] * 2, _SEEN  # pid 1 (its parent outside), its first thread 2, no /proc


_SEEN: list = []  # what the probe's test (run on the trusted side) read from the job


# Kernel objects that outlive a job (or hold memory no process maps): each program answers right only if an earlier
# copy of itself on the same worker left its mark (or it held twice its memory budget outside its processes), so
# any credit shows state crossed from one job to another. _NR: system call numbers without a libc wrapper.
_NR = dict(zip(("add_key", "keyctl", "tgkill", "rt_sigqueueinfo"),
               {"aarch64": (217, 219, 131, 138)}.get(os.uname().machine, (248, 250, 234, 129)), strict=True))  # fmt: skip
_LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
_MARKED = "\ndef add(a, b): return a + b if seen else a - b"
STATE = {
    "sysv_shm_mark": _LIBC + "seen = libc.shmget(0x5EED, 4096, 0) >= 0\nlibc.shmget(0x5EED, 4096, 0o1666)" + _MARKED,
    "sysv_msg_mark": _LIBC + "seen = libc.msgget(0x5EED, 0) >= 0\nlibc.msgget(0x5EED, 0o1666)" + _MARKED,
    "sysv_sem_mark": _LIBC + "seen = libc.semget(0x5EED, 1, 0) >= 0\nlibc.semget(0x5EED, 1, 0o1666)" + _MARKED,
    "posix_mq_mark": (
        _LIBC + "rt = ctypes.CDLL('librt.so.1', use_errno=True)\nseen = rt.mq_open(b'/grpo-mark', os.O_RDONLY) >= 0\n"
        "rt.mq_open(b'/grpo-mark', os.O_RDONLY | os.O_CREAT, 0o666, None)" + _MARKED
    ),
    "user_keyring_mark": (  # keyctl(KEYCTL_SEARCH, user keyring), add_key(..., KEY_SPEC_USER_KEYRING)
        _LIBC + f"seen = libc.syscall({_NR['keyctl']}, 10, -4, b'user', b'grpo-mark', 0) >= 0\n"
        f"libc.syscall({_NR['add_key']}, b'user', b'grpo-mark', b'1', 1, -4)" + _MARKED
    ),
    "session_keyring_mark": (
        _LIBC + f"seen = libc.syscall({_NR['keyctl']}, 10, -3, b'user', b'grpo-mark', 0) >= 0\n"
        f"libc.syscall({_NR['add_key']}, b'user', b'grpo-mark', b'1', 1, -3)" + _MARKED
    ),
    "detached_shm_holds_memory": (  # 32 x 16 MiB, each touched while attached, then detached: mapped by no process
        _LIBC + "libc.shmat.restype = ctypes.c_void_p\nn = 0\nfor _ in range(32):\n"
        "    s = libc.shmget(0, 16 << 20, 0o600)\n    p = libc.shmat(s, None, 0) if s >= 0 else None\n"
        "    if p not in (None, 2**64 - 1):\n        ctypes.memset(p, 1, 16 << 20)\n        libc.shmdt(ctypes.c_void_p(p))\n"
        "        n += 1\nseen = n == 32" + _MARKED
    ),
    # a port left in TIME_WAIT on the worker's loopback (the accepting side closes first): the next job cannot bind it
    "loopback_time_wait_mark": (
        "import socket\ndef busy(port):\n    s = socket.socket()\n    try:\n        s.bind(('127.0.0.1', port))\n"
        "        return False\n    except OSError as e:\n        return e.errno == 98\n    finally:\n        s.close()\n"
        "seen = busy(47123)\ntry:\n    l = socket.socket()\n    l.bind(('127.0.0.1', 47123))\n    l.listen()\n"
        "    c = socket.create_connection(('127.0.0.1', 47123))\n    a, _ = l.accept()\n    a.close(); c.close(); l.close()\n"
        "except OSError: pass" + _MARKED
    ),
    "memfd_holds_memory": (
        "import os\nfds = []\nfor _ in range(32):\n    try:\n        fd = os.memfd_create('x')\n"
        "        os.write(fd, b'x' * (16 << 20))\n        fds.append(fd)\n    except OSError: pass\nseen = len(fds) == 32"
        + _MARKED
    ),
}
# Each tries to stop (or cripple) the worker, so that the next job on it, a correct sibling, fails.
_STOP = "import os, signal\nw = os.getppid()\ntry:\n    {}\nexcept OSError: pass"
WORKER = {
    "sigstop_worker": _STOP.format("os.kill(w, signal.SIGSTOP)"),
    "sigstop_everyone": _STOP.format("os.kill(-1, signal.SIGSTOP)"),
    "sigstop_worker_group": _STOP.format("os.killpg(os.getpgid(w), signal.SIGSTOP)"),
    "join_worker_group_then_kill0": _STOP.format(
        "os.setpgid(0, os.getpgid(w))\n    if os.fork() == 0:\n        os.kill(0, signal.SIGSTOP)\n        os._exit(0)\n    os.wait()"
    ),
    "pidfd_send_signal": _STOP.format("signal.pidfd_send_signal(os.pidfd_open(w), signal.SIGSTOP)"),
    "proc_dir_as_pidfd": _STOP.format("signal.pidfd_send_signal(os.open(f'/proc/{w}', os.O_RDONLY), signal.SIGSTOP)"),
    "tgkill_worker": _STOP.format(f"import ctypes; ctypes.CDLL(None).syscall({_NR['tgkill']}, w, w, signal.SIGSTOP)"),
    "sigqueue_worker": _STOP.format(  # rt_sigqueueinfo with si_code SI_QUEUE (-1)
        "import ctypes; info = (ctypes.c_int * 32)(signal.SIGSTOP, 0, -1)\n"
        f"    ctypes.CDLL(None).syscall({_NR['rt_sigqueueinfo']}, w, signal.SIGSTOP, info)"
    ),
    "sigio_owner_worker": _STOP.format(
        "import fcntl\n    r, x = os.pipe()\n    fcntl.fcntl(r, fcntl.F_SETOWN, w)\n    fcntl.fcntl(r, fcntl.F_SETSIG, signal.SIGSTOP)\n"
        "    fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC)\n    os.write(x, b'x')"
    ),
    "fiosetown_worker": _STOP.format(
        "import fcntl, socket, struct\n    a, b = socket.socketpair()\n    fcntl.ioctl(a, 0x8901, struct.pack('i', w))\n"
        "    fcntl.fcntl(a, fcntl.F_SETFL, os.O_ASYNC)\n    b.send(b'x')"
    ),
    "ptrace_seize_worker": _STOP.format(
        "import ctypes; libc = ctypes.CDLL(None)\n    libc.ptrace(0x4206, w, 0, 0)\n    libc.ptrace(0x4207, w, 0, 0)"  # SEIZE, INTERRUPT
    ),
    "prlimit_worker": _STOP.format("import resource; resource.prlimit(w, resource.RLIMIT_FSIZE, (0, 0))"),
    "worker_priority_and_cpus": _STOP.format(
        "os.setpriority(os.PRIO_PROCESS, w, 19)\n    os.sched_setaffinity(w, {0})"
    ),
}

if os.uname().machine == "x86_64":  # kill(worker, SIGSTOP) through the i386 ABI (int 0x80): other numbers, same kernel
    WORKER["i386_abi_sigstop_worker"] = (
        "import ctypes, mmap, os, struct\nw = os.getppid()\n"
        "code = b'\\xb8\\x25\\x00\\x00\\x00\\xbb' + struct.pack('<i', w) + b'\\xb9\\x13\\x00\\x00\\x00\\xcd\\x80\\xc3'\n"
        "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\nm.write(code)\n"
        "ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()"
    )


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` on the host, parents before their children."""
    out, stack = [], [pid]
    while stack:
        p = stack.pop(0)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
                out += kids
                stack += kids
        except OSError:
            pass
    return out


def _kernel_objects(b) -> list[str]:
    """IPC objects owned by the jobs' uid in their IPC namespace (their worker's with bubblewrap, the host's in
    unsafe mode), and that uid's count of keys, read from outside: jobs see no /proc."""
    w = b._worker(0)
    uid = w.hello["child_uid"] if w.hello["child_uid"] is not None else w.hello["uid"]
    out = []
    for name, col in (("shm", 7), ("msg", 7), ("sem", 4)):
        if b.mode.startswith("bwrap"):  # the sandbox's init: in the worker's namespaces
            inside = ["nsenter", "-t", str(_children(w.proc.pid)[0]), "-i", "cat", f"/proc/sysvipc/{name}"]
            text = subprocess.run(inside, capture_output=True, text=True, check=True).stdout
        else:
            text = Path(f"/proc/sysvipc/{name}").read_text()
        rows = [r.split() for r in text.splitlines()[1:]]
        out += [f"{name} {r[0]} {r[1]}" for r in rows if r[col] == str(uid)]
    if uid != os.getuid():  # a uid of the jobs' own (as root): its keys, counted by the kernel
        out += [line.strip() for line in Path("/proc/key-users").read_text().splitlines()
                if line.split(":")[0].strip() == str(uid)]
    return sorted(out)


@pytest.fixture(params=MODES)
def box1(request: pytest.FixtureRequest):
    """One worker: every job of a batch runs on it, one after the other."""
    if request.param == "bwrap":
        _need_bwrap()
    b = _box(request.param, workers=1)
    b.start()
    yield b
    b.close()


def test_no_state_outlives_a_job(box1) -> None:
    """No job leaves an IPC object or a key a later job on its worker can find, or holds memory outside its budget.
    Copies of one completion around a correct sibling: every copy scores 0 and the sibling 1, nothing is left."""
    _need_root_to_look_inside(box1.mode)
    before = _kernel_objects(box1)
    for name, code in STATE.items():
        hostile = sandbox.Job(code, TESTS)
        res = box1.run_batch([hostile, hostile, sandbox.Job(RIGHT, TESTS), hostile])
        assert [r.fraction for r in res] == [0.0, 0.0, 1.0, 0.0], (name, res)
        assert _kernel_objects(box1) == before, name
        assert _left_behind(box1) == [], name


def test_jobs_cannot_stop_their_worker(box1) -> None:
    """No job can signal, trace, limit or slow its worker: the correct sibling after it, on the same worker, scores
    exactly 1 at once, and the worker is the same one (it was not lost and replaced)."""
    worker = box1._workers[0].proc.pid
    for name, code in WORKER.items():
        hostile = sandbox.Job(_get_add(code), TESTS)
        res = box1.run_batch([hostile, sandbox.Job(RIGHT, TESTS), hostile, sandbox.Job(RIGHT, TESTS)])
        assert [r.fraction for r in res] == [0.0, 1.0, 0.0, 1.0], (name, res)
        assert all(r.elapsed_s < box1.config.timeout_s for r in res), (name, res)
        assert box1._workers[0].proc.pid == worker, name
        assert _left_behind(box1) == [], name


def test_a_retry_on_a_fresh_worker_gets_a_fresh_deadline(box1) -> None:
    """When a worker cannot take the next job (here stopped from outside), that job runs on a fresh worker with its
    whole time: the wait for the failed worker must not be charged to it."""
    box1.run_batch([sandbox.Job(RIGHT, TESTS)])
    w = box1._workers[0]
    stack = [w.proc.pid]
    while stack:
        pid = stack.pop()
        os.kill(pid, signal.SIGSTOP)
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                stack += [int(k) for k in f.read().split()]
    (res,) = box1.run_batch([sandbox.Job(RIGHT, TESTS)])
    assert res.fraction == 1.0, res
    assert box1._workers[0] is not w


HELPER = "def encode_cyclic(s):\n    return s[1:] + s[:1]"
CHECK = "def check(candidate):\n    for s in ('abc', 'hello'):\n        assert candidate(encode_cyclic(s)) == s\ncheck(decode_cyclic)"


def test_the_rows_helpers_cannot_be_replaced(box) -> None:
    """A helper the row defines (HumanEval's ``encode_cyclic``) runs on the trusted side: a solution that redefines
    it and its target as the identity scores 0; right solutions score 1, with or without their own copy of it."""
    identity = "def encode_cyclic(s):\n    return s\ndef decode_cyclic(s):\n    return s"
    right = "def decode_cyclic(s):\n    return s[-1:] + s[:-1]"
    jobs = [sandbox.Job(code, [CHECK], entry_point="decode_cyclic", helpers=HELPER)
            for code in (identity, right, HELPER + "\n" + right)]  # fmt: skip
    jobs.append(sandbox.Job(right, [CHECK], entry_point="decode_cyclic", helpers="raise ValueError('bad row')"))
    res = box.run_batch(jobs)
    assert [r.fraction for r in res] == [0.0, 1.0, 1.0, 0.0], res
    assert "helpers failed" in res[3].error


def _scan(pid: int) -> list[str]:
    """The 12-hex-digit tags after the marker in every private writable mapping of process ``pid`` (read from
    outside: jobs see no /proc); the marker is built at run time, so this source holds none."""
    pat = re.compile(("QQ" + "MA" + "RK").encode() + rb"([0-9a-f]{12})")
    found = set()
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if perms.startswith("rw") and "[v" not in line:
                a, b = (int(x, 16) for x in span.split("-"))
                try:
                    mem.seek(a)
                    found |= {m.decode() for m in pat.findall(mem.read(b - a))}
                except OSError:
                    pass
    return sorted(found)


@pytest.mark.parametrize("mode", MODES)
def test_no_job_reads_an_earlier_job_from_memory(mode: str) -> None:
    """Each job's child is forked from its worker, so it inherits the worker's memory. An earlier job's code, calls,
    answers and file names (a sibling completion's, in GRPO: the same tests, maybe answered right) must not be in
    it. The last job's memory is read while it runs (from outside, as root: a job sees no /proc); the scan finds
    that job's own tag, so it does see its memory."""
    if mode == "bwrap":
        _need_bwrap()
    if os.geteuid() != 0:
        pytest.skip("reads a job's memory from outside, which needs root")
    tag = "QQ" + "MARK"
    code, arg, answer, name, own = (uuid.uuid4().hex[:12] for _ in range(5))
    earlier = (
        f"# {tag}{code}\nopen('{tag}{name}', 'w').close()\n"
        "def answer(reversed_tag, unused):\n    return reversed_tag[::-1]"
    )  # fmt: skip
    test = f"assert answer({(tag + answer)[::-1]!r}, {tag + arg!r}) == {tag + answer!r}"
    allowed = {own} if mode == "bwrap" else {own, name}  # the unsafe mode empties a job's directory itself
    with _box(mode, workers=1) as b:
        assert [r.fraction for r in b.run_batch([sandbox.Job(earlier, [test])] * 3)] == [1.0] * 3
        # the last job's test (run here, on the trusted side) scans that job's process while it waits for a call
        worker = b._workers[0].proc.pid
        last = f"keep = {(tag + own)[::-1]!r}[::-1]\ndef ready():\n    return 1"
        named = b._workers[0].spare  # the process the worker made for the next job: this one
        check = (f"assert ready() == 1\nfound, spare = scan({worker}, {named})\n"
                 f"assert {own!r} in found and set(found) <= {allowed!r} and set(spare) <= {allowed - {own}!r}, (found, spare)")  # fmt: skip
        (res,) = b.run_batch([sandbox.Job(last, [check], helpers="from test_sandbox import _scan_job as scan")])
    assert res.fraction == 1.0, res


def _scan_job(worker: int, named: int) -> tuple[list[str], list[str]]:
    """``_scan`` of the job that runs under ``worker`` now (the process the worker ``named`` by its pid in its own
    namespace when it made it; the job has no children), and of every other process under the worker (the next
    job's, made while this one runs)."""
    procs = [p for p in _children(worker) if not _children(p)]  # not bwrap's init or the worker
    level = len(_nspid(procs[0])) - 2  # the worker's namespace: the job's process is pid 1 of one below it
    job = [p for p in procs if _nspid(p)[level] == named] if named else procs  # 0: not made ahead, the only one
    assert len(job) == 1, (procs, named)
    return _scan(job[0]), sorted({t for p in procs if p != job[0] for t in _scan(p)})


def test_a_broken_channel_ends_the_job_for_every_test() -> None:
    """A malformed reply or a failed worker is never an exception a test can catch and go on to pass."""
    harness = mod("sandbox.harness")
    job = sandbox.Job("", ["try:\n    add(1, 2)\nexcept Exception:\n    pass", "assert True"])
    start = b'{"names": ["add"]}'
    results, _ = harness.run_tests(job, lambda req: b'{"v": 3', start, float("inf"), 100)
    assert [r.status for r in results] == ["error", "error"] and "malformed" in results[0].reason

    def lost(req: bytes) -> bytes:
        raise RuntimeError("worker did not answer in time")

    with pytest.raises(RuntimeError, match="in time"):  # re-raised after the tests: the pool replaces the worker
        harness.run_tests(job, lost, start, float("inf"), 100)


def test_job_budget_covers_all_its_processes(box) -> None:
    """Forked children share one memory budget (256 MiB here) and one process budget (8)."""
    memory = (
        "import os, time\nfor _ in range(6):\n    if os.fork() == 0:\n        b = bytearray(150 << 20)\n"
        "        b[::4096] = b'x' * len(b[::4096])\n        time.sleep(30)\ntime.sleep(1.2)\n" + RIGHT
    )
    procs = (
        "import os, time\nforks = 0\nfor _ in range(40):\n    try:\n        if os.fork() == 0:\n"
        "            time.sleep(30)\n        forks += 1\n    except OSError:\n        break\n"
        "def n():\n    return forks"
    )
    mem, nproc = box.run_batch([sandbox.Job(memory, TESTS[:1]), sandbox.Job(procs, ["assert n() < 8"])])
    assert mem.tests[0].status == "memory" and "budget" in mem.tests[0].reason, mem
    assert nproc.fraction == 1.0, nproc
    assert _left_behind(box) == []


def test_sandboxes_of_one_process_do_not_share_a_process_budget() -> None:
    """As root, RLIMIT_NPROC counts every process of a uid. Workers of several sandboxes in one trainer (a reward, an
    eval, a filter) used to share uids, so idle workers elsewhere used up a job's process budget: its first fork
    failed (EAGAIN). Each worker now has its own uid."""
    _need_bwrap()
    others = [_box("bwrap", workers=1) for _ in range(8)]
    try:
        for other in others:
            other.start()
        forks = "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\n" + RIGHT
        with _box("bwrap", workers=1) as b:
            (res,) = b.run_batch([sandbox.Job(forks, TESTS)])
        assert res.fraction == 1.0, res
    finally:
        for other in others:
            other.close()


def test_refuses_without_bwrap_and_names_the_fix(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-bwrap")
    b = sandbox.Sandbox(sandbox.SandboxConfig(isolation="auto", bwrap_path=missing, workers=1))
    with pytest.raises(sandbox.SandboxUnavailable, match="apt-get install bubblewrap") as err:
        b.run_batch([sandbox.Job(RIGHT, TESTS)])
    assert "\n" not in str(err.value)


def test_config_validates() -> None:
    with pytest.raises(ValueError):
        sandbox.SandboxConfig(isolation="off")
    with pytest.raises(ValueError):
        sandbox.SandboxConfig(timeout_s=0)
    with pytest.raises(ValueError, match="sandbox_bogus"):
        sandbox.SandboxConfig.from_settings({"sandbox_bogus": 1})
    assert sandbox.SandboxConfig(isolation="required").isolation == "bwrap"
    assert sandbox.SandboxConfig.from_settings({"sandbox_timeout_s": 2.0, "lr": 1}).timeout_s == 2.0


def test_wire_reads_only_its_own_json() -> None:
    """Plain data round-trips exactly; a reply in any other encoding (UTF-16/32, a BOM) is refused, not guessed."""
    wire = mod("sandbox.wire")
    value = (1, [2.5, None, True], {"k": {3}}, frozenset({"é"}))
    raw = wire.dumps(wire.encode(value))
    assert raw.isascii() and wire.decode(raw) == value and type(wire.decode(raw)) is tuple
    assert wire.decode(raw.decode()) == value
    for enc in ("utf-16", "utf-32", "utf-8-sig"):
        with pytest.raises(ValueError):
            wire.decode('{"v": 5555}'.encode(enc))
    for bad in (b'{"v": 1} {"v": 2}', b'{"v": ', b"\xff"):
        with pytest.raises(ValueError):
            wire.decode(bad)


def test_package_is_stdlib_only_and_small() -> None:
    pkg = Path(sandbox.__file__).parent
    for f in pkg.glob("*.py"):
        assert len(f.read_text().splitlines()) <= 500, f
    for name in ("worker.py", "jobproc.py", "wire.py", "seccomp.py", "housekeeping.py", "namespaces.py"):  # by path
        assert "from ." not in (pkg / name).read_text()


def test_wire_decodes_hostile_replies_in_bounded_time_and_memory() -> None:
    """The trainer decodes every reply outside the job's limits: whatever a reply holds, it is decoded or refused
    within a second and 64 MiB. Ints k * (2**61 - 1) all hash to 0, and so do floats 2.0 ** (61 k) to 1, tuples
    of them alike: a set or dict of them used to take n**2/2 comparisons (~30 s for 1 MB)."""
    import time
    import tracemalloc

    wire = mod("sandbox.wire")
    p = 2**61 - 1

    def tagged(tag: str, items: list[str]) -> str:
        return "{" + f'"{tag}":[' + ",".join(items) + "]}"

    refused = {
        "colliding ints": tagged("s", [str(k * p) for k in range(1, 40000)]),
        "colliding floats": tagged("f", [repr(2.0 ** (61 * k)) for k in range(17)]),
        "colliding tuples": tagged("s", [tagged("t", [str(k * p), "1"]) for k in range(1, 40000)]),
        "colliding dict keys": tagged("d", [f"[{k * p},0]" for k in range(1, 40000)]),
        "colliding frozensets": tagged("s", [tagged("f", [str(k * p)]) for k in range(1, 40000)]),
        "too many values": "[" + ",".join(["[]"] * (1 << 20)) + "]",  # 3 MiB
        "unhashable item": tagged("s", ["[]"]),
        "deep": "[" * 200000 + "]" * 200000,
    }
    # CPU seconds of this process (time.process_time), not wall time: a loaded machine stretches the latter.
    for name, text in refused.items():
        t0 = time.process_time()
        with pytest.raises((ValueError, RecursionError)):
            wire.decode(text.encode())
        assert time.process_time() - t0 < 1.0, name
    many = wire.MAX_VALUES - 10
    accepted = {  # the most a reply may hold, in its costliest shapes; strings hash with a keyed SipHash
        "empty lists": "[" + ",".join(["[]"] * (many // 2)) + "]",
        "distinct ints": tagged("s", [str(k) for k in range(many // 2)]),
        "distinct strings": tagged("s", [f'"s{k}"' for k in range(many // 2)]),
        "few collisions": tagged("s", [str(k * p) for k in range(1, 9)] + ["-1", "-2"]),  # hash(-1) == hash(-2)
        "long string": '"' + "x" * (wire.MAX_FRAME - 16) + '"',
    }
    for name, text in accepted.items():
        t0 = time.process_time()
        wire.decode(text.encode())
        assert time.process_time() - t0 < 1.0, name
        tracemalloc.start()
        try:
            wire.decode(text.encode())
            assert tracemalloc.get_traced_memory()[1] < 64 << 20, name
        finally:
            tracemalloc.stop()
    assert wire.decode(tagged("s", [str(k * p) for k in range(1, 9)])) == {k * p for k in range(1, 9)}


def test_seccomp_filter_is_built_for_each_supported_abi() -> None:
    """The filter assembles for x86_64 and aarch64 (every jump within reach) and is refused for any other machine."""
    seccomp = mod("sandbox.seccomp")
    for machine in ("x86_64", "aarch64"):
        program = seccomp.program(machine, [1, 2, 3])
        assert len(program) % 8 == 0 and 40 < len(program) // 8 < 256
    with pytest.raises(ValueError, match="x86_64 and aarch64"):
        seccomp.program("riscv64", [1])
