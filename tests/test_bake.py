"""Bake the template over a product of options filtered by an explicit validity rule, and check each project."""

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import yaml
from conftest import OPTIONS, ROOT, TEMPLATE, load_hook, task_names, task_settings

pre = load_hook("pre_gen_project")
post = load_hook("post_gen_project")
CHOICES = pre.choices(OPTIONS)
PKG_DIR = "{{cookiecutter.package_name}}"
SKIP = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def template_files(folder: Path) -> set[str]:
    """Files under a template folder, with the package directory written "{pkg}"; "_" entries and a task folder's
    spec files (task.toml, task.md) are template-only."""
    return {
        str(path.relative_to(folder)).replace(PKG_DIR, "{pkg}")
        for path in folder.rglob("*")
        if path.is_file() and not SKIP & set(path.parts) and not path.relative_to(folder).parts[0].startswith("_")
        and str(path.relative_to(folder)) not in post.SPEC_FILES
    }


COMMON_FILES = template_files(TEMPLATE)  # everything outside _tasks/
TASK_FILES = {task: template_files(TEMPLATE / "_tasks" / task) for task in task_names()}


# The GRPOConfig fields each `algorithm` answer must set in every config (written out, not read from the template).
ALGORITHM_FIELDS = {
    "dapo": {"loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.28, "beta": 0.0, "scale_rewards": "group"},
    "dr_grpo": {"loss_type": "dr_grpo", "scale_rewards": "none", "beta": 0.0},
    "gspo": {"importance_sampling_level": "sequence", "epsilon": 3e-4, "epsilon_high": 4e-4, "beta": 0.0},
    "cispo": {"loss_type": "cispo", "epsilon_high": 5.0, "scale_rewards": "group", "beta": 0.0},
    "sapo": {"loss_type": "sapo", "sapo_temperature_pos": 1.0, "sapo_temperature_neg": 1.05, "beta": 0.0},
    "grpo": {"loss_type": "grpo", "scale_rewards": "group", "beta": 0.04},
}


def supported(combo: dict) -> bool:
    """The validity rule: the same combination rules pre_gen enforces, stated independently."""
    return not (combo["backend"] == "unsloth" and combo["gpu"] in ("cpu-only", "8x80gb"))


def combinations() -> list[dict]:
    """Every (task, gpu) pair; the other options rotate so each value of each appears with every task."""
    combos = []
    for index, (task, gpu) in enumerate(itertools.product(CHOICES["task"], CHOICES["gpu"])):
        combo = {"task": task, "gpu": gpu}
        for key in ("reward_mix", "algorithm", "backend", "tracking"):
            values = CHOICES[key]
            combo[key] = values[index % len(values)]
        combo["smoke_test"] = "quick" if index % 4 == 0 else "skip"
        combos.append(combo if supported(combo) else {**combo, "backend": "trl"})
    return combos


COMBOS = combinations()


def combo_id(combo: dict) -> str:
    keys = ("task", "gpu", "reward_mix", "algorithm", "backend", "tracking", "smoke_test")
    return "-".join(combo[key] for key in keys)


def expected_files(task: str, package: str) -> set[str]:
    return {path.format(pkg=package) for path in COMMON_FILES | TASK_FILES[task]}


def project_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not SKIP & set(p.parts)}


def test_task_files_do_not_collide_with_common_files():
    for task, files in TASK_FILES.items():
        assert not files & COMMON_FILES, task
        assert {"{pkg}/task.py", "{pkg}/rewards/task.py", "data/sample.jsonl"} <= files, task


def test_combinations_cover_every_value():
    for key, values in CHOICES.items():
        seen = {combo[key] for combo in COMBOS}
        assert seen == set(values) or key == "smoke_test" and seen == {"quick", "skip"}, key
    assert all(supported(combo) for combo in COMBOS)


