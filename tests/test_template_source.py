"""The template's Python is Python before rendering: every .py file parses, Jinja appears only inside string
literals (a substituted value, never a code path), and ruff lints the unrendered source."""

import ast
import io
import subprocess
import sys
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
