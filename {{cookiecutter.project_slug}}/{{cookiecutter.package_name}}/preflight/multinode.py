"""The doctor's multi-node checks: the rendezvous reachable from this node, the output directory shared between the
nodes, the same package versions on every node.

A launch is multi-node when ``--num_machines`` (the doctor's flag, as scripts/slurm/train.sbatch passes it), the
accelerate config's ``num_machines`` or SLURM (a job step or job over more than one node) says so. The main address
and port come from ``MASTER_ADDR`` / ``MASTER_PORT`` (torchrun's names, exported by the sbatch script), else the
accelerate config's ``main_process_ip`` / ``main_process_port``, else the first SLURM node and port 29500.

Shared directory and versions: each node's doctor writes ``<output_dir>/.doctor/<job>/<node>.json`` (its versions)
and reads the others'. Another node's file visible here proves the directory is shared; without one (the doctor ran
on one node only) the filesystem type decides: tmpfs / overlay are local to a node (a blocker), NFS, Lustre, GPFS and
the like are shared by design, anything else is a warning. Versions are compared only against the nodes whose files
are visible; with none the check says it cannot tell.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..settings import setting
from .machine import Machine

OK, WARN, BLOCK = "ok", "warning", "BLOCKER"
DEFAULT_PORT = 29500  # torchrun's and accelerate's default main_process_port
LOCAL_ONLY = {"tmpfs", "ramfs", "devtmpfs", "overlay", "squashfs"}
SHARED = {"nfs", "nfs4", "lustre", "gpfs", "beegfs", "cephfs", "ceph", "glusterfs", "wekafs", "panfs", "cifs", "smb3",
          "fuse.juicefs", "fuse.glusterfs", "fuse.sshfs", "orangefs", "virtiofs", "9p"}
PACKAGES = ("torch", "transformers", "trl", "accelerate", "peft", "datasets", "deepspeed", "vllm")


@dataclass(frozen=True)
class MultiNode:
    machines: int
    address: str | None
    port: int
    source: str


def _int(value: Any) -> int:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return 0


def _first_slurm_node(environ: Mapping[str, str], machine: Machine) -> str | None:
    nodelist = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST") or ""
    if not nodelist:
        return None
    if "[" not in nodelist:
        return nodelist.split(",")[0]
    names = machine.hostnames(nodelist)
    return names[0] if names else None


def detect(machine: Machine, accelerate: Mapping[str, Any] | None = None,
           num_machines: int | None = None) -> MultiNode | None:
    """The multi-node launch this node is part of, or None for a single-node launch."""
    environ = machine.environ
    accelerate = accelerate or {}
    # A job step's node count first: in server mode the training step spans one node less than the job.
    slurm = _int(environ.get("SLURM_STEP_NUM_NODES")) or _int(environ.get("SLURM_JOB_NUM_NODES")) \
        or _int(environ.get("SLURM_NNODES"))
    if num_machines:
        machines, source = num_machines, "--num_machines"
    elif _int(accelerate.get("num_machines")) > 1:
        machines, source = _int(accelerate.get("num_machines")), "the accelerate config's num_machines"
    elif slurm > 1:
        machines, source = slurm, "SLURM's node count"
    else:
        return None
    if machines < 2:
        return None
    address = environ.get("MASTER_ADDR") or accelerate.get("main_process_ip") or _first_slurm_node(environ, machine)
    port = _int(environ.get("MASTER_PORT")) or _int(accelerate.get("main_process_port")) or DEFAULT_PORT
    return MultiNode(machines, str(address) if address else None, port, source)


def check_rendezvous(run: MultiNode, machine: Machine) -> tuple[str, str, str]:
    """(status, message, fix) for the main address and port, as seen from this node."""
    where = f"{run.address}:{run.port}"
    if not run.address:
        return WARN, f"{run.machines} machines ({run.source}) but no main address to check", \
            "export MASTER_ADDR (the first training node) or set main_process_ip in the accelerate config"
    if machine.is_local(run.address):
        if machine.port_free(run.port):
            return OK, f"{where}: this node is the main node and the port is free", ""
        return BLOCK, f"{where}: this node is the main node but port {run.port} is already in use", \
            "choose another MAIN_PORT / main_process_port (another job on this node may hold it)"
    seen = machine.probe(run.address, run.port)
    if seen == "open":
        return OK, f"{where}: reachable, a process listens already", ""
    if seen == "refused":
        return OK, f"{where}: the host answers from here (nothing listens yet: rank 0 opens the port at launch)", ""
    if seen == "timeout":
        return BLOCK, f"{where}: no answer from this node within 5 s (a firewall or the wrong network?)", \
            "open the port between the nodes, or pick the interface (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME)"
    return BLOCK, f"{where}: {seen}", "export MASTER_ADDR as a name or address every node resolves"


def _versions(machine: Machine) -> dict[str, str]:
    found = {name: machine.version(name) for name in PACKAGES}
    found = {name: version for name, version in found.items() if version}
    return {"python": ".".join(str(part) for part in sys.version_info[:3]), **found}


def exchange(directory: Path, machine: Machine, machines: int, wait_s: float = 0.0) -> dict[str, dict[str, str]]:
    """Write this node's versions into ``directory`` and return every node's (this one included) visible there,
    waiting up to ``wait_s`` seconds for ``machines`` of them."""
    directory.mkdir(parents=True, exist_ok=True)
    me = machine.hostname()
    mine = directory / f"{me}.json"
    partial = directory / f".{me}.json.partial"
    partial.write_text(json.dumps({"node": me, "versions": _versions(machine)}), encoding="utf-8")
    partial.replace(mine)
    deadline = time.monotonic() + wait_s
    while True:
        nodes = {}
        for path in sorted(directory.glob("*.json")):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                nodes[str(record["node"])] = dict(record["versions"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
        if len(nodes) >= machines or time.monotonic() >= deadline:
            return nodes
        time.sleep(1.0)


def check_shared(output: Path, nodes: Mapping[str, Any], me: str, machine: Machine) -> tuple[str, str, str]:
    others = sorted(set(nodes) - {me})
    kind = machine.fs_type(output) or "unknown"
    if others:
        return OK, f"{output} ({kind}) is shared: {len(others)} other node(s) wrote here ({', '.join(others[:4])})", ""
    fix = ("put output_dir on the cluster's shared filesystem; run the doctor on every node at once "
           "(DOCTOR=1 scripts/slurm/train.sbatch) to prove it")
    if kind in LOCAL_ONLY:
        return BLOCK, f"{output} is on {kind}, local to this node: the other nodes cannot read its checkpoints", fix
    if kind in SHARED or kind.startswith("nfs"):
        return OK, f"{output} is on {kind}, a network filesystem (no other node's doctor seen yet)", ""
    return WARN, f"{output} is on {kind} and no other node's doctor wrote here: cannot tell if it is shared", fix


def check_versions(nodes: Mapping[str, Mapping[str, str]], me: str) -> tuple[str, str, str]:
    others = sorted(set(nodes) - {me})
    if not others:
        return WARN, "cannot tell: only this node's versions are visible", \
            "run the doctor on every node at once (DOCTOR=1 scripts/slurm/train.sbatch)"
    mine = nodes.get(me, {})
    differ = []
    for node in others:
        for name in sorted(set(mine) | set(nodes[node])):
            if nodes[node].get(name) != mine.get(name):
                theirs, here = nodes[node].get(name) or "missing", mine.get(name) or "missing"
                differ.append(f"{node}: {name} {theirs} (here {here})")
    if differ:
        return BLOCK, "versions differ between nodes: " + "; ".join(differ[:6]), \
            "install the same environment on every node (one shared venv, or pip install -e '.[gpu]' from the pins)"
    return OK, f"same versions on {len(others) + 1} nodes ({', '.join(f'{k} {v}' for k, v in mine.items())})", ""


def checks(config: Mapping[str, Any], machine: Machine, root: Path, accelerate: Mapping[str, Any] | None = None,
           num_machines: int | None = None, wait_s: float = 0.0) -> list[tuple[str, str, str, str]]:
    """(name, status, message, fix) for each multi-node check; [] for a single-node launch."""
    run = detect(machine, accelerate, num_machines)
    if run is None:
        return []
    found = [("rendezvous", *check_rendezvous(run, machine))]
    output = Path(str(setting(config, "output_dir")))
    output = output if output.is_absolute() else root / output
    job = machine.environ.get("SLURM_JOB_ID") or "local"
    me = machine.hostname()
    try:
        nodes = exchange(output / ".doctor" / job, machine, run.machines, wait_s)
    except OSError as error:
        found.append(("shared-output", BLOCK, f"cannot write under {output}: {error}", "fix output_dir"))
        return found
    found.append(("shared-output", *check_shared(output, nodes, me, machine)))
    found.append(("node-versions", *check_versions(nodes, me)))
    return found
