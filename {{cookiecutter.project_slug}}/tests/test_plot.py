"""plot.py: a real training log becomes a real PNG; the panels follow the logged metrics; a missing log is one line."""

import json
import struct

import pytest
from _pkg import mod
from _smoke_run import STEPS, run_script, smoke_run

plots = mod("plots")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, after checking the signature."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return smoke_run(tmp_path_factory)


@pytest.mark.slow
def test_plot_of_a_training_run_is_a_real_png(trained):
    done = run_script("plot.py", str(trained))
    assert done.returncode == 0, done.stderr[-3000:]
    png = trained / "training.png"  # the default output, next to the run
    width, height = png_size(png)
    assert width >= 600 and height >= 300
    assert png.stat().st_size > 20_000  # drawn curves, not an empty canvas
    assert f"{STEPS} logged steps" in done.stdout


@pytest.mark.slow
def test_plot_of_a_checkpoint_to_a_chosen_file(trained, tmp_path):
    out = tmp_path / "figs" / "curves.png"
    done = run_script("plot.py", str(trained / f"checkpoint-{STEPS}"), "--output", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert png_size(out)[0] >= 600


@pytest.mark.slow
def test_the_smoke_log_has_every_panel_but_kl(trained):
    history = plots.load_history(plots.find_state(trained))
    titles = [p["title"] for p in plots.panels(history)]
    assert titles == ["reward", "reward spread", "completion length (tokens) / clipped ratio",
                      "verifier check: disagreement rate"]  # constant lr: a note
    assert "correctness" in plots.reward_names(history)  # beta is 0 in the smoke config: no kl logged


def synthetic_log(steps: int = 5, kl: bool = True) -> list[dict]:
    return [
        {"step": s, "reward": 0.1 * s, "rewards/correctness/mean": 0.05 * s, "rewards/format/mean": 0.5,
         "reward_std": 0.2, "frac_reward_zero_std": 0.1, "completions/mean_length": 30.0 + s,
         "completions/clipped_ratio": 0.05, "learning_rate": 1e-6, **({"kl": 0.01 * s} if kl else {})}
        for s in range(1, steps + 1)
    ] + [{"step": steps, "eval_reward": 0.3, "eval_rewards/correctness/mean": 0.2}, {"train_runtime": 1.0}]


def test_constant_learning_rate_is_a_note_and_a_decaying_one_a_panel():
    constant = synthetic_log(5)
    assert plots.constant_lr(constant) == 1e-6
    assert "learning rate" not in [p["title"] for p in plots.panels(constant)]
    decaying = [{**e, "learning_rate": 1e-6 / e["step"]} if "reward" in e else e for e in constant]
    assert plots.constant_lr(decaying) is None
    assert "learning rate" in [p["title"] for p in plots.panels(decaying)]


def test_health_warnings_are_read_from_the_run_or_its_parent(tmp_path):
    (tmp_path / "checkpoint-5").mkdir()
    assert plots.health_warnings(tmp_path) == []
    (tmp_path / "health.json").write_text(json.dumps({"verdict": "suspect", "warnings": {
        "zero_std_groups": {"step": 4, "evidence": "e", "knob": "k"}, "nonfinite": {"step": 2}}}))
    assert plots.health_warnings(tmp_path) == [(2, "nonfinite"), (4, "zero_std_groups")]
    assert plots.health_warnings(tmp_path / "checkpoint-5") == [(2, "nonfinite"), (4, "zero_std_groups")]
    (tmp_path / "health.json").write_text("not json")
    assert plots.health_warnings(tmp_path) == []


def test_plot_with_warnings_draws_more_than_without(tmp_path):
    history = synthetic_log(10)
    plain = plots.plot(history, tmp_path / "plain.png", title="run")
    marked = plots.plot(history, tmp_path / "marked.png", title="run", warnings=[(3, "zero_std_groups")])
    assert png_size(marked)[0] >= 600
    assert plain.read_bytes() != marked.read_bytes()


def test_kl_panel_when_beta_is_positive(tmp_path):
    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "checkpoint-10").mkdir()
    (tmp_path / "checkpoint-2" / "trainer_state.json").write_text(json.dumps({"log_history": synthetic_log(2, False)}))
    (tmp_path / "checkpoint-10" / "trainer_state.json").write_text(json.dumps({"log_history": synthetic_log(10)}))
    state = plots.find_state(tmp_path)
    assert state.parent.name == "checkpoint-10"  # the latest by step, not by name
    history = plots.load_history(state)
    assert "KL to reference" in [p["title"] for p in plots.panels(history)]
    assert plots.series(history, "reward")[0] == list(range(1, 11))
    assert plots.main([str(tmp_path), "--output", str(tmp_path / "out.png")]) == 0
    assert png_size(tmp_path / "out.png")[1] >= 600  # two rows of panels (a constant learning rate is a note)


@pytest.mark.parametrize("case", ["missing", "empty-dir", "no-rewards"])
def test_missing_log_gets_one_line(tmp_path, case):
    target = tmp_path / "run"
    if case != "missing":
        target.mkdir()
    if case == "no-rewards":
        (target / "trainer_state.json").write_text(json.dumps({"log_history": [{"train_runtime": 1.0}]}))
    done = run_script("plot.py", str(target), timeout=120)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
