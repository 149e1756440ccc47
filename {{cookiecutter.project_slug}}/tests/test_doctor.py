"""The pre-flight doctor: one blocker per check with fake machine facts, an all-OK run, and a real CPU run."""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from _pkg import PKG, mod

doctor = mod("preflight.doctor")
machine_mod = mod("preflight.machine")
memory = mod("preflight.memory")
ROOT = Path(__file__).resolve().parent.parent
GPU_PRESETS = {p.stem: p for p in (ROOT / "configs").glob("*.yaml") if memory.gpu_gb_from_preset(p) is not None}
PINS = doctor.pinned(ROOT / "pyproject.toml")
ANSWERS = ROOT / ".cookiecutter.json"
BASE_MODEL = json.loads(ANSWERS.read_text()).get("base_model", "") if ANSWERS.is_file() else ""
H100 = machine_mod.Gpu("NVIDIA H100 80GB HBM3", 79.1, 78.5, (9, 0))


def preset(name: str) -> dict:
    config = memory.load_config(GPU_PRESETS[name])
    try:
        memory.resolve_arch(str(config.get("model_name_or_path")))
    except memory.EstimateError:
        pytest.skip("base model without shipped facts (a user override)")
    return {**config, "report_to": "none"}


def healthy(tmp_path: Path, **changes) -> "machine_mod.Machine":
    """A well set-up H100 box: every pin installed, vLLM in TRL's range, bwrap works, 500 GiB free, hub cached."""
    versions = {**PINS, "vllm": "0.30.0", "bitsandbytes": "0.50.2", "deepspeed": "0.19.8", "wandb": "0.31.0",
                "trackio": "0.43.0", "tensorboard": "2.21.0"}
    fake = machine_mod.Machine(
        gpus=lambda: [H100], driver=lambda: "570.86.15", torch_cuda=lambda: "12.8",
        version=versions.get, requires=lambda name: ['vllm<=0.31.0,>=0.22.0; extra == "vllm"'],
        which=lambda name: f"/usr/bin/{name}", bwrap_runs=lambda path: (True, ""),
        disk_free_gib=lambda path: 500.0, hub_cached=lambda name: True, hub_reachable=lambda: True,
        model_cached=lambda name: True, settings_error=lambda path: None, environ={}, home=tmp_path,
    )
    return replace(fake, **changes)


def statuses(config: dict, machine) -> dict:
    return {check.name: check for check in doctor.run_checks(config, machine)}


def test_all_ok_on_a_healthy_machine(tmp_path):
    checks = statuses(preset("80gb"), healthy(tmp_path))
    assert all(check.status == doctor.OK for check in checks.values()), [c.line() for c in checks.values()]
    assert {"gpu", "versions", "memory", "vllm-kv", "model", "dataset", "disk", "tracker"} <= set(checks)
    assert "1 x NVIDIA H100" in checks["gpu"].message and "bf16 yes" in checks["gpu"].message


def test_no_gpu_is_a_blocker(tmp_path):
    checks = statuses(preset("24gb"), healthy(tmp_path, gpus=lambda: []))
    assert checks["gpu"].status == doctor.BLOCK and "CUDA build" in checks["gpu"].fix


def test_bf16_on_a_pre_ampere_gpu_is_a_blocker(tmp_path):
    t4 = machine_mod.Gpu("Tesla T4", 14.7, 14.5, (7, 5))
    check = doctor.check_gpus(preset("8gb"), healthy(tmp_path, gpus=lambda: [t4]))
    assert check.status == doctor.BLOCK and "fp16: true" in check.fix


def test_old_driver_for_torchs_cuda_is_a_blocker(tmp_path):
    check = doctor.check_gpus(preset("24gb"), healthy(tmp_path, driver=lambda: "470.82.01"))
    assert check.status == doctor.BLOCK and "driver >= 525" in check.fix


def test_missing_pinned_package_and_vllm_outside_trls_range_are_blockers(tmp_path):
    versions = {**PINS, "vllm": "0.33.0", "bitsandbytes": "0.50.2"}
    missing = dict(versions)
    missing.pop("trl")
    checks = doctor.check_versions(preset("24gb"), healthy(tmp_path, version=missing.get), ROOT / "pyproject.toml",
                                   mod("preflight.launch").Launch())
    assert checks[0].status == doctor.BLOCK and "trl" in checks[0].message
    launch = mod("preflight.launch").Launch()
    vllm = [c for c in doctor.check_versions(preset("24gb"), healthy(tmp_path, version=versions.get),
                                             ROOT / "pyproject.toml", launch) if c.name == "vllm"]
    assert vllm[0].status == doctor.BLOCK and "0.22.0..0.31.0" in vllm[0].message


