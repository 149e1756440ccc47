"""The project's own command-line options are spelled like TRL's and transformers' settings, with underscores
(``--num_machines``, ``--max_steps``). The hyphen spellings earlier versions used (``--num-machines``) are still
accepted, unlisted in ``--help``, so scripts written for them keep working."""

from __future__ import annotations

import argparse
import sys


def with_underscores(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> list[str]:
    """``argv`` (default: the command line) with each ``--some-option`` the parser knows as ``--some_option``
    respelled; values, unknown options and everything after ``--`` are left as they are."""
    known = {name for action in parser._actions for name in action.option_strings}
    args = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(args):
        if arg == "--":
            break
        name, sep, value = arg.partition("=")
        respelled = "--" + name[2:].replace("-", "_")
        if name.startswith("--") and respelled != name and respelled in known and name not in known:
            args[i] = respelled + sep + value
    return args
