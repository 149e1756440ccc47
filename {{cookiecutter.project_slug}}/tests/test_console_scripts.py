"""The console commands of ``[project.scripts]`` work from a fresh ``pip install -e .``: in a new virtual environment
that sees this one's packages (nothing is downloaded), each answers ``--help``, and ``-train`` fails a missing
config with train.py's one line."""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from _pkg import mod

ROOT = Path(__file__).resolve().parent.parent


def scripts() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([\w.-]+) = "([\w.:]+)"$', table, flags=re.MULTILINE))


def test_console_commands_from_a_fresh_editable_install(tmp_path):
    names = scripts()
    assert {name.rsplit("-", 1)[1] for name in names} == {
        "train", "eval", "filter", "merge", "chat", "plot", "doctor", "download"}
    project = tmp_path / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(".smoke", "outputs", ".venv", "*.egg-info",
                                                                  "__pycache__", ".pytest_cache"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # the new environment sees this one's packages (torch, trl, setuptools, ...): this site directory, .pth included
    site_packages = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                    "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip()
    outer = sysconfig.get_paths()["purelib"]
    (Path(site_packages) / "outer.pth").write_text(f"import site; site.addsitedir({outer!r})\n")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                                "--quiet", "--no-deps", "--no-index", "--no-build-isolation", "-e", str(project)],
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr[-3000:]
    runs = {name: subprocess.Popen([str(venv / "bin" / name), "--help"], cwd=project, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True) for name in names}
    train = next(name for name in names if name.endswith("-train"))
    runs["missing config"] = subprocess.Popen([str(venv / "bin" / train), "--config", "configs/nope.yaml"],
                                              cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = {name: (*run.communicate(timeout=300), run.returncode) for name, run in runs.items()}
    for name in names:
        out, err, code = done[name]
        assert code == 0 and "usage:" in out.lower(), (name, err[-2000:])
        if not name.endswith(("-train", "-doctor", "-download")):  # python -m <pkg>.<module> or train.py's own
            assert out.lower().startswith(f"usage: {name}"), (name, out[:200])  # the name the user typed
    out, err, code = done["missing config"]
    assert code != 0 and err.strip().splitlines() == [err.strip()] and err.startswith("error: config"), err


def test_train_help_is_the_configs_settings_before_any_slow_import():
    """python train.py --help: the config's settings as options, without importing torch or trl (a blink, not the
    12 s and 1,400 lines of every TRL setting); --help_all gives those."""
    code = ("import runpy, sys\nsys.argv = ['train.py', *sys.argv[1:]]\n"
            "runpy.run_path('train.py', run_name='__main__')\n"
            "print('imported', 'trl' in sys.modules, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, "--config", "configs/smoke.yaml", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    out = done.stdout.splitlines()
    assert done.returncode == 0 and out[0].startswith("usage: train.py [--config CONFIG]"), done.stdout + done.stderr
    assert "The settings of configs/smoke.yaml:" in out and "  --build_tiny_model True" in out
    assert out[-1] == "imported False False" and len(out) < 150
    full = subprocess.run([sys.executable, "train.py", "--help_all"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert full.returncode == 0 and len(full.stdout.splitlines()) > 500 and "--vllm_mode" in full.stdout


def test_the_projects_own_options_are_spelled_with_underscores_and_the_old_hyphens_still_work(capsys):
    # one spelling, like TRL's settings (--max_steps): no parser of the project declares --some-option
    sources = [path for path in ROOT.rglob("*.py") if not {"tests", ".venv", "outputs"} & set(path.parts)]
    hyphenated = {f"{path.name}: {flag}" for path in sources
                  for flag in re.findall(r'add_argument\(\s*"(--[a-z0-9]+-[\w-]+)"', path.read_text(encoding="utf-8"))}
    assert len(sources) > 20 and not hyphenated, sorted(hyphenated)
    memory = mod("preflight.memory")
    with pytest.raises(SystemExit):
        memory.main(["--help"])
    listed = capsys.readouterr().out
    assert "--gpu_gb" in listed and "--gpu-gb" not in listed  # the old spelling still works, unlisted
    outputs = []
    for flag in (["--gpu_gb", "11"], ["--gpu-gb", "11"], ["--gpu-gb=11"]):  # the preset's name says 8
        outputs.append((memory.main(["--config", str(ROOT / "configs" / "8gb.yaml"), *flag]), capsys.readouterr()))
    assert re.search(r"fits? on 11 GB", outputs[0][1].out) and outputs[0] == outputs[1] == outputs[2], outputs


def test_the_install_script_says_what_it_installs_and_is_never_silent_for_long(tmp_path):
    """scripts/install.sh (the README's install): a line naming each install, one every PROGRESS_EVERY_S (20 s by
    default) while pip is quiet, PyPI's torch where PyTorch's CPU index fails, and the extras asked for."""
    assert "scripts/install.sh       # CPU only" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "every=${PROGRESS_EVERY_S:-20}" in (ROOT / "scripts" / "with_progress.sh").read_text(encoding="utf-8")
    calls = tmp_path / "calls"
    python = tmp_path / "python"  # a pip that takes 2 s over torch, silently, and whose CPU index does not answer
    python.write_text(f'#!/bin/sh\necho "$*" >> {calls}\ncase "$*" in *--index-url*) exit 1 ;; *torch*) sleep 2 ;; '
                      "esac\n")
    python.chmod(0o755)
    env = {**os.environ, "PYTHON": str(python), "PROGRESS_EVERY_S": "0.4"}
    CPU = "https://download.pytorch.org/whl/cpu"  # noqa: N806
    done = subprocess.run(["sh", "scripts/install.sh"], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    out = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert calls.read_text().splitlines() == [
        f"-m pip install --quiet torch==2.13.0 --index-url {CPU} --timeout 15 --retries 1",
        "-m pip install --quiet torch==2.13.0", "-m pip install --quiet -e .[dev]"]
    assert out[0] == f"installing torch==2.13.0 (CPU build) from {CPU} ..."
    assert out[1].startswith(f"installing torch==2.13.0 (CPU build) from {CPU}: failed")
    assert out[2].startswith(f"no CPU build from {CPU} (see above): installing torch")
    assert sum(line.startswith("  ... still no CPU build") for line in out) >= 2, out  # while pip is silent
    assert any(line.startswith("installing the project with its dev extras") for line in out), out
    calls.unlink()
    done = subprocess.run(["sh", "scripts/install.sh", "gpu", "--no-cache-dir"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    torch_call, project_call = calls.read_text().splitlines()
    assert torch_call == "-m pip install --quiet torch==2.13.0 --no-cache-dir"
    assert project_call.startswith("-m pip install --quiet -e .[dev,gpu") and project_call.endswith(" --no-cache-dir")
