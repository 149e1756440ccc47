"""The settings train.py's parser knows, their names and types read from the sources of the installed TRL and
transformers (and this package's ``config.py`` and ``task.py``) without importing torch, transformers or TRL, so that
a misspelt key, an unknown option or a value of the wrong type is refused in a blink, before the slow imports
(:func:`refuse_early`). The parser then checks everything again: where this reading cannot follow a source (a
class it cannot find), the early check stands aside and the parser's own check gives the same line, later.

Also here, shared with ``config.py``: how the command line names its config file, and the checks of a file's keys
and values and of the options' names. Stdlib and PyYAML only."""

from __future__ import annotations

import ast
import difflib
import importlib.util
import re
import types
import typing
from functools import cache
from pathlib import Path

from . import DEFAULT_CONFIG
from .settings import ConfigError, read_yaml

PACKAGE = __package__
PARSED = ((f"{PACKAGE}.config", "GRPOScriptArguments"), ("trl", "GRPOConfig"), ("trl", "ModelConfig"),
          (f"{PACKAGE}.task", "TaskArguments"))  # the dataclasses config.parser() parses, in its order
ARGPARSE = {"help"}  # the parser's own option besides the fields


def with_default_config(argv: list[str]) -> list[str]:
    """``argv`` with ``--config PATH`` first (the project's preset unless one is given; ``--config=PATH`` split), and
    a negative number glued to the option before it (``--learning_rate -1e-4``: argparse would read an option)."""
    argv = glue_negative_values(argv)
    for index, arg in enumerate(argv):
        if arg.startswith("--config="):
            return ["--config", arg.split("=", 1)[1], *argv[:index], *argv[index + 1 :]]
        if arg == "--config":
            return ["--config", *argv[index + 1 : index + 2], *argv[:index], *argv[index + 2 :]]
    return ["--config", DEFAULT_CONFIG, *argv]


def glue_negative_values(argv: list[str]) -> list[str]:
    """``--option -1e-4`` as ``--option=-1e-4``, so that the value reaches the checks instead of argparse's
    "expected one argument"."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and _NEGATIVE.fullmatch(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


_NEGATIVE = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-inf|-nan", re.IGNORECASE)


def _closest(name: str, known, prefix: str = "") -> str:
    match = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {prefix}{match[0]}?)" if match else ""


def _type_problem(hint, value) -> str | None:
    """What ``value`` (as YAML gave it) should be for a field annotated ``hint``; None when it fits or when the
    annotation is not one this checks (dicts, enums: TRL and transformers check those)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        problems = [_type_problem(option, value) for option in args if option is not type(None)]
        return None if None in problems else problems[0]
    if hint is bool:
        return None if isinstance(value, bool) else "true or false"
    if hint is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else "an integer"
    if hint is float:
        return None if isinstance(value, int | float) and not isinstance(value, bool) else "a number"
    if hint is str:
        return None if isinstance(value, str) else "a string"
    if origin is list:
        inner = args[0] if args else None
        if isinstance(value, list) and (inner is None or all(_type_problem(inner, v) is None for v in value)):
            return None
        return "a list of numbers" if inner in (int, float) else "a list of names" if inner is str else "a list"
    return None


def _to_bool(text: str) -> bool:
    return _convert(bool, text.strip())  # the words an option's value may be (transformers' string_to_bool)


CONVERT = {"an integer": int, "a number": float, "true or false": _to_bool}


def check_yaml(settings: dict, path: str, known: set[str], hints: dict[str, object]) -> None:
    """Unknown keys and values of the wrong type, which TrlParser would pass on unconverted (``[a, 1.0]`` as
    reward weights, one name where a list belongs)."""
    for key, value in settings.items():
        if key == "env":
            continue
        if key not in known:
            raise ConfigError(f"{path}: unknown setting {key!r}{_closest(key, known)}; remove or rename it", key)
        wanted = _type_problem(hints[key], value) if key in hints else None
        if isinstance(value, str) and wanted == "a list of names":
            wanted = None  # one name stands for a list here (lora_target_modules: all-linear); reward_funcs: below
        if isinstance(value, str) and wanted in CONVERT:  # argparse converts text as it would an option's value
            try:
                CONVERT[wanted](value)
                wanted = None
            except ValueError:
                pass
        if wanted:
            example = f" (write {key}: [{value}])" if wanted.startswith("a list") and isinstance(value, str) else ""
            raise ConfigError(f"{path}: {key} must be {wanted}, got {value!r}{example}", key)


def check_options(argv: list[str], known: set[str]) -> None:
    for arg in argv:
        if arg.startswith("--"):
            name = arg[2:].split("=", 1)[0]
            if name not in known:
                raise ConfigError(f"unknown option --{name}{_closest(name, known, '--')}; see python train.py --help",
                                  name)


def raise_first(path: str, problems: list[tuple[str, str]], cli_keys: set[str]) -> None:
    """The first (key, message) problem as a ConfigError naming where the value came from (the command line or the
    file)."""
    if problems:
        key, message = problems[0]
        raise ConfigError(message if key in cli_keys else f"{path}: {message}", key)


# ------------------------------------------------------------------------------- the fields, read from sources


