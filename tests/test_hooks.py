"""The hooks as functions: every answer and combination rule of pre_gen, and post_gen's task promotion."""

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import OPTIONS, ROOT, TEMPLATE, load_hook, task_names, task_settings

import local_extensions

pre = load_hook("pre_gen_project")
post = load_hook("post_gen_project")


def test_defaults_are_valid(defaults):
    assert pre.validate(defaults, OPTIONS) == []


def test_choices_come_from_cookiecutter_json():
    assert set(pre.choices(OPTIONS)) == {"task", "gpu", "reward_mix", "algorithm", "backend", "tracking", "smoke_test"}
    assert pre.choices(OPTIONS)["task"] == tuple(OPTIONS["task"])
    assert pre.validate({"task": "math"}, {"task": ["math"]}) != []  # other answers missing, but task accepted
    assert not any("task=" in e for e in pre.validate({"task": "math"}, {"task": ["math"]}))
    assert any("task='code'" in e for e in pre.validate({"task": "code"}, {"task": ["math"]}))


def test_every_task_choice_has_a_folder_and_every_folder_a_choice():
    folders = {path.name for path in (TEMPLATE / "_tasks").iterdir() if path.is_dir()}
    assert folders == set(task_names())
    for task in task_names():
        settings = task_settings(task)
        assert tuple(settings.reward_mixes) == tuple(OPTIONS["reward_mix"]), task
        assert settings.dataset["dataset_name"], task
        assert (TEMPLATE / "_tasks" / task / "{{cookiecutter.package_name}}" / "task.py").is_file()
        assert (TEMPLATE / "_tasks" / task / "{{cookiecutter.package_name}}" / "rewards" / "task.py").is_file()
        assert (TEMPLATE / "_tasks" / task / "data" / "sample.jsonl").is_file()
    assert post.SPEC_FILES == local_extensions.SPEC_FILES  # what the hook leaves behind is what the templates read


def test_the_task_specs_give_the_templates_their_settings():
    math, code = task_settings("math"), task_settings("code")
    assert math.reward_mixes["correctness-first"] == [["correctness", 1.0], ["format", 0.05]]
    assert code.readme_columns[2] == {"name": "entry_point", "type": "string", "required": False,
                                      "meaning": "the name of the function to write"}
    assert math.readme_files == [] and task_settings("json").dataset["dataset_config"] is None  # the defaults
    assert len(math.readme_curriculum) == 3 and "\\boxed{}" in math.readme_correctness  # task.md, as written
    assert code.readme_bounds is None and code.readme_audit_cases.startswith("the reference solution")
    assert math.preset_settings("smoke") == ""
    lines = code.preset_settings("smoke").splitlines()
    assert lines[0].startswith("# Code sandbox") and lines[1:] == [
        "sandbox_isolation: auto", "sandbox_timeout_s: 3.0", "sandbox_memory_mb: 512", ""]
    assert "sandbox_isolation: required\n" in code.preset_settings("24gb")
    assert [local_extensions.yaml_value(v) for v in (1e-05, 2.5e-4, 3.0, 512, True, "auto")] == [
        "1.0e-05", "0.00025", "3.0", "512", "true", "auto"]


