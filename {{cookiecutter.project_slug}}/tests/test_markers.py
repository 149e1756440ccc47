"""conftest.ANY_TASK names real test modules and tests (a renamed test would silently leave the list)."""

import ast
from pathlib import Path

from conftest import ANY_TASK

TESTS = Path(__file__).resolve().parent


def test_every_any_task_entry_names_a_test():
    for entry in ANY_TASK:
        module, _, name = entry.partition("::")
        path = TESTS / module
        assert path.is_file(), entry
        if name:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            assert name in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}, entry
