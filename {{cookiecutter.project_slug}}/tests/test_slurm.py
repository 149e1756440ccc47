"""scripts/slurm/train.sbatch run outside SLURM: fake srun / scontrol / nvidia-smi / vllm / curl / accelerate on
PATH record what each node would run. The fake srun starts its command once per node, with the variables SLURM sets
in a task (SLURM_PROCID, SLURMD_NODENAME), and honours --output."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = "scripts/slurm/train.sbatch"
JOB = "4242"
NODES = ["gpu01", "gpu02", "gpu03"]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the sbatch script is bash")

RECORD = """#!%(python)s
import json, os, sys
keys = ("SLURMD_NODENAME", "SLURM_PROCID", "VLLM_SERVER_DEV_MODE", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING", "CUDA_VISIBLE_DEVICES")
record = dict(tool="%(name)s", argv=sys.argv[1:], env={k: os.environ.get(k) for k in keys})
with open(os.environ["CALLS"], "a") as log:
    log.write(json.dumps(record) + "\\n")
%(body)s
"""
TOOLS = {
    "nvidia-smi": "print('\\n'.join(f'GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})' for i in range(8)))",
    "scontrol": "assert sys.argv[1:3] == ['show', 'hostnames']; print('\\n'.join(os.environ['FAKE_NODES'].split(',')))",
    # curl --silent --fail ... URL: 0 once the fake server has written its "ready" file, else 7 (refused)
    "curl": "sys.exit(0 if os.path.exists(os.environ['FAKE_READY']) else 7)",
    "accelerate": "print('fake accelerate on', os.environ.get('SLURMD_NODENAME'))",
    "vllm": """
import time
mode = os.environ.get("FAKE_VLLM", "healthy")
if mode == "exits":
    sys.exit(3)
if mode == "healthy":
    open(os.environ["FAKE_READY"], "w").close()
time.sleep(60)
""",
    # python -m <package>.preflight.doctor ...: recorded, exit FAKE_DOCTOR_RC; anything else runs the real interpreter
    "python": """
if sys.argv[1:2] == ["-m"] and sys.argv[2].endswith(".doctor"):
    sys.exit(int(os.environ.get("FAKE_DOCTOR_RC", "0")))
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
""",
    "srun": """
import signal, subprocess
args, options = sys.argv[1:], {}
while args[0].startswith("--"):
    name = args.pop(0)
    if "=" in name:
        continue
    options[name] = args.pop(0)
everyone = os.environ["FAKE_NODES"].split(",")
nodes = options["--nodelist"].split(",") if "--nodelist" in options else everyone[:int(options["--nodes"])]
assert len(nodes) == int(options["--nodes"]) == int(options.get("--ntasks", len(nodes)))
output = open(options["--output"], "w") if "--output" in options else None
children = [subprocess.Popen(args, stdout=output, stderr=output, env={
    **os.environ, "SLURM_PROCID": str(rank), "SLURMD_NODENAME": node, "SLURM_NODEID": str(everyone.index(node)),
    "SLURM_STEP_NUM_NODES": str(len(nodes))}) for rank, node in enumerate(nodes)]
def stop(*_):
    for child in children:
        child.kill()
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
sys.exit(max(child.wait() for child in children))
""",
}


def run(tmp_path: Path, nodes: list[str] = NODES, mode: str = "server", extra: tuple = (), **env: str):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in TOOLS.items():
        tool = bin_dir / name
        tool.write_text(RECORD % {"python": sys.executable, "name": name, "body": body})
        tool.chmod(0o755)
    calls = tmp_path / "calls.jsonl"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "CUDA_VISIBLE", "GPUS", "MASTER"))}
    full_env = {**base, "PATH": f"{bin_dir}{os.pathsep}{base['PATH']}", "CALLS": str(calls),
                "FAKE_NODES": ",".join(nodes), "FAKE_READY": str(tmp_path / "ready"),
                "LOG_DIR": str(tmp_path / "logs"),
                "SLURM_JOB_ID": JOB, "SLURM_JOB_NODELIST": f"gpu[01-{len(nodes):02d}]", "SLURM_SUBMIT_DIR": str(ROOT),
                "SLURM_CPUS_PER_TASK": "32", "CUDA_VISIBLE_DEVICES": "0,1,2,3", "VLLM_MODE": mode,
                "VLLM_POLL_S": "0.2", "PYTHON": "python", **env}
    command = ["bash", str(ROOT / SCRIPT), "configs/accelerate/zero3.yaml", "configs/smoke.yaml", *extra,
               "--max_steps", "3"]
    done = subprocess.run(command, cwd=tmp_path, env=full_env, capture_output=True, text=True, timeout=120, check=False)
    records = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return done, records


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def of(records: list[dict], tool: str) -> list[dict]:
    return [r for r in records if r["tool"] == tool]


def test_server_mode_trains_on_all_nodes_but_the_last(tmp_path):
    # an override on the command line reaches the server as it reaches train.py (the project's config parsing)
    done, records = run(tmp_path, extra=("--model_name_or_path", "other/model", "--build_tiny_model", "false",
                                         "--vllm_max_model_length", "777"))
    assert done.returncode == 0, done.stderr
    assert of(records, "scontrol")[0]["argv"] == ["show", "hostnames", "gpu[01-03]"]
    # vllm serve on the last node, every GPU of it (4 data-parallel replicas), dev endpoints for TRL's weight sync
    [server] = of(records, "vllm")
    assert server["env"]["SLURMD_NODENAME"] == "gpu03" and server["env"]["VLLM_SERVER_DEV_MODE"] == "1"
    assert server["argv"][:2] == ["serve", "other/model"] and option(server["argv"], "--port") == "8000"
    assert option(server["argv"], "--max-model-len") == "777"
    assert option(server["argv"], "--data-parallel-size") == "4"
    assert (tmp_path / "logs" / f"{JOB}-gpu03.log").is_file()
    # its /health polled until it answered, and only then training started
    polls = of(records, "curl")
    assert polls and all(p["argv"][-1] == "http://gpu03:8000/health" for p in polls)
    assert "--max-time" in polls[0]["argv"]
    first_training = next(i for i, r in enumerate(records) if r["tool"] == "accelerate")
    assert records.index(polls[-1]) < first_training
    # accelerate launch on gpu01 (rank 0, the main address) and gpu02 (rank 1); never on the server node
    trains = sorted(of(records, "accelerate"), key=lambda r: r["env"]["SLURMD_NODENAME"])
    assert [t["env"]["SLURMD_NODENAME"] for t in trains] == ["gpu01", "gpu02"]
    port = str(20000 + int(JOB) % 10000)
    for rank, train in enumerate(trains):
        argv = train["argv"]
        assert argv[0] == "launch" and option(argv, "--config_file") == "configs/accelerate/zero3.yaml"
        assert option(argv, "--num_machines") == "2" and option(argv, "--machine_rank") == str(rank)
        assert option(argv, "--main_process_ip") == "gpu01" and option(argv, "--main_process_port") == port
        assert option(argv, "--num_processes") == "8" and argv.count("--num_processes") == 2  # 2 nodes x 4 GPUs
        assert option(argv, "--rdzv_backend") == "static"
        script = argv[argv.index("train.py"):]
        assert option(script, "--config") == "configs/smoke.yaml" and option(script, "--vllm_mode") == "server"
        assert option(script, "--vllm_server_host") == "gpu03" and option(script, "--vllm_server_port") == "8000"
        assert option(script, "--ddp_timeout") == "1800" and script[-2:] == ["--max_steps", "3"]
        assert option(script, "--model_name_or_path") == "other/model"
        assert train["env"]["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1" == train["env"]["NCCL_ASYNC_ERROR_HANDLING"]
        assert train["env"]["OMP_NUM_THREADS"] == "8"  # 32 CPUs of the task / 4 processes
        assert train["env"]["MASTER_ADDR"] == "gpu01" and train["env"]["MASTER_PORT"] == port
    # one log per node, holding what that node's launch printed
    for node in ("gpu01", "gpu02"):
        assert (tmp_path / "logs" / f"{JOB}-{node}.log").read_text() == f"fake accelerate on {node}\n"
    assert not (tmp_path / "logs" / f"{JOB}-gpu03.doctor.log").exists()


def test_server_that_never_answers_stops_before_training(tmp_path):
    done, records = run(tmp_path, FAKE_VLLM="silent", VLLM_WAIT_S="1")
    assert done.returncode != 0 and not of(records, "accelerate")
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: the vLLM server did not answer http://gpu03:8000/health within 1s (raise VLLM_WAIT_S, "
                      f"or see {tmp_path}/logs/{JOB}-gpu03.log)"]


def test_server_that_exits_is_reported(tmp_path):
    done, records = run(tmp_path, FAKE_VLLM="exits", VLLM_WAIT_S="30")
    assert done.returncode != 0 and "exited (status 3)" in done.stderr and not of(records, "accelerate")


def test_colocate_trains_on_every_node_without_a_server(tmp_path):
    done, records = run(tmp_path, nodes=NODES[:2], mode="colocate", MAIN_PORT="31000")
    assert done.returncode == 0, done.stderr
    assert not of(records, "vllm") and not of(records, "curl")
    trains = sorted(of(records, "accelerate"), key=lambda r: r["env"]["SLURMD_NODENAME"])
    assert [(t["env"]["SLURMD_NODENAME"], option(t["argv"], "--machine_rank")) for t in trains] == [
        ("gpu01", "0"), ("gpu02", "1")]
    for train in trains:
        assert option(train["argv"], "--num_machines") == "2"
        assert option(train["argv"], "--main_process_port") == "31000"
        assert option(train["argv"], "--vllm_mode") == "colocate"


def test_server_mode_needs_two_nodes(tmp_path):
    done, records = run(tmp_path, nodes=NODES[:1])
    assert done.returncode != 0 and "at least 2 nodes" in done.stderr and not of(records, "srun")


def test_doctor_runs_on_every_training_node_and_its_blocker_stops_the_job(tmp_path):
    done, records = run(tmp_path, DOCTOR="1", FAKE_DOCTOR_RC="1")
    assert done.returncode != 0 and "the doctor found a blocker" in done.stderr
    doctors = [r for r in of(records, "python") if r["argv"][:1] == ["-m"]]
    assert sorted(d["env"]["SLURMD_NODENAME"] for d in doctors) == ["gpu01", "gpu02"]
    assert all(d["argv"][1].endswith(".preflight.doctor") and option(d["argv"], "--num_machines") == "2"
               for d in doctors)
    assert not of(records, "vllm") and not of(records, "accelerate")  # stopped before the server and training


def test_outside_slurm_refuses(tmp_path):
    done, records = run(tmp_path, SLURM_JOB_ID="")
    assert done.returncode != 0 and "not inside a SLURM job" in done.stderr and not records
