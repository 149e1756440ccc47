"""eval.py: a trained checkpoint and a LoRA adapter evaluated with the training rewards, reports, --compare, errors."""

import json
import math
import re
from itertools import combinations
from pathlib import Path

import pytest
from _pkg import mod
from _smoke_run import ROOT, STEPS, run_script, smoke_run

evaluate = mod("evaluation.evaluate")
rewards = mod("rewards")

RATES = ["accuracy", "pass@1", "pass@2", "format_compliance", "truncation_rate"]
REWARD_RANGES = {"format": (0, 1), "format_strict": (0, 1), "correctness": (0, 1), "syntax": (0, 1),
                 "length": (-1, 0), "repetition": (-1, 0)}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return smoke_run(tmp_path_factory)


@pytest.fixture(scope="module")
def report_dir(trained, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "after"
    done = run_script(
        "eval.py", "--config", "configs/smoke.yaml", "--model", str(trained / f"checkpoint-{STEPS}"),
        "--num_samples", "2", "--max_rows", "3", "--output", str(out),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| accuracy |" in done.stdout
    # a line before the slow imports, then progress while it generates: what, then every batch with an ETA
    assert done.stderr.startswith("eval: loading torch, transformers and the model ...\n"), done.stderr[:300]
    assert "eval: generating " in done.stderr and re.search(r"eval: \d+/\d+ prompts x 2 samples, .*ETA", done.stderr)
    return out


def check_metrics(report: dict, max_len: int) -> None:
    metrics = report["metrics"]
    for name in ["accuracy", "pass@1", "format_compliance", "truncation_rate", "reward", "mean_completion_tokens"]:
        assert isinstance(metrics[name], float), name
    for name in RATES:
        if name in metrics:
            assert 0.0 <= metrics[name] <= 1.0, (name, metrics[name])
    assert 0.0 < metrics["mean_completion_tokens"] <= max_len
    for name, (low, high) in REWARD_RANGES.items():
        value = metrics.get(f"rewards/{name}/mean")
        if value is not None:
            assert low <= value <= high, (name, value)
    assert set(rewards.reward_names()) == {k.split("/")[1] for k in metrics if k.startswith("rewards/")}


@pytest.mark.slow
def test_eval_of_a_checkpoint_writes_both_reports(report_dir):
    report = json.loads((report_dir / "report.json").read_text())
    assert report["task"] == evaluate.TASK and report["adapter"] is None
    assert report["settings"]["num_samples"] == 2 and report["settings"]["pass_k"] == [1, 2]
    assert report["settings"]["backend"] == "transformers"
    assert 1 <= report["rows"] <= 3 and report["completions"] == 2 * report["rows"]
    check_metrics(report, max_len=report["settings"]["max_completion_length"])
    assert report["metrics"]["pass@2"] >= report["metrics"]["pass@1"]
    markdown = (report_dir / "report.md").read_text()
    assert markdown.startswith("# Evaluation: ") and "| pass@2 |" in markdown and "| truncation_rate |" in markdown
    samples = [json.loads(line) for line in (report_dir / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == report["completions"]
    assert all(set(s["scores"]) == set(rewards.reward_names()) for s in samples)


@pytest.mark.slow
def test_compare_prints_a_before_after_table(report_dir, tmp_path):
    before = json.loads((report_dir / "report.json").read_text())
    after = json.loads(json.dumps(before))
    after["metrics"]["accuracy"] = before["metrics"]["accuracy"] + 0.25
    after["metrics"]["truncation_rate"] = before["metrics"]["truncation_rate"] / 2
    (tmp_path / "after.json").write_text(json.dumps(after))
    done = run_script("eval.py", "--compare", str(report_dir / "report.json"), str(tmp_path / "after.json"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "| metric | before | after | delta |"
    accuracy = next(line for line in lines if line.startswith("| accuracy |"))
    assert accuracy.endswith("| +0.2500 |")
    assert any(line.startswith("| truncation_rate |") for line in lines)


@pytest.mark.slow
def test_eval_of_a_lora_adapter(trained, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(trained))
    adapter = tmp_path / "lora"
    get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")).save_pretrained(
        adapter
    )
    out = tmp_path / "report"
    args = ["--config", "configs/smoke.yaml", "--model", str(adapter), "--max_rows", "2", "--output", str(out),
            "--num_samples", "1"]
    assert evaluate.main(args) == 0  # an adapter-only dir: the base comes from adapter_config.json
    report = json.loads((out / "report.json").read_text())
    assert report["adapter"] == str(adapter) and report["model"] == str(trained)
    assert report["settings"]["temperature"] is None  # one sample: greedy
    check_metrics(report, max_len=report["settings"]["max_completion_length"])
    assert report["metrics"]["pass@1"] == report["metrics"]["accuracy"]


def test_pass_at_k_is_the_unbiased_estimator():
    for n in range(1, 7):
        for c in range(n + 1):
            for k in range(1, n + 1):
                subsets = list(combinations([1] * c + [0] * (n - c), k))
                exact = sum(1 for s in subsets if any(s)) / len(subsets)
                assert math.isclose(evaluate.pass_at_k(n, c, k), exact), (n, c, k)
    with pytest.raises(ValueError):
        evaluate.pass_at_k(2, 1, 3)


def test_gold_completions_score_full_marks():
    """The eval's column plumbing feeds the verifiers what TRL feeds them: gold answers are correct and well-formed."""
    task = mod("task")
    lines = (ROOT / "data" / "sample.jsonl").read_text().splitlines()[:4]
    rows = [task.normalize(json.loads(line)) for line in lines]
    rows = [{**row, "prompt": evaluate.data.build_prompt(row)} for row in rows]
    samples = [[evaluate.Sample(task.gold_completion(row), [7] * 20, False)] * 2 for row in rows]
    settings = evaluate.Settings(config="c", model="m", adapter=None, num_samples=2, pass_k=[1, 2],
                                 cfg={"reward_funcs": ["correctness", "format"], "reward_weights": [1.0, 0.5]})
    built = {name: rewards.build_reward(name, rewards.RewardSettings(256)) for name in rewards.reward_names()}
    metrics = evaluate.summarize(settings, samples, evaluate.score_samples(rows, samples, built))
    assert metrics["accuracy"] == metrics["pass@1"] == metrics["pass@2"] == 1.0
    assert metrics["format_compliance"] == 1.0 and metrics["truncation_rate"] == 0.0
    assert metrics["mean_completion_tokens"] == 20.0 and metrics["reward"] == pytest.approx(1.5)


def test_completions_end_at_the_first_eos():
    assert evaluate.cut_at_eos([5, 6, 2, 0, 0], {2}, 5) == ([5, 6, 2], False)
    assert evaluate.cut_at_eos([5, 6, 7], {2}, 3) == ([5, 6, 7], True)
    assert evaluate.cut_at_eos([5, 6, 7, 2], {2}, 4) == ([5, 6, 7, 2], False)  # an EOS as the last token: finished


def last_line(done) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--config", "configs/smoke.yaml", "--model", "outputs/no-such-run"],
         "error: model path 'outputs/no-such-run' does not exist"),
        (["--config", "configs/smoke.yaml", "--model", "./nowhere", "--adapter", "./no-adapter"],
         "error: model path './nowhere' does not exist"),
        (["--config", "configs/no-such.yaml", "--model", "x"], "error: config file 'configs/no-such.yaml' does not"),
        (["--config", "configs/smoke.yaml", "--num_samples", "2", "--pass_k", "4"], "error: --pass_k [4]"),
        (["--compare", "no-such/report.json", "other.json"], "error: report 'no-such/report.json' does not exist"),
    ],
)
def test_bad_input_gets_one_line(args, expected, monkeypatch, capsys):
    # in-process: each is refused before a model loads (the real eval.py's stderr is checked once, below)
    monkeypatch.chdir(ROOT)
    try:
        code = evaluate.main(args)
    except SystemExit as exit:
        code = exit.code
    assert code not in (0, None)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), lines


def test_the_real_eval_py_prints_only_the_line(tmp_path):
    (tmp_path / "a.json").write_text("{not json")
    (tmp_path / "b.json").write_text(json.dumps({"metrics": {}}))
    done = run_script("eval.py", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), timeout=120)
    assert done.returncode != 0 and "is not readable JSON" in last_line(done)