def _spec_copy(folder: Path, task: str = "math") -> Path:
    """A copy of a task's spec files, to break."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in local_extensions.SPEC_FILES:
        shutil.copy(TEMPLATE / "_tasks" / task / name, folder / name)
    return folder


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("task.toml", "smoke_max_steps = 120\n", "", "missing key 'smoke_max_steps'"),
        ("task.toml", "smoke_max_steps = 120", "smoke_max_step = 120", "unknown key 'smoke_max_step' (keys: "),
        ("task.toml", "smoke_max_steps = 120", 'smoke_max_steps = "120"', "'smoke_max_steps' must be an integer"),
        ("task.toml", '"6.0e-4"', '"fast"', "'smoke_learning_rate' must be a number in a string"),
        ("task.toml", '"6.0e-4"', "6.0e-4", "'smoke_learning_rate' must be a number in a string, e.g. \"8.0e-4\""),
        ("task.toml", 'dataset_name = "openai/gsm8k"\n', "", "missing key 'dataset.dataset_name'"),
        ("task.toml", "correctness-first = ", "correctness_first = ", "missing key 'reward_mixes.correctness-first'"),
        ("task.toml", "format = 0.05", 'format = "0.05"', "'reward_mixes.correctness-first.format' must be a number"),
        ("task.toml", 'type = "string"\n', "", "missing key 'readme_columns[0].type'"),
        ("task.toml", "required = true", 'required = "yes"', "'readme_columns[0].required' must be true or false"),
        ("task.toml", "[dataset]", "[preset_settings]\ncpu_only = { x = 1 }\n[dataset]",
         "'preset_settings.cpu_only' is not one of comment, default, smoke, cpu-only,"),
        ("task.toml", "[dataset]", "[dataset", "Expected ']' at the end of a table declaration (at line"),
        ("task.md", "## data", "## Data",
         "unknown section '## Data' (sections: data, correctness, without tags, curriculum,"),
        ("task.md", "## correctness", "correctness", "missing section '## correctness'"),
        ("task.md", "- 4 of the 16", "4 of the 16", "section '## curriculum' holds only '- ' items, not '4 of the"),
        ("task.md", "- 4 of the 16", "  4 of the 16", "section '## curriculum' needs 3 '- ' items (priming, GRPO"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 25 and "\n" not in v else None,
)
def test_an_incomplete_task_spec_is_one_line_naming_the_file_and_the_key(tmp_path, file, old, new, message):
    folder = _spec_copy(tmp_path / "math")
    path = folder / file
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    with pytest.raises(local_extensions.TaskSpecError) as refused:
        local_extensions.load_task_spec(folder)
    assert str(refused.value).startswith(f"{path}: ") and message in str(refused.value), str(refused.value)
    assert "\n" not in str(refused.value)


def test_an_incomplete_task_spec_is_refused_before_anything_is_written(tmp_path, defaults):
    """The refusal filter reads the chosen task's spec (after the answers, before any file), the template global
    raises the exception a failed hook raises; both one line."""
    from cookiecutter.exceptions import FailedHookException

    template = tmp_path / "template"
    skip = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".venv", "build")
    shutil.copytree(ROOT, template, ignore=skip)
    toml = template / "{{cookiecutter.project_slug}}" / "_tasks" / "json" / "task.toml"
    toml.write_text(toml.read_text().replace("smoke_max_steps = 150\n", ""))
    cookiecutter = Path(sys.executable).with_name("cookiecutter")
    out = tmp_path / "out"
    done = subprocess.run([str(cookiecutter), "--no-input", "-o", str(out), str(template), "task=json"],
                          capture_output=True, text=True, timeout=120, check=False)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1
    assert lines == ["error: {{cookiecutter.project_slug}}/_tasks/json/task.toml: missing key 'smoke_max_steps' "
                     "(nothing was written)"], lines
    assert not out.exists() or list(out.iterdir()) == []
    (tmp_path / "broken").mkdir()
    _spec_copy(tmp_path / "broken" / "math").joinpath("task.md").write_text("# nothing\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(local_extensions, "TASKS", tmp_path / "broken")
        with pytest.raises(FailedHookException, match=r"^error: .*task.md: missing section '## data'$"):
            local_extensions.task_spec("math")
        with pytest.raises(FailedHookException, match=r"task.md: missing section '## data' \(nothing was written\)$"):
            local_extensions.refuse_unsupported({**defaults, "task": "math"})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"backend": "unsloth", "gpu": "cpu-only"}, "backend 'unsloth' needs a CUDA GPU"),
        ({"backend": "unsloth", "gpu": "8x80gb"}, "backend 'unsloth' trains on one GPU"),
        ({"task": "chess"}, "task='chess' is not one of code, json, math"),
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
    errors = pre.validate({**defaults, **changes}, OPTIONS)
    assert len(errors) == 1
    assert message in errors[0]
    assert "\n" not in errors[0]


@pytest.mark.parametrize("base_model", ["Qwen/Qwen3-4B", "meta-llama/Llama-3.2-1B-Instruct", "./models/my-ckpt", ""])
def test_accepted_base_models(defaults, base_model):
    assert pre.validate({**defaults, "base_model": base_model}, OPTIONS) == []


def test_refusal_filter_raises_the_failed_hook_exception_with_one_line(defaults):
    from cookiecutter.exceptions import FailedHookException

    spec = importlib.util.spec_from_file_location("local_extensions", ROOT / "local_extensions.py")
    extensions = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extensions)
    assert extensions.refuse_unsupported(defaults) == ""
    with pytest.raises(FailedHookException) as refused:
        extensions.refuse_unsupported({**defaults, "backend": "unsloth", "gpu": "cpu-only"})
    assert str(refused.value).startswith("error: backend 'unsloth' needs a CUDA GPU") and "\n" not in str(refused.value)
    assert OPTIONS["_extensions"] == ["local_extensions.Refusals", "local_extensions.TaskSpecs"]
    assert "refuse_unsupported" in OPTIONS["__refusals"]
    assert list(OPTIONS).index("__refusals") > max(list(OPTIONS).index(key) for key in pre.choices(OPTIONS))


def test_the_cookiecutter_command_line_prints_a_refusal_as_one_line(tmp_path):
    cookiecutter = Path(sys.executable).with_name("cookiecutter")
    done = subprocess.run([str(cookiecutter), "--no-input", "-o", str(tmp_path), str(ROOT), "backend=unsloth",
                           "gpu=cpu-only"], capture_output=True, text=True, timeout=120, check=False)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1
    assert lines == ["error: backend 'unsloth' needs a CUDA GPU; choose backend=trl for gpu=cpu-only "
                     "(nothing was written)"], lines
    assert list(tmp_path.iterdir()) == []


def test_main_prints_errors_and_exits_nonzero(defaults, capsys):
    assert pre.main({**defaults, "task": "chess"}, OPTIONS) == 1
    assert "ERROR: task='chess'" in capsys.readouterr().err
    assert pre.main(defaults, OPTIONS) == 0


def _task_tree(root: Path) -> None:
    for task in ("alpha", "beta"):
        for relative in ("pkg/task.py", "pkg/rewards/task.py", "data/sample.jsonl", "task.toml", "task.md",
                         "_notes.txt", "docs/task.md"):
            path = root / "_tasks" / task / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{task}:{relative}")
    (root / "pkg" / "rewards").mkdir(parents=True)
    (root / "pkg" / "rewards" / "common.py").write_text("common")


def test_promote_task_moves_the_chosen_folder_and_drops_the_rest(tmp_path):
    _task_tree(tmp_path)
    post.promote_task(tmp_path, "beta")
    assert (tmp_path / "pkg" / "task.py").read_text() == "beta:pkg/task.py"
    assert (tmp_path / "pkg" / "rewards" / "task.py").read_text() == "beta:pkg/rewards/task.py"
    assert (tmp_path / "pkg" / "rewards" / "common.py").read_text() == "common"
    assert (tmp_path / "data" / "sample.jsonl").read_text() == "beta:data/sample.jsonl"
    assert (tmp_path / "docs" / "task.md").read_text() == "beta:docs/task.md"  # only the folder's own spec stays
    assert not (tmp_path / "_tasks").exists()
    assert not any((tmp_path / name).exists() for name in ("task.toml", "task.md", "_notes.txt"))


def test_promote_task_refuses_to_overwrite_and_unknown_tasks(tmp_path):
    _task_tree(tmp_path)
    (tmp_path / "_tasks" / "alpha" / "pkg" / "rewards" / "common.py").write_text("clash")
    with pytest.raises(FileExistsError, match="would overwrite pkg/rewards/common.py, which differs"):
        post.promote_task(tmp_path, "alpha")
    with pytest.raises(FileNotFoundError, match="no task folder _tasks/gamma"):
        post.promote_task(tmp_path, "gamma")


def test_promote_task_over_the_same_project_rendered_again(tmp_path, defaults, capsys):
    # cookiecutter -f over a project rendered before: the task's files are there already, the same bytes
    _task_tree(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sample.jsonl").write_text("beta:data/sample.jsonl")
    post.promote_task(tmp_path, "beta")
    assert (tmp_path / "data" / "sample.jsonl").read_text() == "beta:data/sample.jsonl"
    assert not (tmp_path / "_tasks").exists()
    _task_tree(tmp_path / "again")  # a file of the user's where the task has its own: one line, nothing moved
    (tmp_path / "again" / "pkg" / "task.py").write_text("the user's")
    assert post.main({**defaults, "task": "alpha"}, tmp_path / "again") == 1
    assert capsys.readouterr().err == ("error: task 'alpha' would overwrite pkg/task.py, which differs from the "
                                       "task's; render into an empty folder, or give the file another name\n")
    assert (tmp_path / "again" / "pkg" / "task.py").read_text() == "the user's"
    assert (tmp_path / "again" / "_tasks" / "alpha" / "data" / "sample.jsonl").is_file()  # nothing moved


def test_smoke_failure_keeps_project_and_says_which_step(tmp_path, defaults, capsys, monkeypatch):
    (tmp_path / "_tasks" / defaults["task"] / "grpo_reasoner").mkdir(parents=True)
    (tmp_path / "_tasks" / defaults["task"] / "grpo_reasoner" / "__init__.py").write_text("")
    selfcheck = tmp_path / "_tasks" / defaults["task"] / "grpo_reasoner" / "selfcheck.py"
    selfcheck.write_text("import sys\nsys.exit('configs broken')\n")
    monkeypatch.delenv("GRPO_TEMPLATE_STRICT_SMOKE", raising=False)
    assert post.main({**defaults, "smoke_test": "quick"}, root=tmp_path) == 0
    out = capsys.readouterr().out
    assert "SMOKE FAILED at step 'quick self-check' (exit 1)" in out and "configs broken" in out
    assert "The project was kept" in out
    assert (tmp_path / "grpo_reasoner" / "selfcheck.py").is_file()
    monkeypatch.setenv("GRPO_TEMPLATE_STRICT_SMOKE", "1")
    (tmp_path / "_tasks" / defaults["task"]).mkdir(parents=True)
    assert post.main({**defaults, "smoke_test": "quick"}, root=tmp_path) == 1


def test_full_smoke_without_torch_prints_the_command(tmp_path, defaults, capsys, monkeypatch):
    (tmp_path / "_tasks" / defaults["task"] / "grpo_reasoner").mkdir(parents=True)
    (tmp_path / "_tasks" / defaults["task"] / "grpo_reasoner" / "__init__.py").write_text("")
    (tmp_path / "_tasks" / defaults["task"] / "grpo_reasoner" / "selfcheck.py").write_text("print('[ok] fine')\n")
    monkeypatch.setattr(post, "training_python", lambda root: None)
    assert post.main({**defaults, "smoke_test": "full"}, root=tmp_path) == 0
    out = capsys.readouterr().out
    assert "python train.py --config configs/smoke.yaml" in out
    # the CPU build: a plain `pip install torch==...` on Linux pulls the multi-GB CUDA build
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in out
    assert "&& scripts/install.sh && python train.py" in out  # the install that says what it does as it goes
    assert "see README.md ('Install', then 'Train')" in out  # no environment has what the project needs


def fake_training(tmp_path, defaults, body: str) -> None:
    """A project whose quick self-check passes and whose train.py is ``body``."""
    (tmp_path / "_tasks" / defaults["task"] / "grpo_reasoner").mkdir(parents=True)
    (tmp_path / "_tasks" / defaults["task"] / "grpo_reasoner" / "__init__.py").write_text("")
    (tmp_path / "_tasks" / defaults["task"] / "grpo_reasoner" / "selfcheck.py").write_text("print('[ok] fine')\n")
    (tmp_path / "train.py").write_text("import sys, time\n" + body)


def test_full_smoke_streams_progress_and_the_health_line_not_the_metrics(tmp_path, defaults, capsys, monkeypatch):
    fake_training(tmp_path, defaults, "print('format priming step 1/10: loss 2.0', flush=True)\n"
                  "for step in range(1, 4):\n    print(f'train: step {step}/3 | correctness 0.1', flush=True)\n"
                  "print({'loss': 0.1})\nprint('health: learning: rewards/correctness/mean 0.100 -> 0.500 (+0.400)')\n")
    monkeypatch.setattr(post, "training_python", lambda root: sys.executable)
    assert post.main({**defaults, "smoke_test": "full"}, root=tmp_path) == 0
    out = capsys.readouterr().out
    assert "[ok] fine" in out and "health: learning: rewards/correctness/mean 0.100 -> 0.500 (+0.400)" in out
    assert "format priming step 1/10" in out  # progress, at most one line per PROGRESS_EVERY_S without a terminal
    assert "train: step 2/3" not in out and "'loss'" not in out
    # the environment the smoke trained in has what the project needs (make demo's .venv): no second install
    assert f"see README.md ('Train'); the environment the smoke ran in ({Path(sys.executable).parent.parent})" in out
    assert "skip 'Install'" in out


def test_full_smoke_gives_a_slow_machine_the_time_its_step_rate_needs(tmp_path, defaults, capsys, monkeypatch):
    fake_training(tmp_path, defaults, "for step in range(1, 7):\n"
                  "    print(f'train: step {step}/6', flush=True)\n    time.sleep(0.5)\nprint('health: learning')\n")
    monkeypatch.setattr(post, "training_python", lambda root: sys.executable)
    monkeypatch.setattr(post, "SMOKE_TIMEOUT_S", 1.5)  # less than the 3 s its 6 steps take
    assert post.main({**defaults, "smoke_test": "full"}, root=tmp_path) == 0
    out = capsys.readouterr().out
    assert "health: learning" in out and "SMOKE FAILED" not in out


def test_full_smoke_says_it_is_still_running_while_nothing_is_shown(tmp_path, defaults, capsys, monkeypatch):
    # imports, the tiny model and the audit print nothing the hook shows: a line every QUIET_S (20 s) says so
    fake_training(tmp_path, defaults, "print('building the tiny model', flush=True)\ntime.sleep(1.5)\n"
                  "print('health: learning')\n")
    monkeypatch.setattr(post, "training_python", lambda root: sys.executable)
    assert post.QUIET_S <= 30  # the promise: a line at least every 30 s
    monkeypatch.setattr(post, "QUIET_S", 0.4)
    assert post.main({**defaults, "smoke_test": "full"}, root=tmp_path) == 0
    out = capsys.readouterr().out
    assert out.count("smoke: smoke training: still running (") >= 2, out
    assert "health: learning" in out and "building the tiny model" not in out and "SMOKE FAILED" not in out


def test_full_smoke_fails_a_step_that_stops_printing(tmp_path, defaults, capsys, monkeypatch):
    fake_training(tmp_path, defaults, "print('train: step 1/6', flush=True)\ntime.sleep(30)\n")
    monkeypatch.setattr(post, "training_python", lambda root: sys.executable)
    monkeypatch.setattr(post, "STALL_S", 1.0)
    started = time.monotonic()
    assert post.main({**defaults, "smoke_test": "full"}, root=tmp_path) == 0
    assert time.monotonic() - started < 20
    out = capsys.readouterr().out
    assert "SMOKE FAILED at step 'smoke training': no result after 900 s or no output for 1 s" in out


def test_hook_sources_take_answers_only_as_data():
    expected = {  # JSON in raw strings (tojson escapes quotes), read by json.loads: data, never code
        "pre_gen_project": ["    sys.exit(main(json.loads(r'''{{ cookiecutter | tojson }}'''), "
                            "json.loads(r'''{{ _cookiecutter | tojson }}''')))"],
        "post_gen_project": ["    sys.exit(main(json.loads(r'''{{ cookiecutter | tojson }}'''),",
                             "                  source=json.loads(r'''{{ template_source() | tojson }}''')))"],
    }
    for name, lines in expected.items():
        source = (ROOT / "hooks" / f"{name}.py").read_text()
        jinja = [text for text in source.splitlines() if "{{" in text or "{%" in text]
        assert jinja == lines


def test_next_path_is_relative_to_where_cookiecutter_started(tmp_path):
    project = tmp_path / "build" / "demo" / "grpo-reasoner"
    project.mkdir(parents=True)
    assert post.next_path(project, {"PWD": str(tmp_path)}) == "build/demo/grpo-reasoner"  # make demo
    assert post.next_path(project, {"PWD": str(project.parent)}) == "grpo-reasoner"
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    assert post.next_path(project, {"PWD": str(elsewhere)}) == str(project)
    assert post.next_path(project, {}) == str(project)


def test_the_project_records_the_template_commit_it_was_generated_from(tmp_path):
    """Generated from a clean git clone of the template, .cookiecutter.json holds the clone's commit and path, and
    update_project.py needs no --from; from a clone with an uncommitted change, no commit is claimed."""
    clone = tmp_path / "grpo-template"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip()
    cookiecutter = Path(sys.executable).with_name("cookiecutter")

    def render(out: Path) -> dict:
        subprocess.run([str(cookiecutter), "--no-input", "-o", str(out), str(clone), "smoke_test=skip"],
                       check=True, capture_output=True, timeout=300)
        return json.loads((out / "grpo-reasoner" / ".cookiecutter.json").read_text())

    answers = render(tmp_path / "clean")
    assert (answers["_commit"], answers["_template_path"]) == (head, str(clone.resolve()))
    project = tmp_path / "clean" / "grpo-reasoner"
    commit = ["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "gen"]
    for args in (["init", "-q"], ["add", "-A"], commit):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    done = subprocess.run([sys.executable, str(clone / "update_project.py"), str(project)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.startswith("updated"), done.stdout + done.stderr
    with open(clone / "README.md", "a", encoding="utf-8") as readme:  # a change not committed: no commit to name
        readme.write("\nlocal change\n")
    assert "_commit" not in render(tmp_path / "changed")


def test_on_a_terminal_the_end_of_priming_stays_on_screen(monkeypatch, capsys):
    """The live line does not jump from priming's last step to training's first as if priming had stopped: the
    priming line is ended and its closing line shown before training's live line starts."""
    import queue as queues

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    lines = queues.Queue()
    for line in ["format priming step 539/1000 | loss 0.002", "format priming done at step 540: mean loss 0.0019",
                 "some log line", "train: step 1/120 | 0.3 s/step", None]:
        lines.put(line)
    assert post._follow(lines, timeout=30, show=post.SMOKE_SHOWS)
    out = capsys.readouterr().out
    assert "format priming step 539/1000 | loss 0.002\nformat priming done at step 540" in out, repr(out)
    assert "some log line" not in out and out.endswith("train: step 1/120 | 0.3 s/step\n")
