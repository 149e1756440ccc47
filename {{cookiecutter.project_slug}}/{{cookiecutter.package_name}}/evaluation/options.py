"""Evaluation settings: the config (parsed like train.py parses it), the model and adapter, the command line, the
eval rows."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from .. import DEFAULT_CONFIG, data, hub
from ..hub import looks_like_path
from ..settings import DEFAULTS, setting


class EvalError(ValueError):
    """Bad evaluation input; its message is one line that says what to fix."""


# ------------------------------------------------------------------------------------------------- settings


@dataclass
class Settings:
    """What one evaluation run uses: the config's values with the command line's overrides."""

    config: str
    model: str
    adapter: str | None
    num_samples: int = 1
    pass_k: list[int] = field(default_factory=list)
    max_rows: int | None = None
    batch_size: int = 8
    backend: str = "auto"
    cfg: dict = field(default_factory=dict)
    model_field: str = "--model"  # where the model was named, for errors: --model or the config's key

    def get(self, key: str):
        """The config's value of ``key``; unset or null: the defaults table's (settings.DEFAULTS), else None."""
        return setting(self.cfg, key) if key in DEFAULTS else self.cfg.get(key)


def read_config(path: str, overrides: list[str] | tuple[str, ...] = ()) -> dict:
    """The config's settings exactly as train.py sees them: the same TrlParser, dataclasses and defaults."""
    import torch
    import yaml

    from .. import config as project_config

    if not Path(path).is_file():
        raise EvalError(f"config file {path!r} does not exist")
    argv = ["--config", path, *overrides]
    if not torch.cuda.is_available():
        argv += ["--use_cpu", "true"]  # bf16 presets construct on a machine without a GPU (eval runs on CPU there)
    try:
        with warnings.catch_warnings():  # transformers' deprecation notes about TrainingArguments are not ours
            warnings.simplefilter("ignore")
            parsed = project_config.parse_args(argv)
    except project_config.ConfigError as error:  # already one line naming the file or the option
        raise EvalError(str(error)) from error
    except yaml.YAMLError as error:
        raise EvalError(f"config {path!r} is not valid YAML: {str(error).splitlines()[0]}") from error
    except (ValueError, TypeError) as error:
        raise EvalError(f"config {path!r}: {str(error).strip().splitlines()[0]}") from error
    script_args, training_args, model_args, task_args = parsed
    return {**training_args.to_dict(), **vars(model_args), **vars(task_args), **vars(script_args)}


def default_config() -> str | None:
    """The GPU preset this project was generated for, if it exists."""
    return DEFAULT_CONFIG if Path(DEFAULT_CONFIG).is_file() else None


def check_model_path(name: str, what: str = "model") -> None:
    """Refuse a local path that does not exist before anything asks the hub for it."""
    if os.path.exists(os.path.expanduser(name)):
        return
    if looks_like_path(name):
        raise EvalError(f"{what} path {name!r} does not exist")
    if what == "adapter":
        raise EvalError(f"adapter {name!r} is not a directory (a peft LoRA dir with adapter_config.json)")


PRIMED = "format-primed"  # the run's format-primed base model, <output_dir>/format-primed (train.py)


def recorded_base(adapter_dir: Path, base: str) -> str:
    """The base model named in an adapter's adapter_config.json. A run's format-primed base is recorded by the path
    it had while training; when that path is gone (the run was moved, or trained from another directory), the
    ``format-primed`` folder of the run that holds the adapter (or the checkpoint) is used."""
    if os.path.exists(os.path.expanduser(base)):
        return base
    if Path(base).name == PRIMED:
        for run in (adapter_dir, adapter_dir.parent):
            if (run / PRIMED / "config.json").is_file():
                return str(run / PRIMED)
    if looks_like_path(base):
        raise EvalError(f"the base model {base!r} named in {adapter_dir / 'adapter_config.json'} does not exist")
    return base


def resolve_model(model: str, adapter: str | None, field: str = "--model") -> tuple[str, str | None]:
    """(base model, adapter dir or None); a model dir that holds only an adapter is split into both. ``field`` is
    where the model was named (``--model``, or the config file's ``model_name_or_path``), for the errors."""
    check_model_path(model)
    if adapter is not None:
        check_model_path(adapter, "adapter")
        if not (Path(adapter) / "adapter_config.json").is_file():
            raise EvalError(f"adapter {adapter!r} has no adapter_config.json (not a peft LoRA dir)")
        hub.check_available(model, "model", field)
        return model, adapter
    path = Path(model)
    if (path / "adapter_config.json").is_file() and not (path / "config.json").is_file():
        try:
            base = json.loads((path / "adapter_config.json").read_text(encoding="utf-8"))["base_model_name_or_path"]
        except (OSError, ValueError, KeyError) as error:
            raise EvalError(f"{path / 'adapter_config.json'} names no base_model_name_or_path") from error
        if not base:
            raise EvalError(f"{path / 'adapter_config.json'} names no base model; pass it as --model with --adapter")
        base = recorded_base(path, base)
        hub.check_available(base, "model", f"base_model_name_or_path of {path / 'adapter_config.json'}")
        return base, model
    if path.is_dir() and not (path / "config.json").is_file():
        raise EvalError(f"model dir {model!r} has neither config.json nor adapter_config.json (train it first?)")
    hub.check_available(model, "model", field)
    return model, None


