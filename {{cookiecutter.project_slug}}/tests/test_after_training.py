"""After training: merge a LoRA run into a standalone model, chat with it, push it (to a fake Hub), and fill the cache
for an offline node (with a fake Hub)."""

import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from _pkg import PKG, mod
from _smoke_run import ROOT, lora_run, smoke_run

merge = mod("merge")
chat = mod("chat")
download = mod("download")
data = mod("data")
task = mod("task")
options = mod("evaluation.options")

PROMPT = "What is 2+3?"
SHORT = ["--config", "configs/smoke.yaml", "--max_completion_length", "12", "--num_samples", "1"]  # greedy, short


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return lora_run(tmp_path_factory)


@pytest.fixture(scope="module")
def merged(run):
    assert merge.main([str(run)]) == 0
    return run / "merged"


def sample_row() -> dict:
    return json.loads((ROOT / "data" / "sample.jsonl").read_text().splitlines()[0])


def chat_prompt() -> str:
    """PROMPT as the question; a whole JSON row (the sample's, with PROMPT as its question) for a task whose prompt
    shows more columns than the question."""
    try:
        chat.build_messages(PROMPT)
    except chat.ChatError:
        return json.dumps({**sample_row(), "question": PROMPT})
    return PROMPT


def config_with(tmp_path: Path, **changes) -> str:
    """configs/smoke.yaml with some settings changed, written to tmp_path."""
    settings = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    settings.update(changes)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(settings))
    return str(path)


# ------------------------------------------------------------------------------------------------------ merge


@pytest.mark.slow
def test_merged_model_is_standalone_and_equals_the_adapter_model(run, merged):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert (merged / "config.json").is_file() and (merged / "model.safetensors").is_file()
    assert not (merged / "adapter_config.json").exists()  # loads without peft
    assert (merged / "chat_template.jinja").is_file() and (merged / "tokenizer_config.json").is_file()
    assert task.SYSTEM_PROMPT in (merged / "README.md").read_text()
    assert not list(run.glob(".merged.tmp*"))  # the temporary folder was renamed, nothing left behind

    tokenizer = AutoTokenizer.from_pretrained(merged)
    ids = tokenizer.apply_chat_template(chat.build_messages(chat_prompt()),
                                        add_generation_prompt=True, return_dict=True, return_tensors="pt")
    base_dir = json.loads((run / "adapter_config.json").read_text())["base_model_name_or_path"]
    # priming a LoRA run trains the adapter GRPO goes on training: the base stays the config's model
    assert (run / "format-primed" / "adapter_config.json").is_file()
    assert base_dir == yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())["model_name_or_path"]
    with torch.no_grad():
        base = AutoModelForCausalLM.from_pretrained(base_dir).eval()
        base_logits = base(**ids).logits
        adapter_logits = PeftModel.from_pretrained(base, str(run)).eval()(**ids).logits
        merged_logits = AutoModelForCausalLM.from_pretrained(merged).eval()(**ids).logits
    moved = (adapter_logits - base_logits).abs().max().item()
    error = (merged_logits - adapter_logits).abs().max().item()
    assert moved > 1e-3, moved  # the trained adapter changes the model, so merging it matters
    assert error < moved / 100, (error, moved)


@pytest.mark.slow
def test_merge_refuses_to_overwrite_without_force_and_merges_a_checkpoint(run, merged, capsys):
    capsys.readouterr()
    assert merge.main([str(run)]) == 1
    assert re.fullmatch(r"error: .*merged already exists; pass --force.*\n", capsys.readouterr().err)
    assert merge.main([str(run / "checkpoint-1")]) == 0
    assert (run / "merged-checkpoint-1" / "model.safetensors").is_file()
    stamp = (merged / "config.json").stat().st_mtime_ns
    assert merge.main([str(run), "--force"]) == 0
    assert (merged / "config.json").stat().st_mtime_ns >= stamp and (merged / "model.safetensors").is_file()


@pytest.mark.slow
def test_a_full_fine_tune_has_nothing_to_merge(tmp_path_factory, tmp_path, capsys):
    out = tmp_path / "full"
    assert merge.main([str(smoke_run(tmp_path_factory)), "--out", str(out)]) == 0  # use_peft: false
    assert "nothing to merge" in capsys.readouterr().out
    assert (out / "model.safetensors").is_file() and not (out / "adapter_config.json").exists()