@pytest.mark.parametrize("combo", COMBOS, ids=combo_id)
def test_bake(cookies, combo):
    result = cookies.bake(extra_context=combo)
    assert result.exit_code == 0, result.exception
    for key, value in combo.items():  # the override really reached the template
        assert result.context[key] == value
    root = Path(result.project_path)
    package = result.context["package_name"]
    assert project_files(root) == expected_files(combo["task"], package)

    for relative in project_files(root):
        path = root / relative
        if path.suffix == ".png":  # a binary asset, copied as it is
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jinja":  # copied without rendering: a real chat template, byte for byte
            source = ROOT / "{{cookiecutter.project_slug}}" / "{{cookiecutter.package_name}}" / path.name
            assert text == source.read_text(encoding="utf-8")
            continue
        for marker in ("{{", "{%", "{#"):
            assert marker not in text, f"{path.relative_to(root)} has a leftover {marker}"

    ruff = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(root)],
                          capture_output=True, text=True, check=False)
    assert ruff.returncode == 0, ruff.stdout[-3000:]

    install_block = (root / "README.md").read_text().split("## Install", 1)[1].split("```", 2)[1]
    assert ("apt-get install bubblewrap" in install_block) == (combo["task"] == "code")  # the sandbox needs it
    train_block = (root / "README.md").read_text().split("## Train", 1)[1].split("```", 2)[1]
    default_run = next(line for line in train_block.splitlines() if "the default preset" in line)
    multi = combo["gpu"] == "8x80gb"  # one node of 8 GPUs: launched, never a single `python train.py`
    assert default_run.startswith("scripts/launch_colocate.sh" if multi else "python train.py"), default_run
    package_init = (root / package / "__init__.py").read_text()
    assert f'DEFAULT_CONFIG = "configs/{combo["gpu"]}.yaml"' in package_init
    mix = task_settings(combo["task"]).reward_mixes[combo["reward_mix"]]
    for config_path in (root / "configs").glob("*.yaml"):
        config = yaml.safe_load(config_path.read_text())
        assert config["reward_funcs"] == [name for name, _ in mix]
        assert config["reward_weights"] == [weight for _, weight in mix]
        assert config["model_backend"] == combo["backend"]
        per_step = config["per_device_train_batch_size"] * config.get("num_processes", 1) * config.get(
            "gradient_accumulation_steps", 1)
        assert per_step % config["num_generations"] == 0, config_path.name
        if config_path.stem != "smoke":
            assert config["report_to"] == combo["tracking"]
        elif combo["tracking"] != "none":  # a CPU try logs nowhere; the config and the README say so, and how to
            assert config["report_to"] == "none"
            assert f"--report_to {combo['tracking']} adds it" in config_path.read_text()
            assert "the smoke config logs to no\ntracker" in (root / "README.md").read_text()
        assert {key: config.get(key) for key in ALGORITHM_FIELDS[combo["algorithm"]]} == ALGORITHM_FIELDS[
            combo["algorithm"]], config_path.name
        if config.get("use_vllm"):  # keep TRL's correction for vLLM's slightly off-policy samples
            assert config["vllm_importance_sampling_correction"] is True, config_path.name
        if combo["task"] == "code":  # real GPU runs refuse to execute model code without bubblewrap
            expected = "auto" if config_path.stem in ("smoke", "cpu-only") else "required"
            assert config["sandbox_isolation"] == expected, config_path.name
        else:
            assert "sandbox_isolation" not in config


def test_base_model_override_reaches_every_preset(cookies):
    result = cookies.bake(extra_context={"base_model": "my-org/My-Model-1B", "smoke_test": "skip"})
    assert result.exit_code == 0, result.exception
    assert result.context["base_model"] == "my-org/My-Model-1B"
    for config_path in (Path(result.project_path) / "configs").glob("*.yaml"):
        model = yaml.safe_load(config_path.read_text())["model_name_or_path"]
        assert model == (".smoke/tiny-model" if config_path.stem == "smoke" else "my-org/My-Model-1B")


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"backend": "unsloth", "gpu": "cpu-only"}, "backend 'unsloth' needs a CUDA GPU"),
        ({"backend": "unsloth", "gpu": "8x80gb"}, "backend 'unsloth' trains on one GPU"),
        ({"package_name": "trl"}, "would shadow the module 'trl'"),
        ({"project_name": "Two\nLines"}, "project_name must be one line"),
        ({"base_model": "has space/x"}, "is not a hub id"),
    ],
    ids=["unsloth-cpu", "unsloth-multigpu", "package-trl", "newline-name", "bad-base-model"],
)
def test_unsupported_fails_in_pre_gen(cookies, context, message):
    # refused while the answers render (local_extensions.py), with the exception a failed pre-gen hook raises
    result = cookies.bake(extra_context={**context, "smoke_test": "skip"})
    assert result.exit_code != 0
    assert type(result.exception).__name__ == "FailedHookException"
    assert str(result.exception).startswith("error: ") and message in str(result.exception)
    assert result.project_path is None or not Path(result.project_path).exists()


@pytest.mark.parametrize(
    "name",
    ['Quote "Me" \'Now\'', "Back\\slash Project", "Ünïcode Prøject", "Semi; rm -rf ~ `x` $(y)"],
    ids=["quotes", "backslash", "unicode", "shell"],
)
def test_hostile_project_name_is_data(cookies, name):
    result = cookies.bake(extra_context={"project_name": name, "smoke_test": "quick"})
    assert result.exit_code == 0, result.exception
    root = Path(result.project_path)
    assert pre.SLUG.fullmatch(root.name) and pre.PACKAGE.fullmatch(result.context["package_name"])
    saved = json.loads((root / ".cookiecutter.json").read_text())
    assert saved["project_name"] == result.context["project_name"]
    description = tomllib.loads((root / "pyproject.toml").read_text())["project"]["description"]
    assert description.endswith(name)
    assert saved["project_name"] == name


def test_project_name_with_template_syntax_is_refused_cleanly(cookies, tmp_path):
    # Cookiecutter renders --no-input/extra_context values as templates; an unknown variable is refused by it
    # before anything is written. (A name typed at the prompt is not rendered: it is data.)
    result = cookies.bake(extra_context={"project_name": "Brace {{ nope }} Name", "smoke_test": "skip"})
    assert result.exit_code != 0
    assert "Unable to render variable 'project_name'" in str(result.exception)
    assert result.project_path is None