def test_trl_vllm_range_is_read_from_metadata():
    assert doctor.trl_vllm_range(['vllm<=0.31.0,>=0.22.0; extra == "vllm"', "accelerate>=1"]) == ("0.22.0", "0.31.0")


def test_missing_bitsandbytes_for_an_8bit_optimizer_is_a_blocker(tmp_path):
    versions = {**PINS, "vllm": "0.30.0"}
    checks = doctor.check_versions(preset("8gb"), healthy(tmp_path, version=versions.get), ROOT / "pyproject.toml",
                                   mod("preflight.launch").Launch())
    assert any(c.name == "bitsandbytes" and c.status == doctor.BLOCK for c in checks)


def test_estimate_over_free_memory_is_a_blocker(tmp_path):
    busy = machine_mod.Gpu("NVIDIA H100 80GB HBM3", 79.1, 20.0, (9, 0))  # another job holds 59 GiB
    checks = statuses(preset("80gb"), healthy(tmp_path, gpus=lambda: [busy]))
    assert checks["memory"].status == doctor.BLOCK and "already in use" in checks["memory"].fix


def test_vllm_without_a_context_cap_is_a_blocker(tmp_path):
    config = {**preset("24gb"), "model_name_or_path": "Qwen/Qwen3-1.7B"}
    config.pop("vllm_max_model_length", None)
    card = machine_mod.Gpu("NVIDIA GeForce RTX 4090", 24.0, 23.5, (8, 9))
    checks = statuses(config, healthy(tmp_path, gpus=lambda: [card]))
    assert checks["vllm-kv"].status == doctor.BLOCK
    assert "40960-token request needs 4.38 GiB" in checks["vllm-kv"].message
    assert checks["vllm-kv"].fix == "set vllm_max_model_length: 1536"


def test_bubblewrap_only_for_the_sandboxed_task(tmp_path):
    required = {"sandbox_isolation": "required"}
    package = tmp_path / "pkg"
    package.mkdir()
    assert doctor.check_bubblewrap(required, healthy(tmp_path), package) is None  # no sandbox module: no check
    (package / "sandbox.py").write_text("")
    check = doctor.check_bubblewrap(required, healthy(tmp_path, which=lambda name: None), package)
    assert check.status == doctor.BLOCK and "apt-get install bubblewrap" in check.fix
    broken = healthy(tmp_path, bwrap_runs=lambda path: (False, "setting up uid map: Permission denied"))
    assert doctor.check_bubblewrap(required, broken, package).status == doctor.BLOCK
    assert doctor.check_bubblewrap({"sandbox_isolation": "auto"}, broken, package).status == doctor.WARN
    assert doctor.check_bubblewrap({}, broken, package) is None  # a config without sandbox settings


def test_dataset_checks(tmp_path):
    fake = healthy(tmp_path)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"question": "q"}) + "\n")
    check = doctor.check_dataset({"dataset_name": str(rows)}, fake, ("question", "answer"), tmp_path)
    assert check.status == doctor.BLOCK and "answer" in check.message
    rows.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    assert doctor.check_dataset({"dataset_name": str(rows)}, fake, ("question", "answer"), tmp_path).status == "ok"
    missing = doctor.check_dataset({"dataset_name": "nope.jsonl"}, fake, ("question",), tmp_path)
    assert missing.status == doctor.BLOCK
    offline = healthy(tmp_path, hub_cached=lambda name: False, environ={"HF_HUB_OFFLINE": "1"})
    assert doctor.check_dataset({"dataset_name": "org/set"}, offline, ("question",), tmp_path).status == doctor.BLOCK
    cut_off = healthy(tmp_path, hub_cached=lambda name: False, hub_reachable=lambda: False)
    check = doctor.check_dataset({"dataset_name": "org/set"}, cut_off, ("question",), tmp_path)
    assert check.status == doctor.BLOCK and "HF_HUB_OFFLINE=1" in check.fix  # train.py refuses it the same way


