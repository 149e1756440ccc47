"""Multi-node: the doctor's checks with fake machine facts (and the real probes on localhost), and a real
2-"node" x 1-process GRPO run on this machine: two `accelerate launch --num_machines 2` with machine ranks 0 and 1,
gloo on CPU, meeting at 127.0.0.1."""

import json
import os
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from _pkg import free_port, mod

doctor = mod("preflight.doctor")
multinode = mod("preflight.multinode")
machine_mod = mod("preflight.machine")
ROOT = Path(__file__).resolve().parent.parent
SMOKE = {"output_dir": "outputs/smoke", "use_cpu": True}


def node(tmp_path: Path, name: str = "gpu01", **changes) -> "machine_mod.Machine":
    """A node of a 2-node SLURM job step whose main address is gpu01:29400; versions as installed here."""
    environ = {"SLURM_JOB_ID": "77", "SLURM_STEP_NUM_NODES": "2", "SLURM_JOB_NODELIST": "gpu[01-02]",
               "MASTER_ADDR": "gpu01", "MASTER_PORT": "29400"}
    fake = machine_mod.Machine(
        environ=environ, hostname=lambda: name, fs_type=lambda path: "nfs4", probe=lambda host, port: "refused",
        is_local=lambda host: host == name, port_free=lambda port: True, hostnames=lambda nodelist: ["gpu01", "gpu02"],
        version={"torch": "2.13.0", "trl": "1.16.0"}.get,
    )
    return replace(fake, **changes)


def multi(config: dict, machine, root: Path, **kwargs) -> dict:
    return {name: (status, message, fix) for name, status, message, fix in
            multinode.checks(config, machine, root, **kwargs)}


def test_single_node_launch_has_no_multinode_checks(tmp_path):
    single = node(tmp_path, environ={"SLURM_JOB_NUM_NODES": "1"})
    assert multinode.checks(SMOKE, single, tmp_path) == []
    assert multinode.detect(single, {"num_machines": 1}) is None
    assert multinode.detect(single, {"num_machines": 2, "main_process_ip": "10.0.0.1"}).address == "10.0.0.1"
    assert not (tmp_path / "outputs").exists()  # nothing written for a single-node launch


def test_main_address_and_port_sources(tmp_path):
    bare = node(tmp_path, environ={"SLURM_JOB_NUM_NODES": "3", "SLURM_JOB_NODELIST": "gpu[01-03]"})
    found = multinode.detect(bare)
    assert (found.machines, found.address, found.port) == (3, "gpu01", multinode.DEFAULT_PORT)
    found = multinode.detect(node(tmp_path), {"num_machines": 4, "main_process_port": 1234}, num_machines=2)
    assert (found.machines, found.address, found.port, found.source) == (2, "gpu01", 29400, "--num_machines")


def test_rendezvous(tmp_path):
    checks = multi(SMOKE, node(tmp_path, "gpu02"), tmp_path)  # the other node: gpu01 answers (refused = up)
    assert checks["rendezvous"][0] == doctor.OK and "gpu01:29400" in checks["rendezvous"][1]
    checks = multi(SMOKE, node(tmp_path, "gpu02", probe=lambda host, port: "timeout"), tmp_path)
    assert checks["rendezvous"][0] == doctor.BLOCK and "firewall" in checks["rendezvous"][1]
    checks = multi(SMOKE, node(tmp_path, "gpu02", probe=lambda h, p: "unresolved: Name or service not known"), tmp_path)
    assert checks["rendezvous"][0] == doctor.BLOCK and "MASTER_ADDR" in checks["rendezvous"][2]
    checks = multi(SMOKE, node(tmp_path, "gpu01", port_free=lambda port: False), tmp_path)  # the main node itself
    assert checks["rendezvous"][0] == doctor.BLOCK and "already in use" in checks["rendezvous"][1]
    checks = multi(SMOKE, node(tmp_path, "gpu01"), tmp_path)
    assert checks["rendezvous"][0] == doctor.OK and "this node is the main node" in checks["rendezvous"][1]


def test_shared_output_dir(tmp_path):
    alone = multi(SMOKE, node(tmp_path, fs_type=lambda path: "tmpfs"), tmp_path)
    assert alone["shared-output"][0] == doctor.BLOCK and "tmpfs, local to this node" in alone["shared-output"][1]
    assert alone["node-versions"][0] == doctor.WARN and "cannot tell" in alone["node-versions"][1]
    assert multi(SMOKE, node(tmp_path, fs_type=lambda path: "ext4"), tmp_path)["shared-output"][0] == doctor.WARN
    assert multi(SMOKE, node(tmp_path), tmp_path)["shared-output"][0] == doctor.OK  # nfs4: shared by design
    # the other node's doctor wrote into the same directory: shared, whatever the filesystem type says
    multi(SMOKE, node(tmp_path, "gpu02"), tmp_path)
    both = multi(SMOKE, node(tmp_path, fs_type=lambda path: "ext4"), tmp_path)
    assert both["shared-output"][0] == doctor.OK and "gpu02" in both["shared-output"][1]
    assert both["node-versions"][0] == doctor.OK and "same versions on 2 nodes" in both["node-versions"][1]
    assert sorted(p.name for p in (tmp_path / "outputs/smoke/.doctor/77").iterdir()) == ["gpu01.json", "gpu02.json"]


