"""Bad input ends with one line, ``error: ...``, naming the setting, file, row or id and the fix, before anything
expensive runs: config errors before the data loads, data errors before the tiny model, priming or the model.

A table of cases run in-process through ``train.cli`` (seconds for all), the row-contract cases generated from this
task's own ``task.COLUMNS``, and two runs of the real ``train.py`` that check its whole stderr is that one line.
"""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from _pkg import mod
from conftest import sample_rows, smoke_settings

train, data, task, contract, hub = mod("training.train"), mod("data"), mod("task"), mod("contract"), mod("hub")
known = mod("known")
ROOT = Path(__file__).resolve().parent.parent
SMOKE, SAMPLE = smoke_settings(), sample_rows()


def rows_with(column, value, index=2):
    rows = [dict(row) for row in SAMPLE]
    rows[index][column] = value
    return rows


SMOKE_TEXT = (ROOT / "configs" / "smoke.yaml").read_text(encoding="utf-8")

CONFIG_CASES = {  # id: (run_cli keyword arguments, words the line must hold)
    "malformed YAML": ({"text": SMOKE_TEXT + "\nextra: [1, 2\n"}, ["not valid YAML", "line"]),
    "YAML that is a list": ({"text": "- a\n- b\n"}, ["mapping of settings", "not a list"]),
    "empty YAML": ({"text": "# nothing yet\n"}, ["is empty", "key: value", "configs/"]),
    "unknown setting": ({"settings": {"learning_rat": 0.1}}, ["unknown setting", "learning_rate"]),
    "max_completion_length 0": ({"settings": {"max_completion_length": 0}}, ["max_completion_length", "positive"]),
    "negative batch": ({"settings": {"per_device_train_batch_size": -8}}, ["per_device_train_batch_size", "positive"]),
    "one generation": ({"settings": {"num_generations": 1}}, ["num_generations", "at least 2"]),
    "negative threads": ({"settings": {"cpu_threads": -2}}, ["cpu_threads", "0 (torch's default)"]),
    "weights not numbers": ({"settings": {"reward_weights": ["a", 0.2, 0.1, 0.1]}}, ["reward_weights", "numbers"]),
    "reward_funcs a string": ({"settings": {"reward_funcs": "correctness", "reward_weights": [1.0]}},
                              ["reward_funcs", "list", "[correctness]"]),
    "unknown reward": ({"settings": {"reward_funcs": ["correctnes"], "reward_weights": [1.0]}},
                       ["unknown reward", "correctnes"]),
    "weights count": ({"settings": {"reward_weights": [1.0]}}, ["reward_weights has 1 entries"]),
    "a word for a number": ({"settings": {"max_steps": "many"}}, ["max_steps", "an integer", "'many'"]),
    "a word on the command line": ({"argv": ["--max_steps", "many"]}, ["--max_steps", "invalid int value"]),
    "a list for a number": ({"settings": {"learning_rate": [1]}}, ["learning_rate", "a number"]),
    "abbreviated option": ({"argv": ["--learning_rat", "1e-3"]}, ["unknown option --learning_rat", "--learning_rate"]),
    "bad option value": ({"argv": ["--max_completion_length", "-4"]}, ["max_completion_length", "positive"]),
    "negative exponent value": ({"argv": ["--learning_rate", "-1e-4"]}, ["learning_rate", "positive"]),
    "missing config": ({"config": "configs/no-such.yaml"}, ["no-such.yaml", "does not exist"]),
    # the smoke config builds a random model at model_name_or_path: never at a model the user typed or a hub id
    "a hub model on the smoke config": ({"argv": ["--model_name_or_path", "Qwen/Qwen2.5-0.5B-Instruct"]},
                                        ["model_name_or_path: 'Qwen/Qwen2.5-0.5B-Instruct' is the command line's",
                                         "random-weight tiny model", "--config configs/<preset>.yaml",
                                         "--build_tiny_model false"]),
    "a typed path on the smoke config": ({"argv": ["--model_name_or_path", "./nope"]},
                                         ["'./nope' is the command line's model", "random-weight"]),
    "a hub id in a config that builds": ({"settings": {"model_name_or_path": "someone/model"}},
                                         ["config.yaml: model_name_or_path: 'someone/model' is a hub id"]),
}


