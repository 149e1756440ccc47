"""The package under test, by name, so test files carry no template syntax; and a free port for the tests that
start torch.distributed (torchrun's and TRL's default, 29500, may be another test's at the same time)."""

import importlib
import socket

PKG = "{{ cookiecutter.package_name }}"


def mod(name: str):
    return importlib.import_module(f"{PKG}.{name}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