def test_the_smoke_config_samples_by_default_and_the_cli_wins(tmp_path):
    parser = evaluate.build_parser()
    config = str(Path(__file__).resolve().parent.parent / "configs" / "smoke.yaml")
    smoke = evaluate.settings_from_args(parser.parse_args(["--config", config]))
    assert smoke.num_samples == 4 and evaluate.sampling(smoke)["do_sample"] is True  # greedy is degenerate there
    greedy = evaluate.settings_from_args(parser.parse_args(["--config", config, "--num_samples", "1"]))
    assert evaluate.sampling(greedy) == {"do_sample": False}
    preset = tmp_path / "preset.yaml"
    preset.write_text("model_name_or_path: some/model\n")
    assert evaluate.settings_from_args(parser.parse_args(["--config", str(preset)])).num_samples == 1


@pytest.mark.parametrize("command", ["evaluation.evaluate", "filtering"])
def test_a_model_the_hub_cannot_give_is_named_where_the_user_wrote_it(command, tmp_path, monkeypatch, capsys):
    # eval.py and filter.py take the config's model when --model is left out: the error names that key and that file
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    preset = tmp_path / "preset.yaml"
    preset.write_text("model_name_or_path: nobody/no-such-model\n")
    main = mod(command).main

    def error_of(*args: str) -> str:
        assert main(["--config", str(preset), "--output", str(tmp_path / "out"), *args]) == 1
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1, lines
        return lines[0]

    from_config = error_of()
    assert f"model 'nobody/no-such-model' (model_name_or_path in {preset})" in from_config, from_config
    assert "--model" not in from_config
    typed = error_of("--model", "nobody/typed-model")
    assert "model 'nobody/typed-model' (--model)" in typed and "point --model at a local path" in typed, typed
