"""Template updates: a project generated from an earlier commit of this template, changed the way a user changes
it, takes the current template with update_project.py (the generated README's "Updating") and keeps the change."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

OLD_DISTANCE = 10  # commits back from HEAD: the project was generated that long ago


def run(*args, cwd):
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return done.stdout


def old_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--verify", f"HEAD~{OLD_DISTANCE}^{{commit}}"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:  # a shallow clone: `git fetch --unshallow` gives the history this test needs
        message = f"the template's history has no HEAD~{OLD_DISTANCE} (a shallow clone? git fetch --unshallow)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return done.stdout.strip()


def updater():
    spec = importlib.util.spec_from_file_location("update_project", ROOT / "update_project.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def untouched_setting(old: str, now: Path) -> str:
    """A setting of the old cpu-only config whose line and neighbours the template has not changed since (a user's
    edit there merges without conflict, whatever the template changed elsewhere in the file)."""
    lines, current = old.splitlines(), (now / "configs" / "cpu-only.yaml").read_text()
    for i in range(1, len(lines) - 1):
        match = re.match(r"(\w+): ", lines[i])
        if match and "\n".join(lines[i - 1 : i + 2]) in current:
            return match.group(1)
    pytest.fail("every setting of configs/cpu-only.yaml changed since the old commit")


@pytest.fixture
def old_project(tmp_path):
    """A project rendered from the template as it was OLD_DISTANCE commits ago, committed, then changed and
    committed again the way a user would."""
    update = updater()
    old = old_commit()
    answers = {"project_name": "Kept Changes", "task": "json", "smoke_test": "skip"}
    project = update.render(old, answers, tmp_path / "work", "project")
    project = Path(project.rename(tmp_path / "project"))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "gen"]):
        run("git", *args, cwd=project)
    readme = project / "README.md"
    readme.write_text(readme.read_text() + "\n## Our lab's notes\n\nRun on node gpu-7 only.\n")
    config = project / "configs" / "cpu-only.yaml"
    key = untouched_setting(config.read_text(), update.render(None, answers, tmp_path / "now", "project"))
    text, count = re.subn(rf"(?m)^{key}: .*$", f"{key}: 1234  # our value", config.read_text())
    assert count == 1
    config.write_text(text)
    (project / "my_notes.md").write_text("mine\n")
    run("git", "add", "-A", cwd=project)
    run("git", "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "my changes", cwd=project)
    return project, old


def test_update_from_an_older_template_keeps_the_users_changes(old_project, tmp_path):
    project, old = old_project
    before = set(run("git", "ls-files", cwd=project).split())
    out = subprocess.run([sys.executable, str(ROOT / "update_project.py"), str(project), "--from", old],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    # the user's changes survive
    assert "## Our lab's notes\n\nRun on node gpu-7 only." in (project / "README.md").read_text()
    assert re.search(r"(?m)^\w+: 1234  # our value$", (project / "configs" / "cpu-only.yaml").read_text())
    assert (project / "my_notes.md").read_text() == "mine\n"
    # and the project now has the current template: every file a fresh rendering has, with the same content
    # where the user changed nothing
    fresh = updater().render(None, {"project_name": "Kept Changes", "task": "json", "smoke_test": "skip"},
                             tmp_path / "fresh", "project")
    fresh_files = {str(p.relative_to(fresh)) for p in fresh.rglob("*") if p.is_file()}
    after = {str(p.relative_to(project)) for p in project.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert fresh_files <= after, sorted(fresh_files - after)
    assert after - fresh_files <= {"my_notes.md"} | (before - fresh_files), sorted(after - fresh_files)
    changed_by_user = {"README.md", "configs/cpu-only.yaml", ".cookiecutter.json"}
    for name in sorted(fresh_files - changed_by_user):
        assert (project / name).read_bytes() == (fresh / name).read_bytes(), name
    assert (fresh / "README.md").read_text() in (project / "README.md").read_text()  # template's README + notes
    assert json.loads((project / ".cookiecutter.json").read_text())["task"] == "json"


def test_update_refuses_uncommitted_work(old_project):
    project, old = old_project
    (project / "README.md").write_text("dirty\n")
    out = subprocess.run([sys.executable, str(ROOT / "update_project.py"), str(project), "--from", old],
                         capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith("error: ") and "uncommitted" in out.stderr
    assert (project / "README.md").read_text() == "dirty\n"


def test_a_module_the_template_moved_keeps_the_users_change(tmp_path):
    """The package's families became subpackages (memory.py -> preflight/memory.py): a project generated before,
    whose memory.py the user changed, updates with the change in the moved file (the template's diff carries
    renames)."""
    moved = "{{cookiecutter.project_slug}}/{{cookiecutter.package_name}}/preflight/memory.py"
    done = subprocess.run(["git", "log", "--format=%H", "--diff-filter=A", "--", moved], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    if not done.stdout.strip():
        pytest.fail("no commit of the template adds preflight/memory.py (a shallow clone? git fetch --unshallow)")
    old = f"{done.stdout.split()[-1]}^"  # the template just before the move
    update = updater()
    project = Path(update.render(old, {"project_name": "Kept Changes", "task": "json", "smoke_test": "skip"},
                                 tmp_path / "work", "project").rename(tmp_path / "project"))
    commit = ["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm"]
    for args in (["init", "-q"], ["add", "-A"], [*commit, "gen"]):
        run("git", *args, cwd=project)
    mine = project / "kept_changes" / "memory.py"
    mine.write_text(mine.read_text() + "\n# our lab: A100s only\n")
    run("git", "add", "-A", cwd=project)
    run("git", *commit, "mine", cwd=project)
    out = subprocess.run([sys.executable, str(ROOT / "update_project.py"), str(project), "--from", old],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert not mine.exists()
    assert "# our lab: A100s only" in (project / "kept_changes" / "preflight" / "memory.py").read_text()
