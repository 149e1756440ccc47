"""The template's Python is Python before rendering: every .py file parses, Jinja appears only inside string
literals (a substituted value, never a code path), and ruff lints the unrendered source."""

import ast
import io
import os
import re
import subprocess
import sys
import time
import tokenize

import pytest
from conftest import ROOT

SKIP = {".git", ".venv", "build", "__pycache__", ".pytest_cache", ".ruff_cache"}
PY_FILES = sorted(p for p in ROOT.rglob("*.py") if not SKIP & set(p.relative_to(ROOT).parts))
MARKERS = ("{{", "{%", "{#")


def test_the_template_has_python_files():
    names = {str(p.relative_to(ROOT)) for p in PY_FILES}
    assert "hooks/pre_gen_project.py" in names and "{{cookiecutter.project_slug}}/train.py" in names
    assert {"{{cookiecutter.project_slug}}/" + name for name in ("merge.py", "chat.py")} <= names  # the launchers
    assert any("_tasks/code/" in name for name in names)


@pytest.mark.parametrize("path", PY_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_parses_unrendered_and_jinja_only_in_strings(path):
    source = path.read_text(encoding="utf-8")
    ast.parse(source, filename=str(path))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if any(marker in token.string for marker in MARKERS):
            assert token.type == tokenize.STRING, f"{path.name}:{token.start[0]}: Jinja outside a string literal"


def test_ruff_lints_the_template_source():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", "ruff.toml", "."],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:]


CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def test_torch_is_installed_the_same_way_everywhere():
    """One torch pin; the Makefile installs the CPU build from the CPU index, the READMEs give that command for CPU
    and plain PyPI (the CUDA build) for a GPU, and say which is which."""
    makefile = (ROOT / "Makefile").read_text()
    readme = (ROOT / "README.md").read_text()
    project_readme = (ROOT / "{{cookiecutter.project_slug}}" / "README.md").read_text()
    pins = {re.search(r"torch==([0-9.]+)", text).group(1) for text in (
        makefile, (ROOT / "requirements-dev.txt").read_text(),
        (ROOT / "{{cookiecutter.project_slug}}" / "pyproject.toml").read_text(), readme, project_readme,
        (ROOT / "hooks" / "post_gen_project.py").read_text(),
        (ROOT / "{{cookiecutter.project_slug}}" / "scripts" / "install.sh").read_text())}
    assert len(pins) == 1, pins
    cpu = f"pip install torch=={pins.pop()} --index-url {CPU_INDEX}"
    assert f"TORCH_INDEX ?= {CPU_INDEX}" in makefile and "--index-url $(TORCH_INDEX)" in makefile
    installs = [line for line in makefile.splitlines() if "pip install" in line and "-r " not in line]
    assert [line.split("--quiet ")[1].rstrip("; \\") for line in installs] == ["$(TORCH)", "$(TORCH_PIN)"], installs
    assert cpu in readme and cpu in project_readme and cpu in (ROOT / "requirements-dev.txt").read_text()
    # the project README's CPU command gives up on an index that does not answer and falls back, as make does
    assert re.search(rf"{re.escape(cpu)} --timeout \d+ --retries 1 \\\n +\|\| pip install torch==[0-9.]+\n",
                     project_readme)
    gpu = re.search(r"^# or with an NVIDIA GPU.*\n(pip install torch==[0-9.]+)\n", project_readme, re.MULTILINE)
    assert gpu and "CUDA" in gpu.group(0) and "--index-url" not in gpu.group(1)
    assert re.search(r"pip install torch==[0-9.]+ && .*# GPU machine: PyPI's torch is the CUDA", readme)


@pytest.mark.parametrize("backend", ["trl", "unsloth"])
def test_the_gpu_extra_comment_names_only_what_it_installs(backend):
    from stacks import render_pyproject, render_pyproject_text

    text = render_pyproject_text({"backend": backend, "gpu": "24gb"})
    gpu = render_pyproject({"backend": backend, "gpu": "24gb"})["project"]["optional-dependencies"]["gpu"]
    comment = next(line for line in text.splitlines() if line.startswith("# gpu:"))
    assert ("DeepSpeed" in comment) == any(req.startswith("deepspeed==") for req in gpu), (comment, gpu)


@pytest.mark.parametrize("index", ["http://127.0.0.1:9/whl/cpu", ""])
def test_make_installs_torch_from_pips_own_index_within_seconds_when_the_torch_index_is_unreachable(tmp_path, index):
    pip = tmp_path / "pip"
    pip.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/args\n")
    pip.chmod(0o755)
    started = time.monotonic()
    done = subprocess.run(["make", "-s", "torch", f"BIN={tmp_path}", f"TORCH_INDEX={index}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    assert time.monotonic() - started < 15
    args = (tmp_path / "args").read_text().split()
    assert args[:3] == ["install", "--quiet", "torch==2.13.0"] and "--index-url" not in args
    assert ("did not answer within 5 s" in done.stdout) == bool(index), done.stdout


def test_every_install_of_make_prints_a_line_while_it_runs():
    """make is never silent for long: each pip install runs under the project's scripts/with_progress.sh (which the
    project's scripts/install.sh uses too), which prints a line when it starts, every PROGRESS_EVERY_S while the
    command runs, and when it ends, with the command's exit status."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    installs = [i for i, line in enumerate(lines) if "pip install" in line]
    assert installs
    for i in installs:
        assert "$(PROGRESS)" in lines[i] or "$(PROGRESS)" in lines[i - 1], lines[i]
    script = ROOT / "{{cookiecutter.project_slug}}" / "scripts" / "with_progress.sh"
    started = time.monotonic()
    done = subprocess.run(["sh", str(script), "waiting", "sh", "-c", "sleep 1.6; exit 3"], capture_output=True,
                          text=True, timeout=30, env={**os.environ, "PROGRESS_EVERY_S": "0.5"})
    assert time.monotonic() - started < 5  # the output closes with the command, not with the ticker's sleep
    out = done.stdout.splitlines()
    assert done.returncode == 3 and out[0] == "waiting ..." and out[-1].startswith("waiting: failed (exit 3)")
    assert sum(line.startswith("  ... still waiting") for line in out) >= 2, out
