"""The code sandbox's hostile battery in its unsafe mode, which the generated suite cannot run as root here.

``isolation: unsafe-rlimit-only`` runs model code under rlimits as a per-worker uid. That uid must read the
interpreter, the project and the test tools; as root with the interpreter under ``/root`` (pyenv), the mode refuses
(``test_unsafe_mode_runs_or_refuses_with_the_fix``) and the generated suite runs its battery with bubblewrap only.
Here the battery's unsafe half runs under the system Python, from a directory every uid can read, so that both
modes the project allows are covered.
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT
from cookiecutter.main import cookiecutter

SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with its venv module and PyYAML (python3-venv, python3-yaml)


def pytest_pin() -> str:
    pins = (ROOT / "requirements-dev.txt").read_text().splitlines()
    return next(line.strip() for line in pins if line.startswith("pytest=="))


def test_the_hostile_battery_passes_in_the_unsafe_mode(tmp_path):
    usable = os.path.exists(SYSTEM_PYTHON) and subprocess.run(
        [SYSTEM_PYTHON, "-c", "import ensurepip, venv, yaml"], capture_output=True, check=False).returncode == 0
    if not usable:
        message = f"{SYSTEM_PYTHON} with venv and PyYAML is needed (apt-get install python3-venv python3-yaml)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    base = Path(tempfile.mkdtemp(prefix="grpo-unsafe-", dir="/tmp"))
    try:
        base.chmod(0o755)
        cookiecutter(str(ROOT), no_input=True, output_dir=str(base),
                     extra_context={"task": "code", "smoke_test": "skip"})
        venv = base / "venv"
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", pytest_pin()], check=True,
                       capture_output=True)
        subprocess.run(["chmod", "-R", "a+rX", str(base)], check=True)
        (base / "tmp").mkdir(mode=0o1777)
        (base / "tmp").chmod(0o1777)  # the suite counts what jobs leave here: its own, not the machine's /tmp
        done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-v", "-p", "no:cacheprovider",
                               "tests/test_sandbox.py", "-k", "unsafe"],
                              cwd=base / "grpo-reasoner", capture_output=True, text=True, timeout=1200, check=False,
                              env={**os.environ, "TMPDIR": str(base / "tmp")})
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        ran = re.findall(r"::(\w+)\[[^\]]*unsafe-rlimit-only[^\]]*\] PASSED", done.stdout)
        # every battery of the suite, in the unsafe mode (not the refusal test alone)
        assert {"test_hostile_battery", "test_no_state_outlives_a_job",
                "test_jobs_cannot_stop_their_worker"} <= set(ran), done.stdout[-4000:]
        assert "SKIPPED" not in done.stdout and "FAILED" not in done.stdout, done.stdout[-4000:]
    finally:
        shutil.rmtree(base, ignore_errors=True)
