"""Settings, jobs and results of the sandbox (plain data; no behaviour beyond validation)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

Status = Literal["passed", "failed", "error", "timeout", "memory"]
SAFE = "bwrap"
UNSAFE = "unsafe-rlimit-only"
_ALIASES = {"auto": SAFE, "required": SAFE, "bwrap": SAFE, UNSAFE: UNSAFE}
ISOLATION_MODES = tuple(_ALIASES)  # what sandbox_isolation accepts
INSTALL_HINT = "apt-get install bubblewrap"


# The bounds of the sandbox's settings, one table: SandboxConfig checks them, and so does a config's sandbox_* settings
# (task.TaskArguments) while it is parsed. setting: (test of the value, what the value must be)
BOUNDS = {
    "timeout_s": (lambda value: value > 0, "must be a positive number of seconds (e.g. 3)"),
    "memory_mb": (lambda value: value >= 32, "must be at least 32 (e.g. 512)"),
    "workers": (lambda value: value >= 0, "must be 0 (one per available core) or more"),
    "max_procs": (lambda value: value >= 1, "must be at least 1"),
}


def bound_problems(values: dict[str, Any], prefix: str = "") -> list[str]:
    """One line per value outside its bound, starting with the setting's name (``prefix`` + the key)."""
    return [f"{prefix}{key}: {values[key]!r} {wanted}" for key, (test, wanted) in BOUNDS.items()
            if key in values and not test(values[key])]


class SandboxUnavailable(RuntimeError):
    """Bubblewrap is missing or cannot start, and the unsafe mode was not chosen explicitly."""


@dataclass(frozen=True)
class SandboxConfig:
    """How model-written code is run; see the package docstring for what each bound means."""

    isolation: str = SAFE  # "bwrap" ("auto"/"required" are the same) or "unsafe-rlimit-only"
    timeout_s: float = 3.0  # wall clock per job: loading the solution and every call its tests make
    memory_mb: int = 512  # all processes of a job together
    workers: int = 0  # 0 = one per available core, at most 8
    max_procs: int = 16  # processes (and threads) of a job together
    max_file_mb: int = 16  # largest file a job may write
    tmp_mb: int = 64  # size of the job's private /tmp (bubblewrap mode)
    max_calls: int = 10_000  # calls into the solution per job
    bwrap_path: str | None = None  # None = "bwrap" on PATH

    def __post_init__(self) -> None:
        mode = _ALIASES.get(str(self.isolation))
        if mode is None:
            raise ValueError(f"sandbox isolation must be 'bwrap' (or 'auto'/'required') or '{UNSAFE}', "
                             f"not {self.isolation!r}")  # fmt: skip
        object.__setattr__(self, "isolation", mode)
        problems = bound_problems({key: getattr(self, key) for key in BOUNDS})
        if problems:
            raise ValueError(f"sandbox {problems[0]}")

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> SandboxConfig:
        """From flat ``sandbox_*`` settings (YAML keys such as ``sandbox_isolation``); unknown ones are errors."""
        names = {f.name for f in fields(cls)}
        picked = {k[len("sandbox_") :]: v for k, v in settings.items() if k.startswith("sandbox_")}
        unknown = sorted(set(picked) - names)
        if unknown:
            raise ValueError(f"unknown sandbox settings: {', '.join('sandbox_' + k for k in unknown)}")
        return cls(**picked)


@dataclass
class Job:
    """A solution and the test snippets the trusted side runs against its functions."""

    code: str
    tests: list[str]
    timeout_s: float | None = None  # None = the configured default
    entry_point: str | None = None  # a function the tests call under another name (``candidate``), if any
    # Trusted code of the row run here before the tests, in their namespace (the helpers its prompt defines, such as
    # HumanEval's ``encode_cyclic``): a name it defines is never taken from the solution, other than ``entry_point``.
    helpers: str = ""


@dataclass
class TestResult:
    status: Status
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class Result:
    """One job's outcome; every verdict was decided by the trusted side."""

    tests: list[TestResult] = field(default_factory=list)
    error: str = ""  # the solution did not load, or the sandbox failed
    elapsed_s: float = 0.0
    isolation: str = ""

    @property
    def ran(self) -> bool:
        return not self.error and all(t.status in ("passed", "failed") for t in self.tests)

    @property
    def n_passed(self) -> int:
        return sum(t.passed for t in self.tests)

    @property
    def fraction(self) -> float:
        return self.n_passed / len(self.tests) if self.tests else 0.0