def _source(module: str) -> Path:
    """The file of ``module`` (a package: its ``__init__.py``), found without importing it or its package."""
    top, _, rest = module.partition(".")
    if top == PACKAGE:
        base = Path(__file__).resolve().parent
    else:
        spec = importlib.util.find_spec(top)  # a top-level name: its finder only, nothing is imported
        if spec is None or not spec.submodule_search_locations:
            raise LookupError(module)
        base = Path(list(spec.submodule_search_locations)[0])
    path = base.joinpath(*rest.split(".")) if rest else base
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(_source(module).read_text(encoding="utf-8"))


def _imported_from(module: str, name: str) -> tuple[str, str] | None:
    """Where ``module`` imports ``name`` from (a ``from ... import`` anywhere in it, TYPE_CHECKING blocks too)."""
    is_package = _source(module).name == "__init__.py"
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[: len(base) - node.level + 1] if node.level else []
                    return ".".join([*base, *([node.module] if node.module else [])]), alias.name
    return None


def _skipped(statement: ast.AnnAssign) -> bool:
    """A ClassVar, or a ``field(init=False)``: not a constructor argument, so not a parser option."""
    if "ClassVar" in ast.unparse(statement.annotation):
        return True
    call = statement.value
    return isinstance(call, ast.Call) and any(
        k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False for k in call.keywords)


def class_fields(module: str, name: str, depth: int = 0) -> dict[str, str]:
    """The dataclass fields (name -> annotation source) of class ``name`` as ``module`` sees it, its bases' first."""
    if depth > 12:
        raise LookupError(f"{module}.{name}")
    found = next((node for node in _tree(module).body if isinstance(node, ast.ClassDef) and node.name == name), None)
    if found is None:
        origin = _imported_from(module, name)
        if origin is None:
            raise LookupError(f"{module}.{name}")
        return class_fields(*origin, depth + 1)
    fields: dict[str, str] = {}
    for base in found.bases:
        base_name = ast.unparse(base).rpartition(".")[2]
        if base_name not in ("object", "Generic", "Protocol"):
            fields.update(class_fields(module, base_name, depth + 1))
    for statement in found.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and not _skipped(statement):
            fields[statement.target.id] = ast.unparse(statement.annotation)
    return fields


class _Opaque:
    """A type these checks leave to the parser (an enum, a torch dtype): any value passes here."""

    def __class_getitem__(cls, item):
        return cls


class _Names(dict):
    def __missing__(self, key):
        return _Opaque


def _hint(annotation: str) -> object:
    names = _Names({**vars(typing), "list": list, "dict": dict, "tuple": tuple, "bool": bool, "int": int,
                    "float": float, "str": str, "None": None, "type": type})
    try:
        return eval(annotation, {"__builtins__": {}}, names)  # noqa: S307 - annotations of installed sources
    except Exception:  # noqa: BLE001 - an annotation this reading cannot evaluate: left to the parser
        return _Opaque


@cache
def field_hints() -> dict[str, object]:
    """Every setting the parser knows -> its type; raises LookupError where a source cannot be followed."""
    hints: dict[str, object] = {}
    for module, name in PARSED:
        hints.update({key: _hint(annotation) for key, annotation in class_fields(module, name).items()})
    return hints


# ------------------------------------------------------------------------------------------ the early refusal

TRUE, FALSE = ("yes", "true", "t", "y", "1"), ("no", "false", "f", "n", "0")  # transformers' string_to_bool


def _plain(hint: object) -> object | None:
    """int, float, str or bool (optional or not): the types whose options this reading converts as argparse does."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return options[0] if len(options) == 1 and options[0] in (int, float, str, bool) else None
    return hint if hint in (int, float, str, bool) else None


def _convert(kind: object, text: str | None):
    if kind is bool:
        if text is None or text.lower() in TRUE:
            return True
        if text.lower() in FALSE:
            return False
        raise ValueError(text)
    if text is None:
        raise ValueError("no value")
    return kind(text)


def command_line_values(options: list[str], hints: dict[str, object]) -> dict | None:
    """The settings the command line gives, converted as the parser converts them; None where one is not a plain
    ``--name value`` of a plain type (lists, choices, a value argparse would refuse): the parser then decides."""
    values, index = {}, 0
    while index < len(options):
        name, equals, text = options[index][2:].partition("=")
        kind = _plain(hints.get(name)) if options[index].startswith("--") else None
        if kind is None:
            return None
        if not equals:
            follows = index + 1 < len(options) and not options[index + 1].startswith("--")
            text = options[index + 1] if follows else None
            index += follows
        try:
            values[name] = _convert(kind, text)
        except ValueError:
            return None
        index += 1
    return values


def refuse_early(argv: list[str]) -> None:
    """The checks ``config.parse_args`` makes before it builds anything, made before torch and TRL are imported: the
    options' names, the file's keys and types, and the rules over the merged settings (``rules.check_values``).
    Raises the ConfigError the parser would raise; returns when they pass or when a source cannot be read here."""
    try:
        hints = field_hints()
    except (LookupError, OSError, SyntaxError, ValueError):
        return
    argv = with_default_config(argv)
    path = argv[1] if len(argv) > 1 else ""
    known = set(hints) | ARGPARSE
    check_options(argv[2:], known | {"config"})
    settings = read_yaml(path)
    check_yaml(settings, path, known, hints)
    options = command_line_values(argv[2:], hints)
    if options is not None:
        from .rules import check_values

        raise_first(path, check_values({**settings, **options}, set(options)), set(options))