PARSER_ONLY = {"a word on the command line"}  # argparse's own conversion error: left to the parser


@pytest.mark.parametrize("case", CONFIG_CASES, ids=list(CONFIG_CASES))
def test_config_errors_are_one_line_before_the_data_loads(run_cli, tmp_path, case):
    """... and the same line, before torch and TRL are imported, from train.py's early check (known.py)."""
    kwargs, words = CONFIG_CASES[case]
    message = run_cli(**kwargs)
    assert all(word in message for word in words), message
    try:
        known.refuse_early(["--config", kwargs.get("config") or str(tmp_path / "config.yaml"), *kwargs.get("argv", ())])
        early = None
    except known.ConfigError as error:
        early = f"error: {error}"
    assert early == (None if case in PARSER_ONLY else message)


def test_the_tiny_model_is_built_only_where_the_file_says():
    rules = mod("rules")
    smoke = {"build_tiny_model": True, "model_name_or_path": ".smoke/tiny-model"}
    assert rules.tiny_model_problems(smoke) == []  # the smoke config as shipped
    assert rules.tiny_model_problems({**smoke, "model_name_or_path": "/tmp/run/tiny"}) == []  # a file's own path
    typed = {"model_name_or_path"}
    assert rules.tiny_model_problems(smoke, typed)  # typed on the command line: refused ...
    assert rules.tiny_model_problems({**smoke, "build_tiny_model": False}, typed) == []  # ... unless it loads it
    assert rules.tiny_model_problems(smoke, typed | {"build_tiny_model"}) == []  # or the command line asks for both
    for name in ("Qwen/Qwen2.5-0.5B-Instruct", "gpt2", "org/model"):  # hub-shaped, even with the flag typed
        assert rules.tiny_model_problems({**smoke, "model_name_or_path": name}, {"build_tiny_model"})
    assert not (ROOT / "Qwen").exists() and not (ROOT / "nope").exists()  # no refused run wrote a model


def test_text_the_parser_converts_is_not_refused(tmp_path):
    """YAML reads ``1e-5`` (no dot) and quoted numbers as text; the parser converts them, so they are fine."""
    path = tmp_path / "config.yaml"
    text = re.sub(r"^learning_rate: .*$", "learning_rate: 1e-5", SMOKE_TEXT, count=1, flags=re.MULTILINE)
    text = text.replace("max_prompt_length: 384", 'max_prompt_length: "384"')
    assert "1e-5" in text and '"384"' in text
    path.write_text(text + "lora_target_modules: all-linear\n", encoding="utf-8")
    script_args, training_args, model_args, _ = mod("config").parse_args(["--config", str(path)])
    assert training_args.learning_rate == 1e-5 and script_args.max_prompt_length == 384
    assert model_args.lora_target_modules == "all-linear"


DATA_CASES = {
    "one row": ({"rows": SAMPLE[:1]}, ["1 row(s)", "at least 2"]),
    "empty file": ({"raw": b""}, ["rows.jsonl", "is empty"]),
    "blank lines only": ({"raw": b"\n\n"}, ["is empty"]),
    "malformed JSONL": ({"raw": b'{"question": "x"\n'}, ["line 1", "not valid JSON"]),
    "malformed later line": ({"raw": "".join(json.dumps(r) + "\n" for r in SAMPLE[:4]).encode() + b"{oops\n"},
                             ["line 5", "not valid JSON"]),
    "truncated JSONL": ({"raw": "".join(json.dumps(r) + "\n" for r in SAMPLE[:4]).encode()[:-25]},
                        ["line 4", "not valid JSON"]),
    "binary file": ({"raw": bytes(range(256)) * 8}, ["not UTF-8", "JSONL"]),
    "a JSON list per line": ({"raw": b"[1, 2]\n[3]\n"}, ["line 1", "not an object"]),
    "fake parquet": ({"raw": b"not parquet", "suffix": ".parquet"}, ["cannot be read as parquet", "rows.parquet"]),
    "missing column": ({"rows": [{"other": 1}, {"other": 2}]}, ["lacks column", task.REQUIRED_COLUMNS[0]]),
    "missing file": ({"settings": {"dataset_name": "data/no-such.jsonl"}}, ["no-such.jsonl", "does not exist"]),
}


