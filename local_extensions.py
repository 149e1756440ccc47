"""The Jinja extensions this template loads (``_extensions`` in cookiecutter.json).

``Refusals``: unsupported answers end in one line. A pre-generation hook that exits non-zero makes cookiecutter log
its own 11-line traceback after the hook's reason. The same rules, run as the filter ``refuse_unsupported`` while
cookiecutter renders the private ``__refusals`` variable (after the last answer), end in cookiecutter's one-line
report instead: the filter raises the exception a failed hook raises (``FailedHookException``), which cookiecutter's
command line prints as one line and exits 1, and which callers of ``cookiecutter()`` see exactly as they saw a failed
hook. The rules live in ``hooks/pre_gen_project.py`` (``validate``), which still runs as the pre-generation hook.
The filter also reads the chosen task's spec, so an incomplete one is refused before anything is written.

``TaskSpecs``: the global ``task_spec(name)``, one task's template settings as the project's ``configs/*.yaml``,
``pyproject.toml`` and ``README.md`` read them: ``_tasks/<task>/task.toml`` (data) and ``_tasks/<task>/task.md``
(README prose, one ``## <section>`` each). ``SPEC`` and ``SECTIONS`` below list what the files hold; a missing or
bad entry ends in one line naming the file and the key.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from jinja2.ext import Extension

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser as a package
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        tomllib = None

ROOT = Path(__file__).resolve().parent
TASKS = ROOT / "{{cookiecutter.project_slug}}" / "_tasks"
SPEC_FILES = ("task.toml", "task.md")  # a task folder's template settings; the post-generation hook leaves them

# task.toml: key -> (type, default); no default = required
SPEC = {
    "dataset": (dict, None),  # dataset_name, dataset_train_split, dataset_test_split, dataset_config (optional)
    "reward_mixes": (dict, None),  # one table per reward_mix choice: reward name -> weight
    "dependencies": (list, []),  # the task's pinned requirements (pyproject.toml)
    "smoke_max_completion_length": (int, None),
    "smoke_learning_rate": (str, None),  # a number, written into configs/smoke.yaml as it is spelled
    "smoke_max_steps": (int, None),
    "readme_columns": (list, None),  # the row contract: [[readme_columns]] name, type, required, meaning
    "readme_chat_prompt": (str, None),  # chat.py's argument in the README, one shell word (its quotes included)
    "readme_files": (list, []),  # [[readme_files]] path, meaning: the task's own package files
    "readme_rewards": (list, []),  # [[readme_rewards]] name, range, meaning: the task's rewards besides correctness
    "preset_settings": (dict, {}),  # comment, default, <preset>: the task's lines in every preset config
}
TABLES = {  # the fields of each entry of a list of tables (all required, strings unless named here)
    "readme_columns": ("name", "type", "required", "meaning"),
    "readme_files": ("path", "meaning"),
    "readme_rewards": ("name", "range", "meaning"),
}
DATASET = ("dataset_name", "dataset_config", "dataset_train_split", "dataset_test_split")
# task.md: section -> (attribute, required); curriculum is a list of three items, the others are text
SECTIONS = {
    "data": ("readme_data", True),  # the default dataset, the README's "Data" section
    "correctness": ("readme_correctness", True),  # what the correctness reward scores, its row of the rewards table
    "without tags": ("readme_untagged", False),  # what correctness reads without the answer format (none: nothing)
    "curriculum": ("readme_curriculum", True),  # what priming teaches, what GRPO must learn, what eval holds out
    "bounds": ("readme_bounds", False),  # how the verifier stays bounded on any input
    "audit cases": ("readme_audit_cases", False),  # the known-wrong completions of audit_cases.py
}
CURRICULUM_ITEMS = 3
KINDS = {dict: "a table", list: "a list", str: "a string", int: "an integer", bool: "true or false"}
COMMENT = re.compile(r"<!--.*?-->\n?", re.S)
HEADING = re.compile(r"^## (.+?)\s*$", re.M)


class TaskSpecError(ValueError):
    """A task's spec files are missing something or hold something of the wrong shape (one line)."""


def options() -> dict:
    return json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))


