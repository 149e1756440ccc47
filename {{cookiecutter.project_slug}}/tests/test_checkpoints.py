"""Kills during saves never brick a run: resume takes the newest complete checkpoint (and says which it skipped),
the primed model appears whole or not at all, a rerun of a finished run does nothing, and a normal run prints none
of the warnings the project used to cause."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from _pkg import mod
from _smoke_run import ROOT, STEPS, smoke_run

checkpoints = mod("training.checkpoints")
# Trainer._save_checkpoint writes these after the model's own files, trainer_state.json last.
RESUME_FILES = ["optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json"]
NEEDED = ["model.safetensors", *RESUME_FILES]  # a checkpoint without any one of them cannot be resumed
# Warnings the project itself caused (a deprecated config field, a tied tiny model's resume); TRL's own use of
# transformers' deprecated `is_gradient_checkpointing` is not ours to remove.
AVOIDABLE = ["`gradient_checkpointing` is deprecated", "`gradient_checkpointing_enable` is deprecated",
             "`is_gradient_checkpointing` is deprecated", "missing keys in the checkpoint"]


@pytest.fixture(scope="module")
def real_checkpoint(tmp_path_factory) -> Path:
    return smoke_run(tmp_path_factory) / f"checkpoint-{STEPS}"


def copy_of(checkpoint: Path, to: Path, keep=lambda name: True) -> Path:
    to.mkdir(parents=True)
    for item in checkpoint.iterdir():
        if item.is_file() and keep(item.name):
            shutil.copy2(item, to / item.name)
    return to


def save_order(checkpoint: Path) -> list[str]:
    names = sorted(p.name for p in checkpoint.iterdir() if p.is_file())
    return [n for n in names if n not in RESUME_FILES] + [n for n in RESUME_FILES if n in names]


def half_written(real_checkpoint: Path, tmp_path: Path):
    """Every state a kill can leave: each prefix of the save order, each needed file missing (a rotation cut
    short), and a trainer_state.json cut in the middle."""
    order = save_order(real_checkpoint)
    assert set(NEEDED) <= set(order) and order[-1] == "trainer_state.json"
    for count in range(len(order)):
        yield f"first {count} files", lambda to, c=count: copy_of(real_checkpoint, to, lambda n: n in order[:c])
    for name in NEEDED:
        yield f"all but {name}", lambda to, n=name: copy_of(real_checkpoint, to, lambda x: x != n)

    def cut_state(to):
        copy_of(real_checkpoint, to)
        text = (to / "trainer_state.json").read_text()
        (to / "trainer_state.json").write_text(text[: len(text) // 2])

    yield "trainer_state.json cut short", cut_state


@pytest.mark.slow
def test_a_real_checkpoint_is_complete_and_every_half_written_one_is_not(real_checkpoint, tmp_path):
    assert checkpoints.problem(real_checkpoint) is None
    for i, (state, make) in enumerate(half_written(real_checkpoint, tmp_path)):
        folder = tmp_path / f"c{i}"
        make(folder)
        assert checkpoints.problem(folder) is not None, state
    only_model = copy_of(real_checkpoint, tmp_path / "only", lambda n: n not in RESUME_FILES[:-1])
    assert checkpoints.problem(only_model, save_only_model=True) is None  # save_only_model saves no optimizer


@pytest.mark.slow
def test_resume_skips_and_sets_aside_every_newer_incomplete_checkpoint(real_checkpoint, tmp_path):
    for i, (state, make) in enumerate(half_written(real_checkpoint, tmp_path)):
        out = tmp_path / f"run{i}"
        copy_of(real_checkpoint, out / "checkpoint-4")
        make(out / "checkpoint-6")
        make(out / "checkpoint-10")  # numerically after checkpoint-6: sorted by step, not by name
        lines: list[str] = []
        assert checkpoints.last_complete(out, log=lines.append) == str(out / "checkpoint-4"), state
        skipped = [f"skipping incomplete checkpoint {out / name}" for name in ("checkpoint-10", "checkpoint-6")]
        assert [line.split(":")[0] for line in lines] == skipped, state
        assert all("moved to" in line and "\n" not in line for line in lines)
        assert sorted(p.name for p in (out / "incomplete").iterdir()) == ["checkpoint-10", "checkpoint-6"]
        assert checkpoints.last_complete(out, log=lines.append) == str(out / "checkpoint-4") and len(lines) == 2
    lines = []
    make(tmp_path / "alone" / "checkpoint-1")
    assert checkpoints.last_complete(tmp_path / "alone", log=lines.append) is None and len(lines) == 1


def args(tmp_path, **overrides):
    settings = {"resume_from_checkpoint": None, "output_dir": str(tmp_path), "save_only_model": False,
                "save_on_each_node": False, "main_process_first": lambda **_: _nothing()}
    return SimpleNamespace(**{**settings, **overrides})


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.slow
def test_an_incomplete_resume_from_checkpoint_is_one_line(real_checkpoint, tmp_path):
    partial = copy_of(real_checkpoint, tmp_path / "checkpoint-3", lambda n: n != "trainer_state.json")
    with pytest.raises(checkpoints.CheckpointError) as error:
        checkpoints.resume_point(args(tmp_path, resume_from_checkpoint=str(partial)), auto_resume=True)
    assert "incomplete (no trainer_state.json" in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(checkpoints.CheckpointError, match="is not a folder"):
        checkpoints.resume_point(args(tmp_path, resume_from_checkpoint=str(tmp_path / "nope")), auto_resume=True)
    whole = copy_of(real_checkpoint, tmp_path / "checkpoint-2")
    assert checkpoints.resume_point(args(tmp_path), auto_resume=False) is None
    assert checkpoints.resume_point(args(tmp_path), auto_resume=True) == str(whole)


@pytest.mark.slow
def test_finished_step_against_max_steps_and_epochs(real_checkpoint):
    state = json.loads((real_checkpoint / "trainer_state.json").read_text())
    assert state["global_step"] == STEPS
    assert checkpoints.finished_step(real_checkpoint, STEPS, 3.0) == STEPS
    assert checkpoints.finished_step(real_checkpoint, STEPS - 1, 3.0) == STEPS
    assert checkpoints.finished_step(real_checkpoint, STEPS + 1, 3.0) is None
    assert checkpoints.finished_step(real_checkpoint, -1, state["num_train_epochs"]) == STEPS
    assert checkpoints.finished_step(real_checkpoint, -1, state["num_train_epochs"] + 1) is None


@pytest.mark.slow
def test_the_primed_model_is_whole_or_absent(tmp_path_factory, tmp_path):
    primed = smoke_run(tmp_path_factory) / "format-primed"
    assert checkpoints.is_model_dir(primed)
    names = sorted(p.name for p in primed.iterdir())
    for name in ("config.json", "model.safetensors", "tokenizer_config.json"):  # e.g. a config.json alone
        assert not checkpoints.is_model_dir(copy_of(primed, tmp_path / f"no-{name}", lambda n, x=name: n != x))
    target = tmp_path / "format-primed"
    with pytest.raises(KeyboardInterrupt), checkpoints.atomic_dir(target) as partial:
        shutil.copy2(primed / "config.json", partial / "config.json")
        raise KeyboardInterrupt  # Ctrl-C in the middle of the save
    assert not target.exists() and not (tmp_path / "format-primed.partial").exists()
    with checkpoints.atomic_dir(target) as partial:
        for item in primed.iterdir():
            shutil.copy2(item, partial / item.name)
    assert sorted(p.name for p in target.iterdir()) == names and checkpoints.is_model_dir(target)
    with pytest.raises(KeyboardInterrupt), checkpoints.atomic_file(tmp_path / "health.json") as handle:
        handle.write('{"verdict": ')
        raise KeyboardInterrupt
    assert list(tmp_path.glob("health.json*")) == []


def test_runs_started_together_build_the_tiny_model_once(tmp_path):
    # Two smoke runs started at once in a fresh project both need .smoke/tiny-model: one builds it, the other
    # waits for it (they raced on one temporary folder, and one of them died).
    from _pkg import PKG

    tiny = mod("training.tiny")
    out = tmp_path / "tiny-model"
    code = (f"import sys, torch, transformers; from {PKG}.training import tiny; print('ready', flush=True); "
            f"tiny.build_tiny_model({str(out)!r}, 'curriculum:50'); print('built')")
    with tiny.build_lock(out):  # held here until both builders have reached it
        builders = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for builder in builders:
            assert builder.stdout.readline() == "ready\n", builder.communicate()[1][-3000:]
        time.sleep(2)
        assert not out.exists() and all(builder.poll() is None for builder in builders)  # both wait on the lock
    results = [builder.communicate(timeout=300) for builder in builders]
    assert [builder.returncode for builder in builders] == [0, 0], [err[-3000:] for _, err in results]
    assert all(stdout.strip() == "built" for stdout, _ in results)
    assert checkpoints.is_model_dir(out) and not out.with_name(out.name + checkpoints.PARTIAL).exists()


def start(command: list[str], log: Path) -> subprocess.Popen:
    with log.open("w") as handle:
        return subprocess.Popen(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True, preexec_fn=default_sigint)


def default_sigint() -> None:
    """The run takes Ctrl-C as a terminal's user would give it, even when these tests run in the background (where
    the shell starts every process with SIGINT ignored, and Python then keeps it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_when(process: subprocess.Popen, path: Path, sig: int) -> None:
    """Send ``sig`` to the run's process group the moment ``path`` appears (a save has begun)."""
    deadline = time.monotonic() + 240
    while not path.exists():
        assert process.poll() is None, f"the run ended before {path.name} appeared"
        assert time.monotonic() < deadline, f"no {path.name} within 240 s"
        time.sleep(0.002)
    os.killpg(process.pid, sig)
    try:
        process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"signal {sig} did not end the run") from None
    assert process.returncode != 0


