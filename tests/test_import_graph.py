"""The generated package is a house with floors: every module imports only from its own floor or the floors below,
and no import goes round in a circle, for every task (the package as rendered: the template's package plus the
task's own files; the backend changes no import). Imports inside functions count as much as those at the top: a
late import is still an arrow.

Checked at two levels: modules (``training.train`` -> ``config``) and units (a subpackage such as ``preflight``, or
a top-level module such as ``config``), each unit placed on one floor of ``FLOORS``. A new module or subpackage must
be given a floor here, so that where it may be imported from is a decision, not an accident."""

import ast
from collections import defaultdict
from functools import cache

import pytest
from conftest import task_names
from test_package_limits import package_files

# Lowest first. A unit may import its own floor and those below; a floor's units may import each other, circles not.
FLOORS = (
    # files, constants, the defaults table, option spelling, hub ids, the answer format, the task contract
    ("ground", {"", "answer_format", "constants", "contract", "files", "flags", "hub", "settings"}),
    ("task", {"audit_cases", "data", "rewards", "sandbox", "task"}),  # the task: its rows, rewards and sandbox
    ("settings", {"audit", "config", "known", "rules", "selfcheck"}),  # the parsed and checked settings, the audit
    ("preflight", {"preflight"}),  # before a run: the memory estimate, the doctor, the launch checks
    ("evaluation", {"evaluation"}),
    ("training", {"training"}),
    ("commands", {"chat", "commands", "download", "filtering", "merge", "plots"}),  # the commands on top
)


def module_name(relative: str) -> str:
    """``training/train.py`` -> ``training.train``; ``preflight/__init__.py`` -> ``preflight``; the package's own
    ``__init__.py`` -> ``""``."""
    parts = relative.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    return module.split(".")[0]


def imported(module: str, is_package: bool, node: ast.ImportFrom, modules: set[str]) -> set[str]:
    """The project's modules one relative ``from ... import`` names (a module imported by name, or the module the
    names come from); absolute imports name other distributions (the package's own name is never written)."""
    if not node.level:
        return set()
    base = module.split(".") if module else []
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    source = ".".join(base + ([node.module] if node.module else []))
    found = set()
    for alias in node.names:
        child = f"{source}.{alias.name}" if source else alias.name
        found.add(child if child in modules else source)
    return found


@cache
def import_graph(task: str) -> dict[str, frozenset[str]]:
    """Each module of the rendered package -> the package's modules it imports (anywhere in its body)."""
    files = package_files(task)
    modules = {module_name(name) for name in files}
    graph = {}
    for name, path in files.items():
        module = module_name(name)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                targets |= imported(module, name.endswith("__init__.py"), node, modules)
        graph[module] = frozenset(targets - {module})
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted: the import circles."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def floor_of(unit: str) -> int | None:
    return next((level for level, (_, units) in enumerate(FLOORS) if unit in units), None)


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units = defaultdict(set)
    for module, targets in graph.items():
        units[unit_of(module)] |= {unit_of(target) for target in targets} - {unit_of(module)}
    return dict(units)


def arrows_up(graph: dict[str, set[str]]) -> list[str]:
    """``module -> target`` for every import from a lower floor to a higher one."""
    return sorted(f"{module or '<package>'} ({FLOORS[floor_of(unit_of(module))][0]}) -> {target} "
                  f"({FLOORS[floor_of(unit_of(target))][0]})"
                  for module, targets in graph.items() for target in targets
                  if (floor_of(unit_of(target)) or 0) > (floor_of(unit_of(module)) or 0))


@pytest.mark.parametrize("task", task_names())
def test_every_unit_has_a_floor(task):
    homeless = sorted({unit_of(module) for module in import_graph(task)} - set().union(*(u for _, u in FLOORS)))
    assert not homeless, f"give these a floor in FLOORS (tests/test_import_graph.py): {homeless}"


@pytest.mark.parametrize("task", task_names())
def test_no_import_circle(task):
    graph = import_graph(task)
    assert not circles(graph), f"modules importing each other round a circle: {circles(graph)}"
    assert not circles(unit_graph(graph)), f"subpackages/modules in a circle: {circles(unit_graph(graph))}"


@pytest.mark.parametrize("task", task_names())
def test_no_import_from_a_lower_floor_to_a_higher_one(task):
    up = arrows_up(import_graph(task))
    assert not up, "imports from a lower floor to a higher one: " + "; ".join(up)


def test_the_checks_see_a_circle_and_an_arrow_up():
    graph = import_graph("math")
    assert {"config", "preflight.launch_checks", "training.checkpoints"} <= graph["training.train"]  # top-level
    assert "preflight.launch_checks" in graph["preflight.machine"]  # an import inside a function counts
    bent = {**graph, "constants": {"audit"}, "audit": graph["audit"] | {"constants"}}
    assert any({"audit", "constants"} <= set(circle) for circle in circles(bent))
    assert "constants (ground) -> audit (settings)" in arrows_up(bent)
    assert circles(unit_graph({"preflight.machine": {"training.train"}, "training.train": {"preflight.launch"}}))
