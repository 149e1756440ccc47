"""The doctor's report: one :class:`Check` per line, its status and (unless it passed) its fix, then the count of
blockers and warnings; exit status 1 when something blocks training."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

OK, WARN, BLOCK = "ok", "warning", "BLOCKER"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    message: str
    fix: str = ""

    def line(self) -> str:
        text = f"[{self.status:>7}] {self.name}: {self.message}"
        return text + (f" -> {self.fix}" if self.fix and self.status != OK else "")


def report(path: str | Path, checks: list[Check]) -> int:
    """Print the checks of the config at ``path``, one per line, and their count; 1 when one blocks, else 0."""
    print(f"doctor: {path}")
    for check in checks:
        print(check.line())
    blockers = [check for check in checks if check.status == BLOCK]
    print(f"{len(blockers)} blocker(s), {sum(c.status == WARN for c in checks)} warning(s)")
    return 1 if blockers else 0