def test_merge_errors_are_one_line(tmp_path, capsys):
    cases = [
        ([str(tmp_path / "missing")], "does not exist"),
        ([str(tmp_path)], "neither config.json nor adapter_config.json"),
        ([str(tmp_path), "--config", "configs/smoke.yaml", "--push"], "set hub_model_id in configs/smoke.yaml"),
    ]
    for argv, expected in cases:
        assert merge.main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and expected in err and err.count("\n") == 1, err


def test_a_moved_run_finds_its_primed_base(tmp_path):
    runs = tmp_path / "moved"
    (runs / "format-primed").mkdir(parents=True)
    (runs / "format-primed" / "config.json").write_text("{}")
    for folder in (runs, runs / "checkpoint-3"):
        folder.mkdir(exist_ok=True)
        (folder / "adapter_config.json").write_text(
            json.dumps({"base_model_name_or_path": "/elsewhere/outputs/run/format-primed"}))
        assert options.resolve_model(str(folder), None) == (str(runs / "format-primed"), str(folder))
    (runs / "checkpoint-3" / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": "outputs/gone/base"}))
    with pytest.raises(options.EvalError, match="base model 'outputs/gone/base' .* does not exist"):
        options.resolve_model(str(runs / "checkpoint-3"), None)


# ------------------------------------------------------------------------------------------------------- push


class FakeHub:
    """Stands in for huggingface_hub.HfApi: records the calls, uploads nothing."""

    calls: list = []
    fail: Exception | None = None

    def __init__(self, token=None):
        self.calls.append(("init", token))

    def create_repo(self, repo_id, **kwargs):
        if self.fail is not None:
            raise self.fail
        self.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs, sorted(p.name for p in Path(kwargs["folder_path"]).iterdir())))


@pytest.mark.slow
def test_push_uploads_the_merged_model_to_the_configs_hub_model_id(run, merged, tmp_path, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeHub)
    monkeypatch.setattr(FakeHub, "calls", [])
    config = config_with(tmp_path, hub_model_id="me/tiny-grpo", hub_private_repo=True)
    out = tmp_path / "pushed"
    assert merge.main([str(run), "--config", config, "--out", str(out), "--push"]) == 0
    assert "pushed " in capsys.readouterr().out
    (_, _), (_, repo, kwargs), (_, upload, files) = FakeHub.calls
    assert repo == "me/tiny-grpo" and kwargs["private"] is True and kwargs["exist_ok"] is True
    assert upload["repo_id"] == "me/tiny-grpo" and upload["folder_path"] == str(out)
    assert {"config.json", "model.safetensors", "tokenizer_config.json", "chat_template.jinja"} <= set(files)


def test_a_failed_push_is_one_line_naming_the_id(tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeHub)
    monkeypatch.setattr(FakeHub, "fail", OSError("401 Client Error: Unauthorized\nmore lines"))
    with pytest.raises(merge.MergeError, match=r"push to hub_model_id 'me/x' failed: 401 .*hf auth login") as info:
        merge.push(tmp_path, "me/x")
    assert "\n" not in str(info.value)


def test_presets_document_push_to_hub_off_by_default():
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        settings = yaml.safe_load(path.read_text())
        assert settings.get("push_to_hub") is False and "hub_model_id" in settings, path.name


# ------------------------------------------------------------------------------------------------------- chat


@pytest.mark.slow
def test_chat_answers_in_the_task_format_and_merged_equals_adapter(run, merged, capsys, monkeypatch):
    text = chat_prompt()
    capsys.readouterr()
    assert chat.main([*SHORT, "--model", str(merged), "--show_prompt", text]) == 0
    captured = capsys.readouterr()
    shown, _ = json.JSONDecoder().raw_decode(captured.err[captured.err.index("[\n  {"):])
    system_prompt = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text()).get("system_prompt")
    assert shown == data.build_prompt(chat.row_from_text(text), system_prompt)  # the config's, as in training
    assert shown[0]["content"] == (system_prompt or task.SYSTEM_PROMPT)
    from_merged = captured.out
    assert re.search(r"^answer: .+$", from_merged, re.MULTILINE), from_merged
    assert chat.main([*SHORT, "--model", str(run), text]) == 0  # the adapter dir
    assert capsys.readouterr().out == from_merged  # greedy: the same completion from the merged model

    settings = chat.settings_for(chat.build_parser().parse_args([*SHORT, "--model", str(merged), "--num_samples", "2"]))
    session = chat.Chat(settings)
    messages, samples = session.ask(text)
    assert messages == shown and len(samples) == 2 and all(s.ids for s in samples)
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{text}\n{json.dumps(sample_row())}\n\nnot read\n"))
    chat.interactive(session)
    out = capsys.readouterr().out
    assert out.count("--- completion 1/2") == 2 and out.count("answer: ") == 4  # two prompts, then the empty line