def rules():
    """hooks/pre_gen_project.py as a module (its Jinja sits only under ``__main__``)."""
    spec = importlib.util.spec_from_file_location("grpo_template_pre_gen", ROOT / "hooks" / "pre_gen_project.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def refuse_unsupported(answers) -> str:
    """Nothing when the answers are supported and the task's spec complete; else raise cookiecutter's
    FailedHookException with one line."""
    from cookiecutter.exceptions import FailedHookException

    errors = rules().validate(dict(answers), options())
    if not errors:
        try:
            load_task_spec(TASKS / answers["task"])
        except TaskSpecError as error:
            errors = [str(error)]
    if errors:
        raise FailedHookException(f"error: {'; '.join(errors)} (nothing was written)")
    return ""


def yaml_value(value) -> str:
    """A TOML value as a YAML scalar: a string as written, a bool as true/false, a number with a dot before any
    exponent (YAML 1.1 reads ``1e-05`` as a string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        return text if "." in text or "e" not in text else text.replace("e", ".0e")
    return str(value)


class TaskTemplate:
    """One task's settings: the keys of task.toml and the sections of task.md (``SECTIONS``) as attributes."""

    def __init__(self, fields: dict) -> None:
        fields = dict(fields)
        self._presets = fields.pop("preset_settings")
        self.__dict__.update(fields)

    def preset_settings(self, preset: str) -> str:
        """The task's lines of configs/<preset>.yaml (``preset`` is the file's stem), a blank line after them."""
        table = self._presets
        values = {**table.get("default", {}), **table.get(preset, {})}
        lines = [f"# {table['comment']}"] if values and "comment" in table else []
        lines += [f"{key}: {yaml_value(value)}" for key, value in values.items()]
        return "".join(line + "\n" for line in lines) + "\n" if lines else ""


def _where(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _check(ok: bool, where: str, message: str) -> None:
    if not ok:
        raise TaskSpecError(f"{where}: {message}")


def _known(where: str, given, allowed, hint: str = "", prefix: str = "") -> None:
    extra = [key for key in given if key not in allowed]
    if extra:
        raise TaskSpecError(f"{where}: unknown key '{prefix}{extra[0]}'{hint}")


def _kind(value, kind) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:  # a weight or a number: an int is one too
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, kind)


def _number_text(value) -> bool:
    try:
        return isinstance(value, str) and float(value) == float(value)
    except ValueError:
        return False


def _data(path: Path) -> dict:
    """task.toml, checked against ``SPEC``; defaults filled in."""
    where = _where(path)
    _check(path.is_file(), where, "not found (every task folder has one)")
    _check(tomllib is not None, where, "reading it needs Python 3.11+ (tomllib) or `pip install tomli`")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise TaskSpecError(f"{where}: {error}") from None
    _known(where, raw, SPEC, f" (keys: {', '.join(SPEC)})")
    data = {}
    for key, (kind, default) in SPEC.items():
        _check(key in raw or default is not None, where, f"missing key {key!r}")
        value = raw.get(key, default)
        _check(_kind(value, kind) or key == "smoke_learning_rate", where, f"{key!r} must be {KINDS[kind]}")
        data[key] = value

    dataset = data["dataset"]
    for name in DATASET:
        _check(name == "dataset_config" or name in dataset, where, f"missing key 'dataset.{name}'")
        _check(isinstance(dataset.get(name, ""), str), where, f"'dataset.{name}' must be a string")
    _known(where, dataset, DATASET, prefix="dataset.")
    data["dataset"] = {name: dataset.get(name) for name in DATASET}  # dataset_config: None when absent

    mixes = data["reward_mixes"]
    choices = options()["reward_mix"]
    for mix in choices:
        _check(mix in mixes, where, f"missing key 'reward_mixes.{mix}' (one per reward_mix choice)")
        weights = mixes[mix]
        _check(isinstance(weights, dict) and weights, where, f"'reward_mixes.{mix}' must be a table: reward = weight")
        for name, weight in weights.items():
            _check(_kind(weight, float), where, f"'reward_mixes.{mix}.{name}' must be a number")
    _known(where, mixes, choices, " (not a reward_mix choice)", prefix="reward_mixes.")
    data["reward_mixes"] = {mix: [[name, weight] for name, weight in mixes[mix].items()] for mix in choices}

    _check(all(isinstance(item, str) for item in data["dependencies"]), where, "'dependencies' must be strings")
    _check(_number_text(data["smoke_learning_rate"]), where,
           "'smoke_learning_rate' must be a number in a string, e.g. \"8.0e-4\" (written as spelled)")

    for key, fields in TABLES.items():
        for index, entry in enumerate(data[key]):
            _check(isinstance(entry, dict), where, f"'{key}' must be a list of tables ([[{key}]])")
            for field in fields:
                kind = bool if field == "required" else str
                _check(field in entry, where, f"missing key '{key}[{index}].{field}'")
                _check(_kind(entry[field], kind), where, f"'{key}[{index}].{field}' must be {KINDS[kind]}")
            _known(where, entry, fields, prefix=f"{key}[{index}].")
    _check(bool(data["readme_columns"]), where, "'readme_columns' is empty (the row contract has columns)")

    presets = ["default", "smoke", *options()["gpu"]]
    for name, values in data["preset_settings"].items():
        if name == "comment":
            _check(isinstance(values, str), where, "'preset_settings.comment' must be a string")
            continue
        _check(name in presets, where, f"'preset_settings.{name}' is not one of comment, {', '.join(presets)}")
        _check(isinstance(values, dict), where, f"'preset_settings.{name}' must be a table: setting = value")
        for key, value in values.items():
            ok = isinstance(value, str | int | float)
            _check(ok, where, f"'preset_settings.{name}.{key}' must be a string, a number or a boolean")
    return data


def _prose(path: Path) -> dict:
    """task.md, one ``## <section>`` per ``SECTIONS`` entry (HTML comments dropped, text before the first heading
    ignored): curriculum as its ``- `` items, each section else as its text."""
    where = _where(path)
    _check(path.is_file(), where, "not found (every task folder has one)")
    text = COMMENT.sub("", path.read_text(encoding="utf-8"))
    parts = HEADING.split(text)[1:]
    found: dict[str, str] = {}
    for name, body in zip(parts[::2], parts[1::2], strict=True):
        _check(name in SECTIONS, where, f"unknown section '## {name}' (sections: {', '.join(SECTIONS)})")
        _check(name not in found, where, f"section '## {name}' appears twice")
        found[name] = body.strip("\n").rstrip()
    prose = {}
    for name, (attribute, required) in SECTIONS.items():
        body = found.get(name, "")
        _check(bool(body) or not required, where, f"missing section '## {name}'")
        prose[attribute] = body or None
    items: list[str] = []
    for line in prose["readme_curriculum"].splitlines():
        if line.startswith("- "):
            items.append(line[2:].strip())
        elif line.startswith("  ") and items:  # a wrapped item
            items[-1] += " " + line.strip()
        else:
            _check(not line.strip(), where, f"section '## curriculum' holds only '- ' items, not {line.strip()!r}")
    _check(len(items) == CURRICULUM_ITEMS, where,
           f"section '## curriculum' needs {CURRICULUM_ITEMS} '- ' items (priming, GRPO, held out), has {len(items)}")
    prose["readme_curriculum"] = items
    return prose


def load_task_spec(folder: Path) -> TaskTemplate:
    """The spec of the task folder ``folder`` (task.toml and task.md); TaskSpecError when incomplete."""
    return TaskTemplate({**_data(folder / SPEC_FILES[0]), **_prose(folder / SPEC_FILES[1])})


def task_spec(name: str) -> TaskTemplate:
    """The template global: the spec of the task ``name`` (``_tasks/<name>/``); FailedHookException, one line, when
    its files are incomplete."""
    from cookiecutter.exceptions import FailedHookException

    try:
        return load_task_spec(TASKS / name)
    except TaskSpecError as error:
        raise FailedHookException(f"error: {error}") from None


def template_source() -> dict:
    """The template global: the commit this template is at (``_commit``, where ``update_project.py`` starts from) and
    where it is (``_template_path``); empty unless the template folder is the top of a git clone with no uncommitted
    change to a tracked file (a render of changed files is not any commit)."""
    import subprocess

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30)
        return done.stdout.strip() if done.returncode == 0 else None

    try:
        top, head, changes = (git("rev-parse", "--show-toplevel"), git("rev-parse", "--verify", "HEAD"),
                              git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):  # no git here
        top = head = changes = None
    clean = head and top is not None and Path(top).resolve() == ROOT and changes == ""
    return {"_commit": head, "_template_path": str(ROOT)} if clean else {}


class Refusals(Extension):
    def __init__(self, environment) -> None:
        super().__init__(environment)
        environment.filters["refuse_unsupported"] = refuse_unsupported


class TaskSpecs(Extension):
    def __init__(self, environment) -> None:
        super().__init__(environment)
        environment.globals["task_spec"] = task_spec
        environment.globals["template_source"] = template_source
