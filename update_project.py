"""Apply a newer version of this template to a project generated from an older one, keeping the project's changes.

    python path/to/grpo-template/update_project.py PROJECT [--from OLD_REF] [--to NEW_REF]

The equivalent of ``cruft update`` (cruft itself cannot render this template: it does not load the template's
``local_extensions``). In a git clone of the template, it renders the template as it was at OLD_REF (the commit
the project was generated from or last updated to: ``.cookiecutter.json``'s ``_commit``, which this script writes,
else ``--from``) and as it is at NEW_REF (default: this clone's working tree), both with the project's own answers
from ``.cookiecutter.json`` (the smoke test skipped), and applies the difference between the two renderings to the
project with git's three-way merge (``git apply --3way``). Lines only you changed keep your change, lines only the
template changed get the template's (in a file the template moved too: the difference carries the move); where
both changed the same lines git leaves conflict markers
(``<<<<<<< ours ... >>>>>>> theirs``) and lists the files: edit them, ``git add`` them, commit. The project must be a
git repository with its work committed (``git status`` clean), so ``git diff`` shows exactly what the update did and
``git checkout . && git clean -fd`` undoes it. Needs git and cookiecutter (``pip install cookiecutter==2.7.1``).
Exit status: 0 applied cleanly, 1 conflicts to resolve, 2 nothing done (an error, printed in one line).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent
ANSWERS = ".cookiecutter.json"


class UpdateError(RuntimeError):
    pass


def git(*args: str, cwd: Path, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, **kwargs)
    if check and done.returncode != 0:
        raise UpdateError(f"git {' '.join(args[:2])} failed: {(done.stderr or done.stdout).strip()[:300]}")
    return done


def answers_of(project: Path) -> dict:
    """The project's answers (private keys dropped), with the smoke test skipped."""
    path = project / ANSWERS
    if not path.is_file():
        raise UpdateError(f"{path} not found: is {project} a project generated from this template?")
    saved = json.loads(path.read_text(encoding="utf-8"))
    return {**{k: v for k, v in saved.items() if not k.startswith("_")}, "smoke_test": "skip"}


