"""The package under test, by name, so test files carry no template syntax."""

import importlib

PKG = "{{ cookiecutter.package_name }}"


def mod(name: str):
    return importlib.import_module(f"{PKG}.{name}")
