"""Pre-flight check on the GPU machine, before the paid hour starts: one line per check, each with its fix.

    python -m <package>.preflight.doctor                # the project's default preset
    python -m <package>.preflight.doctor --config configs/24gb.yaml [--accelerate_config configs/accelerate/zero3.yaml]

Checks: the config through train.py's own parser and checks, the GPUs (count, name, memory, bf16, driver vs the
CUDA build of torch), installed versions vs the project's pins and TRL's supported vLLM range, the preset's
estimated peak vs free GPU memory, vLLM's KV budget for one full-length request, bubblewrap (projects with a code
sandbox), the model and the dataset (local, cached or on a reachable hub, as train.py requires), disk space for the
checkpoints, the tracker's login; for a multi-node launch the rendezvous, a shared output_dir and the same versions on
every node (multinode.py). Exit status 0 when nothing blocks training, 1 when something does: a pass means
train.py starts.
Every fact about the machine comes through :class:`Machine`, so tests pass fakes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from .. import ROOT
from ..flags import with_underscores
from ..settings import setting
from . import launch as launches
from . import memory
from .archs import EstimateError, resolve_arch
from .doctor_report import BLOCK, OK, WARN, Check, report
from .doctor_sources import check_dataset, check_model
from .estimator import GIB
from .machine import Gpu, Machine  # noqa: F401 - Gpu: re-exported for tests
from .vllm_memory import VLLM_OVERHEAD_GIB, vllm_one_request_gib, vllm_weights_gib

PACKAGE_DIR = Path(__file__).resolve().parents[1]
MIN_DRIVER = {11: (450, 80), 12: (525, 60), 13: (580, 0)}  # Linux driver a CUDA major version needs (NVIDIA)


# --- configs ----------------------------------------------------------------------------------------------------------


def read_config(path: str | Path) -> dict[str, Any]:
    """The training config as a dict (one function, so a typed config loader can replace it)."""
    return memory.load_config(path)


def default_config_path(root: Path = ROOT) -> Path | None:
    answers = root / ".cookiecutter.json"
    try:
        gpu = json.loads(answers.read_text(encoding="utf-8")).get("gpu")
    except (OSError, ValueError):
        return None
    return root / "configs" / f"{gpu}.yaml" if gpu else None


def pinned(pyproject: Path) -> dict[str, str]:
    """``name -> version`` of the ``==`` pins in pyproject.toml's [project] dependencies."""
    text = pyproject.read_text(encoding="utf-8")
    block = re.search(r"^dependencies\s*=\s*\[(.*?)^\]", text, re.S | re.M)
    pins = re.findall(r'"([A-Za-z0-9_.\-]+)==([^";\s]+)"', block.group(1) if block else "")
    return {name.lower(): version for name, version in pins}


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def trl_vllm_range(requires: list[str]) -> tuple[str | None, str | None]:
    """TRL's supported vLLM range from its own metadata (the ``vllm`` extra), e.g. ('0.22.0', '0.31.0')."""
    for requirement in requires:
        if requirement.startswith("vllm") and "extra" in requirement:
            low = re.search(r">=\s*([\d.]+)", requirement)
            high = re.search(r"<=\s*([\d.]+)", requirement)
            return (low.group(1) if low else None), (high.group(1) if high else None)
    return None, None


# --- the checks -------------------------------------------------------------------------------------------------------


def check_gpus(config: dict[str, Any], machine: Machine) -> Check:
    if memory._flag(config, "use_cpu"):
        return Check("gpu", OK, "CPU config: no GPU needed")
    gpus = machine.gpus()
    if not gpus:
        return Check("gpu", BLOCK, "no CUDA GPU visible to torch",
                     "install the CUDA build of torch (pip install torch==<pin> from PyPI), check nvidia-smi and "
                     "CUDA_VISIBLE_DEVICES")
    first = gpus[0]
    names = ", ".join(sorted({gpu.name for gpu in gpus}))
    text = (f"{len(gpus)} x {names}, {first.total_gib:.0f} GiB each, bf16 {'yes' if first.bf16 else 'no'}, "
            f"driver {machine.driver() or '?'}, torch CUDA {machine.torch_cuda() or '?'}")
    wants_bf16 = memory._flag(config, "bf16") or str(config.get("dtype")) in ("bfloat16", "bf16")
    if wants_bf16 and not first.bf16:
        return Check("gpu", BLOCK, text + f" (compute capability {first.capability[0]}.{first.capability[1]})",
                     "this GPU has no bf16: set bf16: false, fp16: true, dtype: float16 and use_vllm: false")
    cuda, driver = machine.torch_cuda(), machine.driver()
    if cuda and driver:
        needed = MIN_DRIVER.get(_version_tuple(cuda)[0])
        if needed and _version_tuple(driver)[:2] < needed:
            return Check("gpu", BLOCK, text, f"torch's CUDA {cuda} needs NVIDIA driver >= {needed[0]}.{needed[1]:02d}: "
                                             "update the driver, or install a torch built for an older CUDA")
    processes = max(1, int(setting(config, "num_processes")))
    if processes > len(gpus):
        return Check("gpu", WARN, text + f"; the preset is sized for {processes} processes",
                     f"use {processes} GPUs, or pass --num_processes {len(gpus)} (fewer prompts per step)")
    return Check("gpu", OK, text)


