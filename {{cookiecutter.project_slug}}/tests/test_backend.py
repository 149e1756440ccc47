"""The model_backend field: which backend a command line asks for, and a bad value gets one clear line."""

import pytest
from _pkg import mod

backend = mod("training.backend")
config = mod("config")


def test_requested_backend_from_cli_then_config_then_default(tmp_path):
    preset = tmp_path / "p.yaml"
    preset.write_text("model_backend: unsloth\n")
    assert backend.requested(["--config", str(preset)]) == "unsloth"
    assert backend.requested(["--config", str(preset), "--model_backend", "trl"]) == "trl"
    assert backend.requested([f"--config={preset}", "--model_backend=trl"]) == "trl"
    assert backend.requested(["--config", str(tmp_path / "missing.yaml")]) == "trl"
    preset.write_text("- not a mapping\n")
    assert backend.requested(["--config", str(preset)]) == "trl"


def test_preload_imports_unsloth_only_when_asked(tmp_path, monkeypatch):
    import builtins

    asked = []
    real_import = builtins.__import__

    def recording_import(name, *args, **kwargs):
        if name == "unsloth":
            asked.append(name)
            raise ImportError("not installed here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", recording_import)
    preset = tmp_path / "p.yaml"
    preset.write_text("model_backend: trl\n")
    backend.preload(["--config", str(preset)])
    assert asked == []
    backend.preload(["--config", str(preset), "--model_backend", "unsloth"])  # a missing Unsloth is not an error here
    assert asked == ["unsloth"]


def test_unknown_backend_is_one_line(tmp_path):
    argv = ["--config", "configs/smoke.yaml", "--model_backend", "nope", "--output_dir", str(tmp_path)]
    with pytest.raises(config.ConfigError, match="^model_backend: 'nope' must be one of trl, unsloth$"):
        config.parse_args(argv)