def test_different_versions_on_another_node_are_a_blocker(tmp_path):
    multi(SMOKE, node(tmp_path, "gpu02", version={"torch": "2.13.0", "trl": "1.15.0"}.get), tmp_path)
    checks = multi(SMOKE, node(tmp_path), tmp_path)
    assert checks["node-versions"][0] == doctor.BLOCK
    assert "gpu02: trl 1.15.0 (here 1.16.0)" in checks["node-versions"][1]


def test_waits_for_the_other_nodes(tmp_path):
    import threading

    late = threading.Timer(1.0, multi, (SMOKE, node(tmp_path, "gpu02"), tmp_path))
    late.start()
    checks = multi(SMOKE, node(tmp_path), tmp_path, wait_s=30)
    late.join()
    assert checks["node-versions"][0] == doctor.OK, checks


def test_doctor_reports_the_multinode_checks(tmp_path):
    machine = replace(node(tmp_path, fs_type=lambda path: "tmpfs"), gpus=lambda: [], settings_error=lambda path: None,
                      hub_reachable=lambda: True, disk_free_gib=lambda path: 500.0)
    names = {check.name: check for check in doctor.run_checks({**SMOKE, "dataset_name": "curriculum:10",
                                                              "build_tiny_model": True}, machine, tmp_path)}
    assert names["shared-output"].status == doctor.BLOCK and {"rendezvous", "node-versions"} <= set(names)


def test_real_probes_on_localhost(tmp_path):
    real = machine_mod.Machine()
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert real.probe("127.0.0.1", port) == "open" and not real.port_free(port)
    assert real.probe("127.0.0.1", port) == "refused" and real.port_free(port)
    assert real.probe("no-such-host.invalid", port).startswith("unresolved")
    assert real.is_local("127.0.0.1") and real.is_local(real.hostname())
    assert real.fs_type(tmp_path) != ""


@pytest.mark.slow
def test_two_nodes_of_one_process_train_and_save_one_model(tmp_path):
    """Two `accelerate launch` (the sbatch script's launch line, DDP config) with --num_machines 2 and machine ranks
    0 and 1 on 127.0.0.1, gloo on CPU. The tiny model is built fresh: the first node builds it, the second waits for
    it on the shared filesystem (both nodes building into one directory was a crash)."""
    out, steps, port = tmp_path / "run", 2, free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    env = {k: v for k, v in env.items() if not k.startswith(("MASTER_", "WORLD_SIZE", "RANK", "LOCAL_RANK"))}
    launches = []
    for rank in (0, 1):
        log = (tmp_path / f"node{rank}.log").open("w")
        launches.append(subprocess.Popen(
            [sys.executable, "-m", "accelerate.commands.launch", "--config_file", "configs/accelerate/ddp.yaml",
             "--mixed_precision", "no", "--num_machines", "2", "--machine_rank", str(rank), "--num_processes", "2",
             "--main_process_ip", "127.0.0.1", "--main_process_port", str(port), "--rdzv_backend", "static",
             "--same_network", "train.py", "--config", "configs/smoke.yaml", "--num_processes", "2",
             "--model_name_or_path", str(tmp_path / "tiny-model"), "--build_tiny_model", "true",
             "--format_priming_steps", "0",
             "--output_dir", str(out), "--max_steps", str(steps), "--save_steps", str(steps)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
    try:
        codes = [launch.wait(timeout=600) for launch in launches]
    finally:
        for launch in launches:
            launch.kill()
    logs = [(tmp_path / f"node{rank}.log").read_text() for rank in (0, 1)]
    assert codes == [0, 0], "\n".join(log[-3000:] for log in logs)
    assert (out / "model.safetensors").is_file() and len(list(tmp_path.rglob("model.safetensors"))) == 3  # + ckpt, tiny
    # each node's process saved its own RNG state into the one checkpoint: both machine ranks reached the last step
    assert sorted(p.name for p in (out / f"checkpoint-{steps}").glob("rng_state_*.pth")) == [
        "rng_state_0.pth", "rng_state_1.pth"]
    assert json.loads((out / f"checkpoint-{steps}" / "trainer_state.json").read_text())["global_step"] == steps
    assert f"finished at step {steps}" in logs[1] and "model saved" in logs[0]