def check_versions(config: dict[str, Any], machine: Machine, pyproject: Path,
                   run: launches.Launch) -> list[Check]:
    checks = []
    pins = pinned(pyproject) if pyproject.is_file() else {}
    missing = [name for name in pins if machine.version(name) is None]
    differ = [f"{name} {machine.version(name)} (pinned {version})" for name, version in pins.items()
              if machine.version(name) is not None and str(machine.version(name)).split("+")[0] != version]
    if missing:
        checks.append(Check("versions", BLOCK, f"not installed: {', '.join(missing)}", "pip install -e '.[dev]'"))
    elif differ:
        checks.append(Check("versions", WARN, "differs from the pins: " + "; ".join(differ),
                            "pip install -e '.[dev]' in a fresh venv (the pins were tested together)"))
    else:
        checks.append(Check("versions", OK, f"{len(pins)} pinned packages installed at their pins"))
    needs = {}
    if memory._flag(config, "use_vllm") and not memory._flag(config, "use_cpu"):
        needs["vllm"] = "use_vllm: true"
    if "8bit" in str(setting(config, "optim")) or memory._flag(config, "load_in_4bit") \
            or memory._flag(config, "load_in_8bit"):
        needs["bitsandbytes"] = "8-bit optimizer / quantized weights"
    if run.kind == "deepspeed":
        needs["deepspeed"] = "the DeepSpeed launch"
    for package, why in needs.items():
        if machine.version(package) is None:
            checks.append(Check(package, BLOCK, f"not installed ({why})", "pip install -e '.[gpu]'"))
    vllm = machine.version("vllm")
    if "vllm" in needs and vllm:
        low, high = trl_vllm_range(machine.requires("trl"))
        inside = (low is None or _version_tuple(vllm) >= _version_tuple(low)) and \
                 (high is None or _version_tuple(vllm) <= _version_tuple(high))
        if not inside:
            checks.append(Check("vllm", BLOCK, f"vllm {vllm} is outside TRL's supported range {low}..{high}",
                                f"pip install 'vllm>={low},<={high}' matching the pinned torch"))
        else:
            checks.append(Check("vllm", OK, f"vllm {vllm} within TRL's supported range {low}..{high}"))
    return checks