@pytest.mark.parametrize("case", DATA_CASES, ids=list(DATA_CASES))
def test_data_errors_are_one_line_before_the_model(run_cli, case):
    kwargs, words = DATA_CASES[case]
    message = run_cli(**kwargs, stage="data")
    assert all(word in message for word in words), message


BAD_VALUES = {  # column kind -> values that break it (the first row-contract problems users hit)
    contract.TEXT: [None, "", "   ", 5, ["x"]],
    contract.TEXT_OR_NUMBER: [None, "", ["x"], {"a": 1}],
    contract.TEXT_LIST: [5, "not json", {"a": "b"}, [1, 2], [], None, ["ok", ""]],
    contract.JSON_TEXT: [None, "not json", "", 5],
}
CONTRACT_CASES = [(name, value) for name, column in task.COLUMNS.items() if column.required
                  for value in BAD_VALUES[column.kind]]


@pytest.mark.parametrize(("column", "value"), CONTRACT_CASES, ids=[f"{c}={v!r}" for c, v in CONTRACT_CASES])
def test_rows_breaking_the_task_contract_are_refused_by_row(run_cli, column, value):
    message = run_cli(rows=rows_with(column, value), stage="data")
    assert f"row 3: {column}" in message and "1 of" in message, message


def test_every_sample_row_meets_the_contract_and_every_kind_is_known():
    assert set(task.REQUIRED_COLUMNS) <= set(task.COLUMNS)
    assert {column.kind for column in task.COLUMNS.values()} <= set(contract.KINDS) == set(BAD_VALUES)
    assert contract.check_rows((task.normalize(row) for row in SAMPLE), task.COLUMNS, "sample") is None


@pytest.mark.slow
def test_a_too_long_question_is_left_out_of_priming(tmp_path):
    """One 1 MB question would size every padded priming batch (40 GB); priming drops it as GRPO does."""
    priming, tiny = mod("training.priming"), mod("training.tiny")
    rows = [dict(row) for row in SAMPLE]
    text_column = next(name for name, column in task.COLUMNS.items() if column.kind == contract.TEXT)
    rows[0][text_column] = "word " * 200_000
    model_dir = tmp_path / "tiny"
    tiny.build_tiny_model(str(model_dir), str(ROOT / "data" / "sample.jsonl"))
    logged = []
    started = time.time()
    priming.prime(model_dir, tmp_path / "primed", rows, steps=1, batch_size=2, max_prompt_length=384,
                  log=logged.append, use_cpu=True)
    assert any("1 of" in line and "max_prompt_length=384" in line for line in logged), logged
    assert time.time() - started < 60
    with pytest.raises(data.DataError, match="every format priming row is longer"):
        priming.prime(model_dir, tmp_path / "none", rows[:1], steps=1, max_prompt_length=384, use_cpu=True)


@pytest.mark.parametrize(("status", "words"), [
    ("missing", ["not found on the hub", "typo", "model_name_or_path"]),
    ("unreachable: [Errno -2] Name or service not known", ["cannot be reached", "no network", "HF_HUB_OFFLINE=1",
                                                           "hf download Org/no-such-model"]),
    ("gated", ["gated", "hf auth login"]),
])
def test_hub_ids_the_hub_cannot_give_are_one_line(run_cli, monkeypatch, status, words):
    monkeypatch.setattr(hub, "offline", lambda: False)
    monkeypatch.setattr(hub, "probe", lambda name, kind: status)
    message = run_cli(settings={"model_name_or_path": "Org/no-such-model", "build_tiny_model": False,
                                "format_priming_steps": 0})
    assert "'Org/no-such-model'" in message and all(word in message for word in words), message