@pytest.mark.slow
def test_kills_during_saves_never_brick_the_run(tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "train.py", "--config", "configs/smoke.yaml", "--output_dir", str(out),
               "--max_steps", "2", "--save_steps", "1", "--format_priming_steps", "2", "--save_total_limit", "1"]

    # 1. Ctrl-C while the primed model is being saved: never a half-written format-primed.
    interrupt_when(start(command, tmp_path / "run1.log"), out / "format-primed.partial", signal.SIGINT)
    primed_after_kill = checkpoints.is_model_dir(out / "format-primed")
    assert primed_after_kill or not (out / "format-primed").exists()

    # 2. The rerun primes again if it has to; SIGKILL during the first checkpoint save.
    interrupt_when(start(command, tmp_path / "run2.log"), out / "checkpoint-1", signal.SIGKILL)
    text = (tmp_path / "run2.log").read_text()
    assert ("format priming" in text) != primed_after_kill, text[-2000:]
    assert checkpoints.is_model_dir(out / "format-primed")
    why = checkpoints.problem(out / "checkpoint-1")
    assert why is not None, "the kill did not land inside the checkpoint save"

    # 3. The rerun skips the half-written checkpoint-1, starts cleanly and finishes.
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"skipping incomplete checkpoint {out / 'checkpoint-1'}: {why}" in done.stdout, done.stdout[-2000:]
    assert "resuming from" not in done.stdout + done.stderr and "format priming" not in done.stdout
    state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2 and [e["step"] for e in state["log_history"] if "reward" in e] == [1, 2]
    assert (out / "incomplete" / "checkpoint-1").is_dir()

    # 4. A rerun of the finished run does nothing but say so (and puts back a final model lost to a kill).
    (out / "model.safetensors").unlink()
    before = {p.name: p.stat().st_mtime_ns for p in (out / "checkpoint-2").iterdir()}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{out} finished at step 2 = max_steps: nothing to do." in done.stdout
    assert "raise --max_steps" in done.stdout and "--auto_resume false" in done.stdout
    assert "the final model save was interrupted" in done.stdout and checkpoints.is_model_dir(out)
    assert "format priming" not in done.stdout and "rank 0: finished" not in done.stdout
    assert {p.name: p.stat().st_mtime_ns for p in (out / "checkpoint-2").iterdir()} == before
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2"]


@pytest.mark.slow
def test_a_normal_run_prints_none_of_the_avoidable_warnings(tmp_path_factory):
    run = smoke_run(tmp_path_factory)
    stderr = (run.parent / "train.stderr").read_text()
    assert "Traceback" not in stderr
    for warning in AVOIDABLE:
        assert warning not in stderr, warning