def check_memory(config: dict[str, Any], machine: Machine, run: launches.Launch) -> list[Check]:
    if memory._flag(config, "use_cpu"):
        return [Check("memory", OK, "CPU config: no GPU memory check")]
    gpus = machine.gpus()
    if not gpus:
        return [Check("memory", WARN, "no GPU: cannot compare the estimate with free memory", "see the gpu line")]
    gpu = gpus[0]
    try:
        est = memory.estimate(config, gpu.total_gib, None, run)
    except EstimateError as error:
        return [Check("memory", WARN, str(error), "pass a model config.json to python -m <package>.preflight.memory")]
    checks = []
    used = gpu.total_gib - gpu.free_gib
    text = (f"estimated peak {est.total:.1f} GiB per GPU ({est.sharding}); {gpu.free_gib:.1f} of "
            f"{gpu.total_gib:.0f} GiB free")
    if est.total > gpu.free_gib:
        fix = "; ".join(memory.advice(est, config, None, run)[1:3]) or "a smaller preset"
        if used > 1.0:
            fix = f"{used:.1f} GiB is already in use by other processes (nvidia-smi); " + fix
        checks.append(Check("memory", BLOCK, text, fix))
    elif est.total > 0.9 * gpu.free_gib:
        checks.append(Check("memory", WARN, text + " (under 10% headroom; estimates are not measurements)",
                            "lower per_device_train_batch_size and raise gradient_accumulation_steps"))
    else:
        checks.append(Check("memory", OK, text))
    if memory._flag(config, "use_vllm") and str(setting(config, "vllm_mode")) == "colocate":
        arch = resolve_arch(str(setting(config, "model_name_or_path") or ""))
        fraction = float(setting(config, "vllm_gpu_memory_utilization"))
        tp = max(1, int(setting(config, "vllm_tensor_parallel_size")))
        budget = fraction * gpu.total_gib - vllm_weights_gib(arch, memory._flag(config, "load_in_4bit"), tp) \
            - VLLM_OVERHEAD_GIB
        need, tokens = vllm_one_request_gib(config)
        text = f"vLLM KV budget {budget:.2f} GiB ({fraction:g} x {gpu.total_gib:.0f} GiB - weights - ~1 GiB); one " \
               f"{tokens}-token request needs {need:.2f} GiB"
        if need > budget:
            seq = int(setting(config, "max_prompt_length")) + int(setting(config, "max_completion_length"))
            fix = (f"set vllm_max_model_length: {seq}" if not config.get("vllm_max_model_length")
                   else "raise vllm_gpu_memory_utilization")
            checks.append(Check("vllm-kv", BLOCK, text + ": vLLM cannot start", fix))
        else:
            checks.append(Check("vllm-kv", OK, text))
    return checks


def has_sandbox(package_dir: Path = PACKAGE_DIR) -> bool:
    return (package_dir / "sandbox.py").is_file() or (package_dir / "sandbox").is_dir()


def check_bubblewrap(config: dict[str, Any], machine: Machine, package_dir: Path = PACKAGE_DIR) -> Check | None:
    """Only for projects that run model-written code (a sandbox module and sandbox settings in the config)."""
    if not has_sandbox(package_dir) or "sandbox_isolation" not in config:
        return None
    isolation = str(config.get("sandbox_isolation"))
    path = machine.which("bwrap")
    severity = BLOCK if isolation == "required" else WARN
    fix = ("apt-get install bubblewrap (and allow unprivileged user namespaces: "
           "sysctl kernel.unprivileged_userns_clone=1)")
    if path is None:
        return Check("bubblewrap", severity, f"bwrap not found (sandbox_isolation: {isolation})", fix)
    works, why = machine.bwrap_runs(path)
    if not works:
        return Check("bubblewrap", severity, f"{path} cannot create a sandbox here: {why}", fix)
    return Check("bubblewrap", OK, f"{path} runs (sandbox_isolation: {isolation})")


def check_settings(path: str, machine: Machine) -> Check:
    """The config through train.py's own parser and checks: a doctor pass means train.py accepts every setting."""
    error = machine.settings_error(str(path))
    if error:
        return Check("config", BLOCK, error, "fix the setting it names (train.py refuses the config the same way)")
    return Check("config", OK, "every setting parses and passes train.py's checks")


def checkpoint_gib(config: dict[str, Any]) -> float:
    """One checkpoint on disk: trainable weights + optimizer state (+ the frozen base model for full fine-tunes)."""
    arch = resolve_arch(str(setting(config, "model_name_or_path") or ""))
    eight_bit = "8bit" in str(setting(config, "optim"))
    moments = 2 if eight_bit else 8
    if memory._flag(config, "use_peft"):
        from .estimator import _targets

        lora = arch.lora_params(int(setting(config, "lora_r")), _targets(config.get("lora_target_modules")))
        return lora * (4 + moments + 4) / GIB  # adapter + optimizer + a safety copy of the weights in the state
    weights = arch.params * (2 if str(config.get("dtype")) in ("bfloat16", "float16", "bf16") else 4)
    return (weights + arch.params * moments) / GIB


def check_disk(config: dict[str, Any], machine: Machine, root: Path = ROOT) -> Check:
    keep = int(setting(config, "save_total_limit") or 1)  # unset keeps every checkpoint: at least one
    try:
        each = checkpoint_gib(config)
    except EstimateError:
        return Check("disk", WARN, "unknown model: checkpoint size not estimated", "check free disk space by hand")
    output = Path(str(setting(config, "output_dir")))
    output = output if output.is_absolute() else root / output
    needed = each * (keep + 1)  # the kept checkpoints, the one being written, and the final save
    free = machine.disk_free_gib(output)
    text = (f"{free:.1f} GiB free at {output}; {keep} checkpoint(s) of ~{each:.2f} GiB + final model need "
            f"{needed:.1f} GiB")
    if free < needed:
        return Check("disk", BLOCK, text, "free disk space, lower save_total_limit, or set output_dir elsewhere")
    if free < 2 * needed:
        return Check("disk", WARN, text, "little room left for logs and evaluation outputs")
    return Check("disk", OK, text)


