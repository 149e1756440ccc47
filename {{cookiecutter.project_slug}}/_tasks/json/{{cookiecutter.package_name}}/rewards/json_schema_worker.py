"""The JSON-schema worker: a child process that validates documents with jsonschema, killed when it overruns.

Started by ``json_task`` as ``python <this file>`` through :class:`~.timed_worker.TimedWorker`. A schema from the
dataset can make validation take unbounded time on a model-written document (a ``pattern`` such as ``^(a+)+$``
matched by Python's backtracking ``re``, ``patternProperties``, ``uniqueItems`` over thousands of objects, format
checkers), so validation happens here, where the parent's deadline can kill it.

Protocol, one JSON object per line: ``{"ready": true}`` once jsonschema is imported (``{"ready": false, "error":
...}`` when it cannot be), then for each request ``{"s": schema_text}`` -> ``{"bad": bool}`` (is it unusable as a
schema?) and ``{"s": schema_text, "d": document_text}`` -> ``{"v": true | false | null}`` (``null``: the schema
needs a remote ``$ref``, which is never fetched). Validators honour ``$schema`` (Draft 2020-12 when absent), match
regexes as ECMA-262, compare ``multipleOf`` exactly and check every Draft 2020-12 format
(``json_schema_screen.json_schema_class`` with the rules of ``json_formats.py``, both loaded by path); they are
cached per schema text. jsonschema's own property-name searches (``unevaluatedProperties`` over
``patternProperties``) are pointed at the ECMA-262 matcher too: this process is the reward's own.

Runs as a script, not as part of the package: stdlib plus jsonschema/referencing, regress and idna, and its
siblings ``json_schema_screen.py`` and ``json_formats.py`` loaded explicitly by path.
"""

from __future__ import annotations

import json
import os
import sys
from functools import lru_cache
from typing import Any

_UNRESOLVABLE = ("Unresolvable", "Unretrievable", "NoSuchResource", "_WrappedReferencingError")


def _sibling(here: str, name: str) -> Any:
    """A sibling module loaded by path (the same pattern, format and number rules as in-process)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(here, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # never import siblings by accident
    try:
        import idna  # noqa: F401  (IDNA 2008 host names)
        import jsonschema
        import jsonschema._legacy_keywords
        import jsonschema._utils
        import regress  # noqa: F401  (the ECMA-262 regex engine: without either, no verdict)
        from jsonschema_specifications import REGISTRY as SPECIFICATIONS
        from referencing import Registry
        from referencing.exceptions import NoSuchResource

        screen, rules = (_sibling(here, name) for name in ("json_schema_screen", "json_formats"))
        jsonschema._utils.re = jsonschema._legacy_keywords.re = rules.EcmaRe  # unevaluated*: ECMA-262 searches too
    except Exception as exc:
        sys.stdout.write(json.dumps({"ready": False, "error": repr(exc)}) + "\n")
        sys.stdout.flush()
        return

    def refuse(uri: str) -> Any:
        raise NoSuchResource(ref=uri)

    @lru_cache(maxsize=1024)
    def validator(schema_text: str) -> Any:
        try:
            schema = json.loads(schema_text)
            if not isinstance(schema, (dict, bool)):
                return None
            cls, formats = screen.json_schema_class(jsonschema, schema, rules)
            screen.check_schema(cls, schema, jsonschema, rules)
            registry = SPECIFICATIONS.combine(Registry(retrieve=refuse))  # the drafts' metaschemas, nothing remote
            return cls(schema, registry=registry, format_checker=formats)
        except Exception:
            return None

    def handle(req: dict[str, Any]) -> dict[str, Any]:
        checker = validator(str(req["s"]))
        if "d" not in req:
            return {"bad": checker is None}
        if checker is None:
            return {"v": None}
        try:
            return {"v": bool(checker.is_valid(json.loads(req["d"])))}
        except Exception as exc:
            return {"v": None if type(exc).__name__ in _UNRESOLVABLE else False}

    sys.stdout.write(json.dumps({"ready": True}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line))
        except Exception:
            reply = {"v": False}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
