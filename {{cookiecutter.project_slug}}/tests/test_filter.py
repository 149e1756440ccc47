"""filter.py: pass rates from the training correctness reward, the kept band, the cache and resume, errors."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _pkg import mod
from _smoke_run import ROOT, run_script

filtering = mod("filtering")
data = mod("data")
evaluate = mod("evaluation.evaluate")
rewards = mod("rewards")


def sample_rows(n: int) -> list[dict]:
    rows = data.load_raw("data/sample.jsonl")["train"].to_list()[:n]
    return [{**row, "prompt": data.build_prompt(row)} for row in rows]


def samples_of(texts: list[str]) -> list:
    return [evaluate.Sample(text, [1] * (i + 1), False) for i, text in enumerate(texts)]


@pytest.fixture(autouse=True)
def _project_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_pass_rates_come_from_the_training_correctness_reward():
    rows = sample_rows(3)
    gold = [data.task.gold_completion(row) for row in rows]
    wrong = "<reasoning>\nno idea\n</reasoning>\n<answer>\nnot an answer at all\n</answer>"
    groups = [samples_of([gold[0], wrong, gold[0], wrong]), samples_of([gold[1]] * 4), samples_of([wrong] * 4)]
    correctness = rewards.build_reward("correctness", rewards.RewardSettings())
    results = filtering.score_groups(rows, groups, correctness)
    assert [r["pass_rate"] for r in results] == [0.5, 1.0, 0.0]
    assert [r["passed"] for r in results] == [2, 4, 0]
    assert results[0]["tokens"] == [1, 2, 3, 4] and all(r["scored"] == 4 for r in results)


def test_band_buckets_and_histogram():
    results = [{"pass_rate": rate, "passed": round(rate * 4) if rate is not None else 0,
                "scored": 4 if rate is not None else 0} for rate in (0.0, 0.25, 0.5, 0.75, 1.0, None)]
    summary = filtering.summarize(results, samples=4, low=0.3, high=0.8)
    assert summary["buckets"] == {"all wrong (0)": 1, "below low": 1, "kept": 2, "above high": 0,
                                  "all right (1)": 1, "unscored": 1}
    assert summary["kept"] == 2 and summary["prompts"] == 6
    assert summary["histogram"] == {"0/4": 1, "1/4": 1, "2/4": 1, "3/4": 1, "4/4": 1}
    assert filtering.keep(0.0, 0.0, 1.0) and filtering.keep(1.0, 0.0, 1.0) and not filtering.keep(None, 0.0, 1.0)
    assert filtering.bucket(0.0, 0.0, 0.5) == "kept"


def test_row_key_is_stable_and_depends_on_settings():
    row = {"question": "q", "answer": "1", "prompt": [{"role": "user", "content": "q"}]}
    same = {"answer": "1", "question": "q"}
    assert filtering.row_key(row, "a") == filtering.row_key(same, "a")  # order and the chat prompt do not matter
    assert filtering.row_key(row, "a") != filtering.row_key(row, "b")
    assert filtering.row_key(row, "a") != filtering.row_key({**row, "answer": "2"}, "a")


def test_cache_survives_a_line_cut_short(tmp_path):
    cache = tmp_path / "c.cache.jsonl"
    filtering.append_cache(cache, [{"key": "a", "pass_rate": 0.5}])
    with cache.open("a") as handle:
        handle.write('{"key": "b", "pass_ra')  # a kill in the middle of a write
    filtering.append_cache(cache, [{"key": "c", "pass_rate": 1.0}])
    assert sorted(filtering.read_cache(cache)) == ["a", "c"]


def sample_config(out: Path) -> Path:
    """The smoke config on the bundled sample rows (a file, as users filter), with its own tiny model next to
    ``out``; the smoke config itself trains on the generated curriculum."""
    import yaml

    settings = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    settings.update(dataset_name="data/sample.jsonl", model_name_or_path=str(out.parent / "tiny-sample"),
                    system_prompt=None)
    config = out.parent / "smoke-sample.yaml"
    config.write_text(yaml.safe_dump(settings))
    return config


def command(out: Path, *extra: str, low: str = "0", high: str = "1") -> list[str]:
    return [sys.executable, "filter.py", "--config", str(sample_config(out)), "--samples", "2", "--batch_size", "1",
            "--low", low, "--high", high, "--output", str(out), *extra]


def cache_keys(out: Path) -> list[str]:
    keys = []
    for line in Path(f"{out.with_suffix('')}.cache.jsonl").read_text().splitlines():
        try:
            keys.append(json.loads(line)["key"])
        except ValueError:
            pass  # the line the kill cut short
    return keys


def test_duplicate_rows_are_sampled_once_and_never_counted_as_cached():
    rows = [{"q": "a"}, {"q": "b"}, {"q": "a"}, {"q": "c"}, {"q": "a"}]
    pending, cached, duplicates = filtering.plan(rows, lambda row: row["q"], {})
    assert [row["q"] for row in pending] == ["a", "b", "c"] and cached == 0 and duplicates == 2
    pending, cached, duplicates = filtering.plan(rows, lambda row: row["q"], {"a": {}, "c": {}})
    assert [row["q"] for row in pending] == ["b"] and cached == 2 and duplicates == 2


@pytest.mark.slow
def test_end_to_end_with_kill_and_resume(tmp_path):
    out = tmp_path / "filtered.jsonl"
    # A first run over 3 prompts, then a run over all of them that is killed after a few more.
    first = subprocess.run(command(out, "--max_prompts", "3"), cwd=ROOT, capture_output=True, text=True,
                           timeout=300, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(cache_keys(out)) == 3
    killed = subprocess.Popen(command(out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    deadline = time.monotonic() + 300
    while len(cache_keys(out)) < 5:
        assert killed.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline, "no progress within 300 s"
        time.sleep(0.02)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    before = len(set(cache_keys(out)))
    assert not out.with_suffix(".report.json").exists() or json.loads(
        out.with_suffix(".report.json").read_text())["prompts"] == 3

    done = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    keys = cache_keys(out)
    assert len(keys) == len(set(keys)), "a prompt was sampled twice"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    train = data.load_splits("data/sample.jsonl", None, "train", "test", eval_fraction=0.2,
                             seed=0)[0].to_list()
    assert len(keys) == len(rows) == len(train)  # every training prompt, none from the eval split
    assert [{k: v for k, v in r.items() if k != "pass_rate"} for r in rows] == train
    assert all(r["pass_rate"] in (0.0, 0.5, 1.0) for r in rows)
    assert f"{before} from the cache" in done.stderr and "ETA" in done.stderr
    assert f"dataset_name: {out}" in done.stdout
    report = json.loads(out.with_suffix(".report.json").read_text())
    assert report["prompts"] == len(train) and report["sampled_now"] == len(train) - before
    assert sum(report["buckets"].values()) == len(train) and sum(report["histogram"].values()) == len(train)
    assert out.with_suffix(".hist.png").stat().st_size > 1000

    # Another band reuses every cached sample, and the filtered file loads as a training dataset.
    narrow = subprocess.run(command(out, low="0.5", high="0.5"),
                            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert narrow.returncode == 0, narrow.stderr[-3000:]
    assert f"{len(train)} from the cache" in narrow.stderr and "0 to sample" in narrow.stderr
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(kept) == sum(1 for r in rows if r["pass_rate"] == 0.5)
    if kept:
        assert len(data.load_raw(str(out))["train"]) == len(kept)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--config", "configs/smoke.yaml", "--low", "0.9", "--high", "0.1"], "is above --high"),
        (["--config", "configs/smoke.yaml", "--low", "-0.5"], "must be in [0, 1]"),
        (["--config", "configs/smoke.yaml", "--samples", "1"], "--samples must be at least 2"),
        (["--config", "configs/missing.yaml"], "does not exist"),
        (["--config", "configs/smoke.yaml", "--low", "x"], "invalid float value"),
    ],
)
def test_bad_input_is_one_line(args, message):
    done = run_script("filter.py", *args)
    assert done.returncode != 0
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_nothing_kept_says_why():
    why = mod("filtering").nothing_kept_because
    buckets = dict.fromkeys(mod("filtering").BUCKETS, 0)
    assert "answered every prompt wrong" in why({**buckets, "all wrong (0)": 5, "unscored": 1})
    assert "format-primed" in why({**buckets, "all wrong (0)": 5})
    assert "teach it nothing" in why({**buckets, "all right (1)": 3})
    assert "widen --low/--high" in why({**buckets, "all wrong (0)": 2, "above high": 1})