def test_model_checks(tmp_path):
    def model(name, machine, **config):
        return doctor.check_model({"model_name_or_path": name, **config}, machine, tmp_path)

    fake = healthy(tmp_path, model_cached=lambda name: False)
    assert model(".smoke/tiny-model", fake, build_tiny_model=True).status == doctor.OK
    (tmp_path / "my-model").mkdir()
    assert model("my-model", fake).status == doctor.OK
    typo = model("./my-modle", fake)
    assert typo.status == doctor.BLOCK and "does not exist" in typo.message
    assert model("Org/model", healthy(tmp_path)).status == doctor.OK  # cached
    assert model("Org/model", fake).status == doctor.OK  # the hub answers
    offline = model("Org/model", replace(fake, environ={"HF_HUB_OFFLINE": "1"}))
    assert offline.status == doctor.BLOCK and "hf download Org/model" in offline.fix
    assert model("Org/model", replace(fake, hub_reachable=lambda: False)).status == doctor.BLOCK


def test_a_config_train_py_refuses_is_a_blocker(tmp_path, capsys):
    """The real check: train.py's parser on a config with a misspelt key (the doctor used to pass it)."""
    smoke = (ROOT / "configs" / "smoke.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(smoke + "\nlearning_rat: 0.1\n")
    message = machine_mod._settings_error(str(bad))
    assert "unknown setting" in message and "learning_rate" in message
    assert machine_mod._settings_error(str(ROOT / "configs" / "smoke.yaml")) is None
    fake = healthy(tmp_path, settings_error=machine_mod._settings_error, environ={"WANDB_API_KEY": "x"})
    assert doctor.main(["--config", str(bad)], fake) == 1
    assert "[BLOCKER] config: " in capsys.readouterr().out


def test_disk_for_checkpoints_is_a_blocker_when_short(tmp_path):
    config = preset("8x80gb")  # full fine-tune: weights + optimizer state per checkpoint
    each = doctor.checkpoint_gib(config)
    assert each > 10
    check = doctor.check_disk(config, healthy(tmp_path, disk_free_gib=lambda path: each), tmp_path)
    assert check.status == doctor.BLOCK and "save_total_limit" in check.fix
    assert doctor.checkpoint_gib(preset("24gb")) < 1  # LoRA: the adapter and its optimizer state only


def test_wandb_login_is_a_blocker_unless_offline(tmp_path):
    config = {"report_to": "wandb"}
    assert doctor.check_tracker(config, healthy(tmp_path)).status == doctor.BLOCK
    assert doctor.check_tracker(config, healthy(tmp_path, environ={"WANDB_API_KEY": "x"})).status == doctor.OK
    (tmp_path / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password key\n")
    assert doctor.check_tracker(config, healthy(tmp_path)).status == doctor.OK
    no_package = healthy(tmp_path, version=lambda name: None)
    assert doctor.check_tracker({"report_to": "tensorboard"}, no_package).status == doctor.BLOCK


def test_exit_status_follows_blockers(tmp_path, capsys):
    path = GPU_PRESETS["24gb"]
    preset("24gb")
    status = doctor.main(["--config", str(path)], healthy(tmp_path, environ={"WANDB_API_KEY": "x"}))
    out = capsys.readouterr().out
    assert status == (1 if "[BLOCKER]" in out else 0), out
    assert status == 0 or BASE_MODEL, out  # the preset's own model fits; a user's base_model may not
    assert doctor.main(["--config", str(path)], healthy(tmp_path, gpus=lambda: [], environ={"WANDB_API_KEY": "x"})) == 1
    out = capsys.readouterr().out
    assert "[BLOCKER] gpu: no CUDA GPU visible" in out and "1 blocker(s)" in out


def test_real_cpu_run_on_the_smoke_config():
    done = subprocess.run([sys.executable, "-m", f"{PKG}.preflight.doctor", "--config", "configs/smoke.yaml"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "doctor: configs/smoke.yaml", done.stdout + done.stderr
    names = {line.split("]", 1)[1].split(":", 1)[0].strip() for line in lines[1:-1]}
    assert {"config", "gpu", "versions", "memory", "model", "dataset", "disk", "tracker"} <= names
    assert "[     ok] config: every setting parses" in done.stdout
    assert "CPU config" in done.stdout and "] dataset: curriculum:2000: generated locally" in done.stdout
    assert done.returncode == (1 if "[BLOCKER]" in done.stdout else 0), done.stdout


def test_local_version_labels_match_their_pin(tmp_path):
    versions = {**PINS, "torch": PINS.get("torch", "2.13.0") + "+cu128"}
    checks = doctor.check_versions({"use_cpu": True}, healthy(tmp_path, version=versions.get),
                                   ROOT / "pyproject.toml", mod("preflight.launch").Launch())
    assert checks[0].status == doctor.OK, checks[0].line()