def test_chat_builds_the_training_prompt_from_text_or_a_json_row(capsys):
    row = sample_row()
    assert chat.build_messages(json.dumps(row)) == data.build_prompt(task.normalize(dict(row)))
    try:
        messages = chat.build_messages(PROMPT)
    except chat.ChatError as error:  # the task's prompt shows more than the question: a JSON row is needed
        assert "pass a JSON row" in str(error)
    else:
        assert messages == data.build_prompt({"question": PROMPT})
    assert chat.main(["--config", "configs/smoke.yaml", "{not json"]) == 1
    assert capsys.readouterr().err.startswith("error: a prompt that starts with a brace must be a JSON row")
    assert chat.main(["--config", "configs/smoke.yaml", json.dumps({"nothing": 1})]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "pass a JSON row with" in err and err.count("\n") == 1


# --------------------------------------------------------------------------------------------------- download


def test_download_fills_the_cache_for_the_configs_model_and_dataset(tmp_path, monkeypatch, capsys):
    import datasets
    import huggingface_hub

    calls = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        lambda repo_id, **kw: calls.append(("model", repo_id, kw)) or str(tmp_path / "snap"))
    monkeypatch.setattr(datasets, "load_dataset", lambda name, config=None: calls.append(("data", name, config))
                        or datasets.DatasetDict({"train": datasets.Dataset.from_list([{"x": 1}, {"x": 2}])}))
    config = config_with(tmp_path, model_name_or_path="some-org/some-model", build_tiny_model=False,
                         dataset_name="some-org/some-data", dataset_config="main", model_revision="v1")
    assert download.main(["--config", config]) == 0
    assert calls[0][:2] == ("model", "some-org/some-model") and calls[0][2]["revision"] == "v1"
    assert calls[1] == ("data", "some-org/some-data", "main")
    out = capsys.readouterr().out
    assert "train 2 rows" in out and f"HF_HUB_OFFLINE=1 python train.py --config {config}" in out
    several = config_with(tmp_path, model_name_or_path="some-org/some-model", build_tiny_model=False,
                          num_processes=8)  # a multi-GPU config: its launch script, not a single process
    assert download.main(["--config", several]) == 0
    assert (f"HF_HUB_OFFLINE=1 scripts/launch_colocate.sh configs/accelerate/zero3.yaml {several}"
            in capsys.readouterr().out)

    calls.clear()
    assert download.main(["--config", "configs/smoke.yaml"]) == 0  # local model and data: nothing to fetch
    assert calls == [] and "nothing to download" in capsys.readouterr().out


def test_download_failures_say_typo_or_no_network_in_one_line(tmp_path, monkeypatch, capsys):
    import huggingface_hub
    from huggingface_hub.errors import RepositoryNotFoundError

    config = config_with(tmp_path, model_name_or_path="some-org/typo-model", build_tiny_model=False)
    response = SimpleNamespace(headers={}, request=None)
    for error, expected in [
        (RepositoryNotFoundError("404 Client Error: Repository Not Found", response=response),
         "check model_name_or_path for a typo"),
        (OSError("Connection refused"), "could not be reached"),
    ]:
        def fail(*args, error=error, **kwargs):
            raise error

        monkeypatch.setattr(huggingface_hub, "snapshot_download", fail)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        assert download.main(["--config", config]) == 1
        err = capsys.readouterr().err
        # the file and the key the id came from: the config is where it is fixed
        assert err.startswith(f"error: {config}: cannot download model 'some-org/typo-model' (model_name_or_path)")
        assert expected in err, err
        assert err.count("\n") == 1


# -------------------------------------------------------------------------------------------------- launchers


def test_every_launcher_runs_a_package_module_with_main():
    for launcher in sorted(ROOT.glob("*.py")):
        calls = re.findall(r'import_module\(f"\{PACKAGE\}\.([\w.]+)"\)\.(\w+)\(', launcher.read_text())
        assert calls and all(callable(getattr(mod(name), function)) for name, function in calls), launcher.name
    assert {"train.py", "eval.py", "merge.py", "chat.py"} <= {p.name for p in ROOT.glob("*.py")}
    for module in (merge, chat, download):
        with pytest.raises(SystemExit) as done:
            module.build_parser().parse_args(["--help"])
        assert done.value.code == 0
    assert PKG in download.build_parser().prog