def export(ref: str | None, into: Path) -> None:
    """The template at ``ref`` (None: this clone's working tree, untracked files that git does not ignore too)."""
    into.mkdir(parents=True)
    if ref is None:
        listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=TEMPLATE).stdout
        for name in filter(None, listed.split("\0")):
            source = TEMPLATE / name
            if source.is_file():
                (into / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, into / name)
        return
    archive = subprocess.run(["git", "archive", "--format=tar", ref], cwd=TEMPLATE, capture_output=True)
    if archive.returncode != 0:
        raise UpdateError(f"template ref {ref!r} not found in {TEMPLATE}: {archive.stderr.decode().strip()[:200]}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


def render(ref: str | None, answers: dict, work: Path, name: str) -> Path:
    """The project rendered from the template at ``ref``, at ``work/name`` (both renderings use the same template
    and output paths, so that ``.cookiecutter.json`` differs only where the answers do)."""
    template, output = work / "template", work / "output"
    shutil.rmtree(template, ignore_errors=True)
    shutil.rmtree(output, ignore_errors=True)
    export(ref, template)
    code = ("import json, sys\nfrom cookiecutter.main import cookiecutter\n"
            "print(cookiecutter(sys.argv[1], no_input=True, output_dir=sys.argv[2],\n"
            "                   extra_context=json.loads(sys.argv[3])))")
    done = subprocess.run([sys.executable, "-c", code, str(template), str(output), json.dumps(answers)],
                          capture_output=True, text=True, cwd=work)
    if done.returncode != 0:
        raise UpdateError(f"rendering the template at {ref or 'the working tree'} failed: "
                          f"{(done.stderr.strip().splitlines() or ['?'])[-1]}")
    rendered = Path(done.stdout.strip().splitlines()[-1])
    target = work / name
    shutil.move(str(rendered), target)
    return target


def commit_of(ref: str | None) -> str | None:
    """The commit ``ref`` names; for the working tree, HEAD when the tree is clean (else None: not a commit)."""
    if ref is None:
        if git("status", "--porcelain", cwd=TEMPLATE).stdout.strip():
            return None
        ref = "HEAD"
    return git("rev-parse", "--verify", f"{ref}^{{commit}}", cwd=TEMPLATE).stdout.strip()


def update(project: Path, old: str | None, new: str | None) -> list[str]:
    """Apply the template's changes from ``old`` to ``new`` to ``project``; return the files left in conflict."""
    project = project.resolve()
    if git("rev-parse", "--show-toplevel", cwd=project, check=False).returncode != 0:
        raise UpdateError(f"{project} is not a git repository: `git init && git add -A && git commit` first")
    if git("status", "--porcelain", cwd=project).stdout.strip():
        raise UpdateError(f"{project} has uncommitted changes: commit or stash them first")
    saved = json.loads((project / ANSWERS).read_text(encoding="utf-8")) if (project / ANSWERS).is_file() else {}
    old = old or saved.get("_commit")
    if not old:
        raise UpdateError("which template commit was the project generated from? pass --from COMMIT (a commit of "
                          "the template from the day you generated it: git log --until=YYYY-MM-DD -1)")
    answers = answers_of(project)
    with tempfile.TemporaryDirectory(prefix="template-update-") as tmp:
        work = Path(tmp)
        render(old, answers, work, "base")
        render(new, answers, work, "new")
        diff = subprocess.run(["git", "diff", "--no-index", "--binary", "--full-index", "--no-color", "--find-renames",
                               "base", "new"], cwd=work, capture_output=True)
        if diff.returncode not in (0, 1):
            raise UpdateError(f"git diff failed: {diff.stderr.decode().strip()[:300]}")
        if diff.stdout:
            # the base rendering's blobs, so that git apply can merge three ways whatever the project's history
            files = [str(p) for p in (work / "base").rglob("*") if p.is_file()]
            git("hash-object", "-w", "--stdin-paths", cwd=project, input="\n".join(files))
            patch = work / "template.patch"
            patch.write_bytes(diff.stdout)
            applied = git("apply", "--3way", "-p2", "--whitespace=nowarn", str(patch), cwd=project, check=False)
    conflicts = git("diff", "--name-only", "--diff-filter=U", cwd=project).stdout.split()
    if diff.stdout and applied.returncode != 0 and not conflicts:  # refused whole (a file it changes is missing)
        problem = next((line for line in applied.stderr.splitlines() if line.startswith("error:")), applied.stderr)
        raise UpdateError(f"git apply refused the template's changes, nothing changed: {problem.strip()[:300]}")
    commit = commit_of(new)
    if commit and (project / ANSWERS).is_file():  # the next update starts from here
        saved = json.loads((project / ANSWERS).read_text(encoding="utf-8"))
        recorded = {**saved, "_commit": commit, "_template_path": str(TEMPLATE)}
        (project / ANSWERS).write_text(json.dumps(recorded, indent=4, sort_keys=True) + "\n", encoding="utf-8")
    return conflicts


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("project", type=Path, help="the generated project (a git repository, work committed)")
    cli.add_argument("--from", dest="old", default=None,
                     help="the template commit the project was generated from (default: .cookiecutter.json's _commit)")
    cli.add_argument("--to", dest="new", default=None,
                     help="the template ref to update to (default: the working tree)")
    args = cli.parse_args(argv)
    try:
        conflicts = update(args.project, args.old, args.new)
    except (UpdateError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if conflicts:
        print(f"conflicts in {', '.join(conflicts)}: resolve the <<<<<<< ... >>>>>>> blocks, `git add` the files "
              "and commit (undo the whole update: git reset --hard)")
        return 1
    print(f"updated {args.project}: review with `git diff HEAD`, commit it (undo: git checkout . && git clean -fd)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
