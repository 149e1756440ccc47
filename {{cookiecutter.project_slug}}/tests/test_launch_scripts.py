"""The multi-GPU launch scripts, run with fake nvidia-smi / accelerate / vllm executables that record their calls."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _pkg import free_port

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "configs/smoke.yaml"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the launch scripts are bash")

RECORDER = """#!%(python)s
import json, os, sys
record = dict(tool="%(name)s", argv=sys.argv[1:], cuda=os.environ.get("CUDA_VISIBLE_DEVICES"),
              dev_mode=os.environ.get("VLLM_SERVER_DEV_MODE"))
with open(os.environ["CALLS"], "a") as log:
    log.write(json.dumps(record) + "\\n")
%(body)s
"""
NVIDIA_SMI = "print('\\n'.join(f'GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})' for i in range(8)))"
HEALTHY_SERVER = """
from http.server import BaseHTTPRequestHandler, HTTPServer
class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])), Health).serve_forever()
"""


def fake_bin(tmp_path: Path, vllm_body: str = "import time; time.sleep(60)") -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {"nvidia-smi": NVIDIA_SMI, "accelerate": "", "vllm": vllm_body}.items():
        tool = bin_dir / name
        tool.write_text(RECORDER % {"python": sys.executable, "name": name, "body": body})
        tool.chmod(0o755)
    return bin_dir


def run(script: str, tmp_path: Path, env: dict, vllm_body: str | None = None, timeout: float = 60,
        config: str = CONFIG, extra: tuple = ()):
    bin_dir = fake_bin(tmp_path, *([vllm_body] if vllm_body else []))
    calls = tmp_path / "calls.jsonl"
    base = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "GPUS")}
    full_env = {**base, "PATH": f"{bin_dir}{os.pathsep}{base['PATH']}", "CALLS": str(calls),
                "PYTHON": sys.executable, **env}
    done = subprocess.run(["bash", f"scripts/{script}", "configs/accelerate/zero3.yaml", config, *extra,
                           "--max_steps", "3"],
                          cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout, check=False)
    records = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return done, {r["tool"]: r for r in records}


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize(("visible", "expected"), [(None, 8), ("0,1", 2), ("3", 1), ("2,5,7,-1,4", 3),
                                                   ("GPU-aaaa,GPU-bbbb", 2)])
def test_colocate_counts_the_visible_gpus(tmp_path, visible, expected):
    # PYTHON=true: the script's vLLM room check (a config parse, seconds) passes; it has its own test below
    env = {"PYTHON": "true"} if visible is None else {"CUDA_VISIBLE_DEVICES": visible, "PYTHON": "true"}
    done, calls = run("launch_colocate.sh", tmp_path, env)
    assert done.returncode == 0, done.stderr
    argv = calls["accelerate"]["argv"]
    assert argv[0] == "launch" and option(argv, "--num_processes") == str(expected)
    assert argv.count("--num_processes") == 2 and argv[-2:] == ["--max_steps", "3"]  # train.py's copy too
    assert ("nvidia-smi" in calls) == (visible is None)


def test_colocate_with_no_visible_gpu_refuses(tmp_path):
    done, calls = run("launch_colocate.sh", tmp_path, {"CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode != 0 and "no GPU visible" in done.stderr and "accelerate" not in calls


def test_colocate_gpus_override_cannot_exceed_the_visible(tmp_path):
    done, calls = run("launch_colocate.sh", tmp_path, {"CUDA_VISIBLE_DEVICES": "0,1", "GPUS": "4"})
    assert done.returncode != 0 and "GPUS=4 but 2" in done.stderr and "accelerate" not in calls


def test_server_waits_for_health_then_trains_on_the_other_gpus(tmp_path):
    port = free_port()
    env = {"CUDA_VISIBLE_DEVICES": "4,5,6", "VLLM_PORT": str(port), "VLLM_WAIT_S": "30"}
    override = ("--model_name_or_path", "other/model", "--build_tiny_model", "false", "--vllm_max_model_length", "777")
    done, calls = run("launch_server.sh", tmp_path, env, vllm_body=HEALTHY_SERVER, extra=override)
    assert done.returncode == 0, done.stderr
    server, train = calls["vllm"], calls["accelerate"]
    assert server["argv"][:2] == ["serve", "other/model"] and option(server["argv"], "--max-model-len") == "777"
    assert option(train["argv"], "--model_name_or_path") == "other/model"
    assert server["argv"][0] == "serve" and server["cuda"] == "6" and server["dev_mode"] == "1"
    assert option(server["argv"], "--port") == str(port)
    assert json.loads(option(server["argv"], "--weight-transfer-config")) == {"backend": "nccl"}
    assert train["cuda"] == "4,5" and option(train["argv"], "--num_processes") == "2"
    assert option(train["argv"], "--vllm_mode") == "server" and option(train["argv"], "--vllm_server_port") == str(port)


def test_server_not_up_stops_before_training(tmp_path):
    env = {"CUDA_VISIBLE_DEVICES": "0,1", "VLLM_PORT": str(free_port()), "VLLM_WAIT_S": "3"}
    done, calls = run("launch_server.sh", tmp_path, env)  # the fake server never listens
    assert done.returncode != 0
    assert "did not answer" in done.stderr and "/health within 3s" in done.stderr
    assert "vllm" in calls and "accelerate" not in calls


def test_server_that_exits_is_reported(tmp_path):
    env = {"CUDA_VISIBLE_DEVICES": "0,1", "VLLM_PORT": str(free_port()), "VLLM_WAIT_S": "30"}
    done, calls = run("launch_server.sh", tmp_path, env, vllm_body="sys.exit(3)")
    assert done.returncode != 0 and "exited (status 3)" in done.stderr and "accelerate" not in calls


def test_server_with_a_config_that_names_no_model_is_one_line(tmp_path):
    config = tmp_path / "no-model.yaml"
    config.write_text("".join(line for line in (ROOT / CONFIG).read_text().splitlines(keepends=True)
                              if not line.startswith("model_name_or_path:")))
    done, calls = run("launch_server.sh", tmp_path, {"CUDA_VISIBLE_DEVICES": "0,1"}, config=str(config))
    assert done.returncode == 1 and "vllm" not in calls and "accelerate" not in calls
    assert done.stderr.strip() == f"error: {config} sets no model_name_or_path: add it there, or pass " \
                                  "--model_name_or_path", done.stderr


def test_server_mode_needs_two_gpus(tmp_path):
    done, calls = run("launch_server.sh", tmp_path, {"CUDA_VISIBLE_DEVICES": "0"})
    assert done.returncode != 0 and "at least 2 GPUs" in done.stderr and not calls


def test_colocate_refuses_a_preset_whose_vllm_share_cannot_hold_the_weights(tmp_path):
    """The 8gb preset generates with transformers: colocated, vLLM would get 0.3 x 8 GiB for 2.9 GiB of weights."""
    bin_dir = fake_bin(tmp_path)
    env = {**{k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "GPUS")},
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CALLS": str(tmp_path / "calls.jsonl"),
           "PYTHON": sys.executable}
    done = subprocess.run(["bash", "scripts/launch_colocate.sh", "configs/accelerate/ddp.yaml", "configs/8gb.yaml"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    if "Qwen/Qwen2.5-1.5B-Instruct" not in (ROOT / "configs" / "8gb.yaml").read_text():
        pytest.skip("the preset's model was replaced at generation")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().startswith("error: configs/8gb.yaml: vLLM colocated gets") and len(
        done.stderr.strip().splitlines()) == 1, done.stderr
    calls = (tmp_path / "calls.jsonl").read_text() if (tmp_path / "calls.jsonl").exists() else ""
    assert '"tool": "accelerate"' not in calls  # refused before the launch
    # the check reads the settings as train.py does: a command-line override that gives vLLM room is honoured
    done = subprocess.run(["bash", "scripts/launch_colocate.sh", "configs/accelerate/ddp.yaml", "configs/8gb.yaml",
                           "--vllm_gpu_memory_utilization", "0.9"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    launched = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()
                if '"tool": "accelerate"' in line]
    assert launched and launched[0]["argv"][-2:] == ["--vllm_gpu_memory_utilization", "0.9"]
