"""The hooks as functions: every answer and combination rule of pre_gen, and post_gen's file removal."""

import json
from pathlib import Path

import pytest
from conftest import ROOT, load_hook

pre = load_hook("pre_gen_project")
post = load_hook("post_gen_project")


def test_defaults_are_valid(defaults):
    assert pre.validate(defaults) == []


def test_choices_match_cookiecutter_json():
    raw = json.loads((ROOT / "cookiecutter.json").read_text())
    for key, allowed in pre.CHOICES.items():
        assert tuple(raw[key]) == allowed
    assert set(raw["_reward_mixes"]) == set(pre.CHOICES["task"])
    for mixes in raw["_reward_mixes"].values():
        assert tuple(mixes) == pre.CHOICES["reward_mix"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"backend": "unsloth", "gpu": "cpu-only"}, "backend 'unsloth' needs a CUDA GPU"),
        ({"backend": "unsloth", "gpu": "8x80gb"}, "backend 'unsloth' trains on one GPU"),
        ({"task": "chess"}, "task='chess' is not one of math, code, json"),
        ({"gpu": "4gb"}, "gpu='4gb' is not one of"),
        ({"tracking": "mlflow"}, "tracking='mlflow' is not one of"),
        ({"project_name": "  "}, "project_name is empty"),
        ({"project_name": "two\nlines"}, "project_name must be one line"),
        ({"project_slug": "Bad Slug"}, "project_slug='Bad Slug' is not a valid directory name"),
        ({"project_slug": "../escape"}, "is not a valid directory name"),
        ({"package_name": "2fast"}, "package_name='2fast' is not a valid Python package name"),
        ({"package_name": "class"}, "is not a valid Python package name"),
        ({"package_name": "trl"}, "package_name='trl' would shadow the module 'trl'"),
        ({"package_name": "datasets"}, "would shadow the module 'datasets'"),
        ({"package_name": "json"}, "would shadow the module 'json'"),
        ({"base_model": "Qwen/Qwen2.5 0.5B"}, "base_model='Qwen/Qwen2.5 0.5B' is not a hub id"),
        ({"base_model": 'x"; import os'}, "is not a hub id"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_refused_with_one_clear_line(defaults, changes, message):
    errors = pre.validate({**defaults, **changes})
    assert len(errors) == 1
    assert message in errors[0]
    assert "\n" not in errors[0]


@pytest.mark.parametrize("base_model", ["Qwen/Qwen3-4B", "meta-llama/Llama-3.2-1B-Instruct", "./models/my-ckpt", ""])
def test_accepted_base_models(defaults, base_model):
    assert pre.validate({**defaults, "base_model": base_model}) == []


def test_main_prints_errors_and_exits_nonzero(defaults, capsys):
    assert pre.main({**defaults, "task": "chess"}) == 1
    assert "ERROR: task='chess'" in capsys.readouterr().err
    assert pre.main(defaults) == 0


def test_unused_files_are_the_other_tasks(defaults):
    files = post.unused_files({**defaults, "task": "code"})
    assert "grpo_reasoner/task_math.py" in files and "grpo_reasoner/rewards/json_task.py" in files
    assert not any("code" in path or "sandbox" in path for path in files)
    template = ROOT / "{{cookiecutter.project_slug}}"
    for paths in post.TASK_FILES.values():  # every listed file exists in the template
        for path in paths:
            assert (template / path.format(pkg="{{cookiecutter.package_name}}")).is_file(), path


def test_smoke_failure_keeps_project_and_says_which_step(tmp_path, defaults, capsys, monkeypatch):
    (tmp_path / "grpo_reasoner").mkdir()
    (tmp_path / "grpo_reasoner" / "__init__.py").write_text("")
    (tmp_path / "grpo_reasoner" / "selfcheck.py").write_text("import sys\nsys.exit('configs broken')\n")
    monkeypatch.delenv("GRPO_TEMPLATE_STRICT_SMOKE", raising=False)
    assert post.main({**defaults, "smoke_test": "quick"}, root=tmp_path) == 0
    out = capsys.readouterr().out
    assert "SMOKE FAILED at step 'quick self-check' (exit 1)" in out and "configs broken" in out
    assert "The project was kept" in out
    assert (tmp_path / "grpo_reasoner" / "selfcheck.py").is_file()
    monkeypatch.setenv("GRPO_TEMPLATE_STRICT_SMOKE", "1")
    assert post.main({**defaults, "smoke_test": "quick"}, root=tmp_path) == 1


def test_full_smoke_without_torch_prints_the_command(tmp_path, defaults, capsys, monkeypatch):
    (tmp_path / "grpo_reasoner").mkdir()
    (tmp_path / "grpo_reasoner" / "__init__.py").write_text("")
    (tmp_path / "grpo_reasoner" / "selfcheck.py").write_text("print('[ok] fine')\n")
    monkeypatch.setattr(post, "training_python", lambda root: None)
    assert post.main({**defaults, "smoke_test": "full"}, root=tmp_path) == 0
    assert "python train.py --config configs/smoke.yaml" in capsys.readouterr().out


def test_hook_sources_take_answers_only_as_data():
    for name in ("pre_gen_project", "post_gen_project"):
        source = (ROOT / "hooks" / f"{name}.py").read_text()
        jinja = [line for line in source.splitlines() if "{{" in line or "{%" in line]
        assert jinja == ["    sys.exit(main(json.loads(r'''{{ cookiecutter | tojson }}''')))"]
        assert Path(ROOT / "hooks" / f"{name}.py").is_file()