# ----------------------------------------------------------------------------------------------------- data


def split_rows(settings: Settings, tokenizer, which: str = "eval", max_rows: int | None = None) -> list[dict]:
    """The ``train`` or ``eval`` split exactly as train.py builds it (the config's dataset, seed and hold-out), in
    the row contract, each row with its conversational ``prompt``; at most ``max_rows`` rows."""
    train, held_out = data.load_splits(
        settings.get("dataset_name") or "",
        settings.get("dataset_config"),
        settings.get("dataset_train_split"),
        settings.get("dataset_test_split"),
        eval_fraction=float(settings.get("eval_fraction")),
        seed=int(settings.get("seed")),
    )
    split = train if which == "train" else held_out
    if max_rows is not None:
        split = split.select(range(min(max_rows, len(split))))
    splits = data.add_prompts(
        {which: split},
        tokenizer,
        max_prompt_length=int(settings.get("max_prompt_length")),
        system_prompt=settings.get("system_prompt"),
        chat_template_kwargs=chat_template_kwargs(settings),
        log=lambda line: print(line, file=sys.stderr),
    )
    return splits[which].to_list()


def eval_rows(settings: Settings, tokenizer) -> list[dict]:
    """The eval split in the row contract, each row with its conversational ``prompt``, at most ``max_rows``."""
    return split_rows(settings, tokenizer, "eval", settings.max_rows)


def chat_template_kwargs(settings: Settings) -> dict:
    value = settings.get("chat_template_kwargs") or {}
    return json.loads(value) if isinstance(value, str) else dict(value)


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints usage + message; one line is enough
        self.exit(2, f"error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        allow_abbrev=False, description="Evaluate a model on the eval split with the training rewards."
    )
    parser.add_argument("--config", help="the training config (default: the project's GPU preset)")
    parser.add_argument("--model", help="model dir, hub id or LoRA adapter dir (default: the config's model)")
    parser.add_argument("--adapter", help="a LoRA adapter dir (peft) to apply to --model")
    parser.add_argument(
        "--num_samples", type=int,
        help="completions per prompt (1 = greedy; default: the config's eval_num_samples, else 1)",
    )
    parser.add_argument("--pass_k", type=int, nargs="+", help="k values for pass@k (default: 1 and num_samples)")
    parser.add_argument("--max_rows", type=int, help="evaluate only the first N eval prompts")
    parser.add_argument("--batch_size", type=int, default=8, help="prompts per generate call (transformers)")
    parser.add_argument("--backend", choices=["auto", "transformers", "vllm"], default="auto")
    parser.add_argument("--temperature", type=float, help="override the config's sampling temperature")
    parser.add_argument("--max_completion_length", type=int, help="override the config's completion limit")
    parser.add_argument("--output", help="report directory (default: eval_reports/<model name>)")
    parser.add_argument(
        "--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print a before/after table of two report.json"
    )
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    config = args.config or default_config()
    if config is None:
        raise EvalError("no config: pass --config configs/<preset>.yaml")
    overrides = []
    if args.temperature is not None:
        overrides += ["--temperature", str(args.temperature)]
    if args.max_completion_length is not None:
        overrides += ["--max_completion_length", str(args.max_completion_length)]
    cfg = read_config(config, overrides)
    model = args.model or cfg.get("model_name_or_path")
    if not model:
        raise EvalError(f"no model: pass --model (config {config!r} has no model_name_or_path)")
    model = os.path.expanduser(model)
    adapter = os.path.expanduser(args.adapter) if args.adapter else None
    if args.num_samples is None:  # a config whose model decodes degenerately when greedy samples by default
        args.num_samples = int(setting(cfg, "eval_num_samples"))
    if args.num_samples < 1:
        raise EvalError(f"--num_samples must be at least 1, got {args.num_samples}")
    if args.max_rows is not None and args.max_rows < 1:
        raise EvalError(f"--max_rows must be at least 1, got {args.max_rows}")
    if args.batch_size < 1:
        raise EvalError(f"--batch_size must be at least 1, got {args.batch_size}")
    ks = sorted(set(args.pass_k or [1, args.num_samples]))
    bad = [k for k in ks if not 1 <= k <= args.num_samples]
    if bad:
        raise EvalError(f"--pass_k {bad}: each k must be in [1, num_samples={args.num_samples}]")
    return Settings(
        config=config, model=model, adapter=adapter, num_samples=args.num_samples, pass_k=ks,
        max_rows=args.max_rows, batch_size=args.batch_size, backend=args.backend, cfg=cfg,
        model_field=model_field(args.model, config),
    )


def model_field(typed: str | None, config: str) -> str:
    """Where the model was named, as an error should say it: the command line's --model, else the config's key."""
    return "--model" if typed else f"model_name_or_path in {config}"
