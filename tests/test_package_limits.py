"""The generated package stays readable: no module over 400 lines and no function over 60, for every task (the
package as rendered: the template's package plus the task's own files, which the post-gen hook moves into it;
tests excepted). The template's Python parses before rendering and its Jinja sits in one-line string literals, so
the unrendered sources have the rendered line counts."""

import ast
from pathlib import Path

import pytest
from conftest import TEMPLATE, task_names

PKG = "{{cookiecutter.package_name}}"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def package_files(task: str) -> dict[str, Path]:
    """The rendered package's Python files for ``task``, by path inside the package (tests left out)."""
    files = {}
    for base in (TEMPLATE / PKG, TEMPLATE / "_tasks" / task / PKG):
        for path in sorted(base.rglob("*.py")):
            relative = path.relative_to(base)
            if "tests" in relative.parts or relative.name.startswith("test_") or "__pycache__" in relative.parts:
                continue
            files[relative.as_posix()] = path
    return files


def offenders(task: str) -> tuple[list[str], list[str]]:
    """(modules over MAX_MODULE_LINES, functions over MAX_FUNCTION_LINES), each as ``path[:line name] (N lines)``."""
    modules, functions = [], []
    for name, path in package_files(task).items():
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            modules.append(f"{name} ({lines} lines)")
        for node in ast.walk(ast.parse(source, filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    functions.append(f"{name}:{node.lineno} {node.name} ({length} lines)")
    return modules, functions


def test_the_package_has_the_task_files():
    files = package_files("code")
    assert "preflight/estimator.py" in files and "sandbox/worker.py" in files
    assert "rewards/math_answer.py" in package_files("math") and "rewards/task.py" in package_files("json")


@pytest.mark.parametrize("task", task_names())
def test_no_long_module_or_function_in_the_package(task):
    modules, functions = offenders(task)
    problems = ([f"modules over {MAX_MODULE_LINES} lines: {', '.join(modules)}"] if modules else []) + (
        [f"functions over {MAX_FUNCTION_LINES} lines: {', '.join(functions)}"] if functions else [])
    assert not problems, "; ".join(problems)