def test_a_dataset_id_not_cached_while_offline_names_the_recipe(run_cli, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    message = run_cli(settings={"dataset_name": "org/no-such-set"})
    assert "dataset 'org/no-such-set' (dataset_name)" in message
    assert "hf download org/no-such-set --repo-type dataset" in message and "HF_HUB_OFFLINE=1" in message


@pytest.mark.parametrize(("field", "name"), [("model_name_or_path", "./my-model"),
                                             ("dataset_name", "data/no-such.jsonl")])
def test_a_local_path_that_does_not_exist_is_one_line(run_cli, field, name):
    own_model = {"build_tiny_model": False, "format_priming_steps": 0} if field == "model_name_or_path" else {}
    message = run_cli(settings={field: name, **own_model})
    assert f"{name!r} ({field})" in message and "does not exist" in message and "typo" in message, message


def test_hub_ids_and_paths_are_told_apart(tmp_path):
    assert hub.is_hub_id("Qwen/Qwen2.5-0.5B-Instruct") and hub.is_hub_id("gpt2")
    for name in ("outputs/run", "./model", "/abs/model", "data/x.jsonl", "a/b/c", "curriculum:10", "", None):
        assert not hub.is_hub_id(name), name
    assert not hub.is_hub_id(str(tmp_path))


@pytest.mark.parametrize(("script", "argv"), [
    ("evaluation.evaluate", ["--config", "configs/smoke.yaml", "--max_row", "2"]),
    ("filtering", ["--config", "configs/smoke.yaml", "--max_prompt", "2"]),
    ("preflight.doctor", ["--config", "configs/smoke.yaml", "--accelerate_conf", "x.yaml"]),
    ("training.priming", ["--config", "configs/smoke.yaml", "--forc"]),
])
def test_no_script_accepts_an_abbreviated_option(script, argv, capsys):
    with pytest.raises(SystemExit) as exit:
        mod(script).main(argv)
    assert exit.value.code == 2
    assert f"unrecognized arguments: {argv[2]}" in capsys.readouterr().err


def run_train(*args):
    started = time.time()
    # FutureWarnings are transformers' notes on its own arguments, printed while the config parses; not ours
    done = subprocess.run([sys.executable, "-W", "ignore::FutureWarning", "train.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    return done, time.time() - started


@pytest.mark.slow
def test_the_real_train_py_prints_only_the_line(tmp_path):
    """The whole stderr of train.py: a malformed config (read before anything else) and a model id that is not
    cached while offline (the hub is never asked, so no retries)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(SMOKE_TEXT + "\nextra: [1, 2\n", encoding="utf-8")
    done, _ = run_train("--config", str(bad))
    assert done.returncode == 1 and done.stderr.startswith("error: config") and "not valid YAML" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    offline = tmp_path / "offline.yaml"
    offline.write_text(yaml.safe_dump({**SMOKE, "model_name_or_path": "Org/no-such-model", "build_tiny_model": False,
                                       "format_priming_steps": 0}), encoding="utf-8")
    done, seconds = run_train("--config", str(offline))
    assert done.returncode == 1 and "model 'Org/no-such-model'" in done.stderr and "HF_HUB_OFFLINE" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert seconds < 120


class LockedTokenizer:
    """A tokenizer datasets cannot hash (it holds a lock), as a real one may be."""

    def __init__(self):
        import threading

        self.lock = threading.Lock()

    def apply_chat_template(self, prompt, add_generation_prompt=True, tokenize=True, **kwargs):
        return list(range(len(str(prompt)) // 4))


def test_adding_prompts_prints_no_datasets_noise(capfd):
    """No progress bars and no "couldn't be hashed" warning from datasets: train.py logs one line per split."""
    from datasets import Dataset

    lines = []
    out = data.add_prompts({"train": Dataset.from_list(SAMPLE)}, LockedTokenizer(), 10**6, log=lines.append)
    assert len(out["train"]) == len(SAMPLE) and lines == [f"train: {len(SAMPLE)} prompts kept, 0 dropped as longer "
                                                          "than 1000000 tokens"]
    err = capfd.readouterr().err
    assert "Map" not in err and "Filter" not in err and "hashed" not in err, err