def check_tracker(config: dict[str, Any], machine: Machine) -> Check:
    report_to = setting(config, "report_to")
    trackers = [report_to] if isinstance(report_to, str) else list(report_to)
    trackers = [t for t in trackers if t not in ("none", "")]
    if not trackers:
        return Check("tracker", OK, "report_to: none")
    problems = []
    for tracker in trackers:
        package = {"wandb": "wandb", "trackio": "trackio", "tensorboard": "tensorboard"}.get(tracker, tracker)
        if machine.version(package) is None:
            problems.append((f"{tracker}: not installed", f"pip install {package}"))
            continue
        if tracker == "wandb":
            mode = machine.environ.get("WANDB_MODE", "")
            netrc = machine.home / ".netrc"
            logged_in = bool(machine.environ.get("WANDB_API_KEY")) or (
                netrc.is_file() and "api.wandb.ai" in netrc.read_text(encoding="utf-8", errors="replace"))
            if not logged_in and mode not in ("offline", "disabled"):
                problems.append(("wandb: not logged in", "wandb login (or WANDB_API_KEY=..., or WANDB_MODE=offline)"))
    if problems:
        return Check("tracker", BLOCK, "; ".join(p for p, _ in problems), "; ".join(f for _, f in problems))
    return Check("tracker", OK, f"report_to: {', '.join(trackers)} ready")


def run_checks(config: dict[str, Any], machine: Machine, root: Path = ROOT, package_dir: Path = PACKAGE_DIR,
               accelerate_config: str | None = None, num_machines: int | None = None,
               wait_for_nodes: float = 0.0) -> list[Check]:
    from .. import data
    from . import multinode

    try:
        run = launches.resolve(config, machine.environ, accelerate_config)
    except launches.LaunchError as error:
        return [Check("launch", BLOCK, str(error), "fix the --accelerate_config path")]
    checks = [check_gpus(config, machine)]
    checks += check_versions(config, machine, root / "pyproject.toml", run)
    checks += check_memory(config, machine, run)
    sandbox = check_bubblewrap(config, machine, package_dir)
    checks += [sandbox] if sandbox else []
    checks.append(check_model(config, machine, root))
    checks.append(check_dataset(config, machine, tuple(data.task.REQUIRED_COLUMNS), root))
    checks.append(check_disk(config, machine, root))
    checks.append(check_tracker(config, machine))
    accelerate = memory.load_config(accelerate_config) if accelerate_config else None
    checks += [Check(*found) for found in multinode.checks(config, machine, root, accelerate, num_machines,
                                                           wait_for_nodes)]
    return checks


def main(argv: list[str] | None = None, machine: Machine | None = None) -> int:
    parser = argparse.ArgumentParser(description="Pre-flight check before a GPU training run.", allow_abbrev=False)
    parser.add_argument("--config", default=None, help="a YAML config (default: the project's preset)")
    parser.add_argument("--accelerate_config", default=None, help="the accelerate config the launch will use")
    parser.add_argument("--num_machines", type=int, default=None,
                        help="nodes of a multi-node launch (default: the accelerate config's, else SLURM's)")
    parser.add_argument("--wait_for_nodes", type=float, default=0.0, metavar="SECONDS",
                        help="multi-node: wait this long for the other nodes' doctors (versions, shared output_dir)")
    args = parser.parse_args(with_underscores(parser, argv))
    path = args.config or default_config_path()
    if path is None:
        print("error: no --config given and no .cookiecutter.json to find the default preset", file=sys.stderr)
        return 2
    try:
        config = read_config(path)
    except EstimateError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    machine = machine or Machine()
    checks = [check_settings(str(path), machine)]
    checks += run_checks(config, machine, accelerate_config=args.accelerate_config, num_machines=args.num_machines,
                         wait_for_nodes=args.wait_for_nodes)
    return report(path, checks)


if __name__ == "__main__":
    sys.exit(main())
