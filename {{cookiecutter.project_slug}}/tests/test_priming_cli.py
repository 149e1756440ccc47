"""Format priming as its own single-process command: what a multi-process launch is told to run first."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _pkg import PKG, mod

ROOT = Path(__file__).resolve().parent.parent
priming = mod("training.priming")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"{PKG}.training.priming", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)


def test_cli_primes_the_smoke_model_where_train_py_looks(tmp_path):
    done = run_cli("--config", "configs/smoke.yaml", "--output_dir", str(tmp_path / "run"), "--steps", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    primed = tmp_path / "run" / "format-primed"
    assert (primed / "model.safetensors").is_file() and (primed / "tokenizer.json").is_file()
    assert json.loads((primed / "config.json").read_text())["dtype"] == "float32"  # the smoke config's dtype
    assert "on cpu: every weight" in done.stdout and "in torch.float32, lr 0.003" in done.stdout
    assert "step 3/3" in done.stdout
    again = run_cli("--config", "configs/smoke.yaml", "--output_dir", str(tmp_path / "run"))
    assert again.returncode == 0 and "already holds a primed model" in again.stdout


def test_cli_without_priming_steps_is_one_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("model_name_or_path: m\ndataset_name: data/x.jsonl\nformat_priming_steps: 0\n")
    done = run_cli("--config", str(config), "--output_dir", str(tmp_path / "run"))
    assert done.returncode == 1
    assert done.stderr.strip() == "error: format_priming_steps is 0 in this config: pass --steps N"


def test_cli_config_without_a_model_is_one_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("dataset_name: data/x.jsonl\nformat_priming_steps: 5\n")
    done = run_cli("--config", str(config), "--output_dir", str(tmp_path / "run"))
    assert done.returncode == 1 and done.stderr.strip() == f"error: {config} sets no 'model_name_or_path'"


def test_dtype_follows_the_config():
    import torch

    assert priming.load_dtype(None) is torch.float32
    assert priming.load_dtype("bfloat16") is torch.bfloat16
    assert priming.load_dtype("auto") == "auto"


def test_priming_stops_at_its_target_loss_and_warns_at_its_cap(tmp_path):
    tiny = mod("training.tiny")
    model_dir = tiny.build_tiny_model(tmp_path / "tiny", "curriculum:50")
    rows = mod("data").priming_rows("curriculum:50", None, limit=50)
    logged: list[str] = []
    priming.prime(model_dir, tmp_path / "a", rows, steps=40, batch_size=2, target_loss=1e6, log=logged.append,
                  use_cpu=True)
    assert any(line.startswith("format priming done at step 10:") for line in logged), logged
    assert not any("step 20/40" in line for line in logged)
    logged.clear()
    priming.prime(model_dir, tmp_path / "b", rows, steps=10, batch_size=2, target_loss=1e-9, log=logged.append,
                  use_cpu=True)
    assert "step 10/10" in logged[-2] and logged[-1].startswith("warning: format priming ended at its cap of 10 steps")


def test_the_cli_primes_on_the_curriculums_priming_rows(tmp_path, monkeypatch):
    import yaml

    seen = {}
    monkeypatch.setattr(priming, "prime", lambda model, out, rows, **kw: seen.update(rows=rows, **kw) or Path(out))
    settings = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    settings["model_name_or_path"] = str(tmp_path / "tiny")
    priming.prime_from_config(settings, out_dir=tmp_path / "primed", steps=2, log=lambda _: None)
    data = mod("data")
    expected = data.priming_rows(settings["dataset_name"], None, limit=priming.PRIMING_ROWS, seed=settings["seed"])
    assert seen["rows"] == expected and seen["steps"] == 2
    assert seen["batch_size"] == settings["format_priming_batch_size"]
    assert seen["target_loss"] == settings["format_priming_target_loss"]


def test_priming_turns_activation_checkpointing_on(tmp_path):
    import torch

    model_dir = mod("training.tiny").build_tiny_model(tmp_path / "tiny", "curriculum:50")
    _, model, _ = priming.load_for_priming(model_dir, torch.float32, torch.device("cpu"), None, True, None, False)
    on = getattr(model, "is_activation_checkpointing", None)  # transformers >= 5.2x; the old name before
    assert (model.is_gradient_checkpointing if on is None else on)
    assert all(layer.gradient_checkpointing for layer in model.model.layers)


def test_priming_a_lora_preset_trains_only_the_adapter(tmp_path, monkeypatch):
    import peft
    import torch
    from transformers import AutoModelForCausalLM

    model_dir = mod("training.tiny").build_tiny_model(tmp_path / "tiny", "curriculum:50")
    before = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).state_dict()
    seen = []
    wrap = peft.get_peft_model
    monkeypatch.setattr(peft, "get_peft_model", lambda model, config: seen.append(wrap(model, config)) or seen[-1])
    rows = mod("data").priming_rows("curriculum:50", None, limit=50)
    config = priming.lora_config({"use_peft": True, "lora_r": 4, "lora_alpha": 8, "lora_target_modules": "all-linear"})
    out = priming.prime(model_dir, tmp_path / "primed", rows, steps=3, batch_size=2, learning_rate=1e-2,
                        use_cpu=True, gradient_checkpointing=True, peft_config=config, log=lambda _: None)
    trained = seen[0]
    base = {name.replace("base_model.model.", "").replace(".base_layer", ""): param
            for name, param in trained.named_parameters() if "lora_" not in name}
    assert base.keys() == before.keys()
    assert all(torch.equal(base[name], before[name]) for name in before)  # bit-identical base weights
    assert any(param.abs().sum() > 0 for name, param in trained.named_parameters() if "lora_B" in name)
    assert (out / "adapter_config.json").is_file() and not (out / "model.safetensors").exists()
    assert mod("training.checkpoints").is_model_dir(out)  # train.py reuses it, and continues the adapter
    policy = mod("training.model").load_adapter(out, {"dtype": torch.float32})
    assert [n for n, p in policy.named_parameters() if p.requires_grad] and all(
        "lora_" in n for n, p in policy.named_parameters() if p.requires_grad)


def test_priming_bounds_its_logits_with_the_same_gradient(tmp_path, monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM

    model_dir = mod("training.tiny").build_tiny_model(tmp_path / "tiny", "curriculum:50")
    tokenizer = __import__("transformers").AutoTokenizer.from_pretrained(model_dir)
    batch = [priming.encode(tokenizer, row) for row in mod("data").priming_rows("curriculum:50", None, limit=4)]
    assert mod("preflight.memory").PRIMING_LOGITS_BYTES == priming.LOGITS_BUDGET  # the estimator's figure
    results, vocab = [], len(tokenizer)
    width = max(len(ids) for ids, _ in batch)
    row = (width - min(labels.count(-100) for _, labels in batch) + 1) * vocab * 8  # one row's kept logits, bytes
    # one pass over the batch; one row per micro-batch; rows split over 3 positions, then over 1 (the budget's floor)
    for budget in (2**40, row, 3 * vocab * 8, 1):
        monkeypatch.setattr(priming, "LOGITS_BUDGET", budget)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        largest: list[int] = []
        model.lm_head.register_forward_hook(lambda _module, _args, out, seen=largest: seen.append(out.numel() * 8))
        loss = priming.train_step(model, batch, tokenizer.pad_token_id, vocab, torch.device("cpu"), torch.float32)
        results.append((loss, model.lm_head.weight.grad.clone()))
        assert max(largest) <= max(budget, vocab * 8), (budget, max(largest))  # the bound is hard
    reference = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    width = max(len(ids) for ids, _ in batch)
    labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch])
    ids = torch.tensor([i + [tokenizer.pad_token_id] * (width - len(i)) for i, _ in batch])
    mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i, _ in batch])
    expected = reference(input_ids=ids, attention_mask=mask, labels=labels).loss.item()  # the full-logits loss
    assert all(abs(loss - expected) < 1e-5 for loss, _ in results), (expected, results)
    assert all(torch.allclose(results[0][1], grad, atol=1e-6) for _, grad in results[1:])


def test_priming_that_will_not_fit_is_refused_before_loading(tmp_path, monkeypatch, capsys):
    """An 8B full fine-tune primed on an 80 GiB GPU: train.py and the standalone command refuse with one line,
    before any weight is loaded; LoRA with checkpointing passes the same check."""
    import yaml

    memory, train, config = mod("preflight.memory"), mod("training.train"), mod("config")
    monkeypatch.setattr(memory, "detect_gpu_gb", lambda: 80.0)
    loaded = []
    monkeypatch.setattr(priming, "prime", lambda *args, **kwargs: loaded.append(args))
    monkeypatch.setattr(mod("data"), "priming_rows", lambda *args, **kwargs: [])
    big = ["--model_name_or_path", "Qwen/Qwen3-8B", "--build_tiny_model", "false", "--use_cpu", "false",
           "--format_priming_batch_size", "8", "--max_completion_length", "1024", "--dtype", "bfloat16"]
    args = config.parse_args(["--config", "configs/smoke.yaml", *big, "--output_dir", str(tmp_path / "a")])
    with pytest.raises(SystemExit) as refused:
        train.format_primed(*args[:3], train_split=None)
    assert str(refused.value).startswith("error: format priming needs an estimated") and not loaded
    assert "\n" not in str(refused.value)
    settings = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    settings.update(model_name_or_path="Qwen/Qwen3-8B", build_tiny_model=False, use_cpu=False,
                    format_priming_batch_size=8, max_completion_length=1024, dtype="bfloat16",
                    output_dir=str(tmp_path / "b"))
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(settings))
    monkeypatch.setattr(priming, "prime_from_config", lambda *args, **kwargs: loaded.append(args))
    capsys.readouterr()
    assert priming.main(["--config", str(tmp_path / "big.yaml")]) == 1 and not loaded
    err = capsys.readouterr().err
    assert err.startswith("error: format priming needs an estimated") and err.count("\n") == 1, err
    checkpointing = next(key for key in ("activation_checkpointing", "gradient_checkpointing") if key in settings)
    args = config.parse_args(["--config", "configs/smoke.yaml", *big, "--use_peft", "true",  # the config's own name:
                              f"--{checkpointing}", "true", "--output_dir", str(tmp_path / "c")])  # it varies by stack
    train.format_primed(*args[:3], train_split=None)  # LoRA with checkpointing fits: primed
    assert len(loaded) == 1


def test_priming_memory_is_estimated_and_checked_before_priming():
    import yaml

    memory = mod("preflight.memory")
    settings = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    settings.update(model_name_or_path="Qwen/Qwen3-8B", use_cpu=False, format_priming_steps=50,
                    format_priming_batch_size=8, max_prompt_length=512, max_completion_length=1024, dtype="bfloat16")
    full = memory.priming_gib(settings)
    assert full["weights"] > 28 and full["trainable"] > 80  # fp32 master weights and AdamW over 8B parameters
    assert full["logits"] <= 1.0  # bounded, not batch x length x vocab
    assert memory.priming_refusal(settings, gpu_gb=80).startswith("format priming needs an estimated")
    lora = memory.priming_gib({**settings, "use_peft": True, "lora_r": 64, "lora_target_modules": "all-linear",
                               "activation_checkpointing": True})
    assert sum(lora.values()) < 0.9 * 80
    assert memory.priming_refusal({**settings, "use_peft": True, "activation_checkpointing": True}, 80) is None


def test_a_short_try_cuts_priming_short_and_says_so(tmp_path, monkeypatch, capsys):
    """--max_steps 1 on a config that primes 1000 steps: train.py primes 10 steps (TRY_STEPS), into format-primed-try
    (never the folder a longer run reuses), and says so; a longer run primes in full; a primed model there is used."""
    train, config = mod("training.train"), mod("config")
    primed = []
    monkeypatch.setattr(priming, "prime", lambda model, out, rows, **kwargs: primed.append(
        (out, kwargs["steps"], kwargs["target_loss"])))
    monkeypatch.setattr(mod("data"), "priming_rows", lambda *args, **kwargs: [])

    def run(max_steps: str, output_dir: Path) -> tuple[str, str]:
        args = config.parse_args(["--config", "configs/smoke.yaml", "--max_steps", max_steps,
                                  "--output_dir", str(output_dir)])
        assert args[0].format_priming_steps > priming.TRY_STEPS
        used = train.format_primed(*args[:3], train_split=None)
        return used, capsys.readouterr().err

    full = str(tmp_path / "a" / "format-primed")
    used, err = run("1", tmp_path / "a")
    # no target loss: a try's 10 steps are not meant to reach it, and no warning says to raise the steps
    assert used == str(tmp_path / "a" / "format-primed-try") and primed[-1] == (used, priming.TRY_STEPS, None)
    assert "note: a short try (max_steps 1 <= 10): format priming cut from 1000 to 10 steps" in err, err
    used, err = run(str(priming.TRY_STEPS + 1), tmp_path / "a")  # a longer run in the same folder: in full
    assert used == full and primed[-1] == (full, 1000, 0.002) and "short try" not in err
    ready = tmp_path / "b" / "format-primed"
    ready.mkdir(parents=True)
    for name in ("config.json", "tokenizer_config.json", "model.safetensors"):
        (ready / name).write_text("{}")
    count = len(primed)
    used, err = run("1", tmp_path / "b")  # a try after a full priming uses it as it is
    assert used == str(ready) and len(primed) == count and "short try" not in err
