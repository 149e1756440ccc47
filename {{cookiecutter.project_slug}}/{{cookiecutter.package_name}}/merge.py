"""Merge a run's LoRA adapter into its base model: one standalone model that loads without peft, for ``chat.py``,
``vllm serve`` and the Hub.

    python merge.py outputs/24gb                   # -> outputs/24gb/merged
    python merge.py outputs/24gb/checkpoint-200    # -> outputs/24gb/merged-checkpoint-200
    python merge.py outputs/24gb --push            # and upload it to the config's hub_model_id

The base is the model the adapter was trained on, as its ``adapter_config.json`` records it: the config's
``model_name_or_path`` (format priming of a LoRA run trains the same adapter, so the base stays that model; runs
of older versions recorded the run's ``format-primed`` model, which is still found). A full fine-tune
(``use_peft: false``) has nothing to merge: its weights are saved as they are, so every later command can use the
same ``merged`` folder. The folder appears whole or not at all (written under a temporary name, then renamed).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from . import DEFAULT_CONFIG, task
from .evaluation.options import EvalError, OneLineParser, read_config, resolve_model

CHECKPOINT = re.compile(r"^checkpoint-\d+$")
DTYPES = ("auto", "float32", "bfloat16", "float16")


class MergeError(ValueError):
    """Bad merge or push input; its message is one line that says what to fix."""


def default_out(model_dir: Path) -> Path:
    """``<run>/merged`` for a run's output dir, ``<run>/merged-checkpoint-N`` for one of its checkpoints."""
    if CHECKPOINT.match(model_dir.name):
        return model_dir.parent / f"merged-{model_dir.name}"
    return model_dir / "merged"


def refuse_existing(out: Path, force: bool) -> None:
    if out.exists() and not force:
        raise MergeError(f"{out} already exists; pass --force to replace it, or --out DIR")


def write_atomically(out: Path, write, force: bool = False) -> None:
    """Call ``write(tmp)`` on a temporary sibling of ``out``, then rename it to ``out`` (replacing it with
    ``force``); a merge killed half-way leaves only a hidden temporary folder, which the next merge removes."""
    refuse_existing(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    for stale in out.parent.glob(f".{out.name}.tmp*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = out.with_name(f".{out.name}.tmp")
    write(tmp)
    if out.exists():
        old = out.with_name(f".{out.name}.tmp-old")
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out)


def model_card(base: str, adapter: str | None, system_prompt: str | None = None) -> str:
    """A short README for the merged folder: where it came from and the prompt format it was trained on."""
    origin = f"the LoRA adapter `{adapter}` merged into `{base}`" if adapter else f"the full fine-tune `{base}`"
    return (
        f"---\nbase_model: {json.dumps(base) if not Path(base).exists() else 'null'}\nlibrary_name: transformers\n"
        f"tags: [grpo, trl]\n---\n\n# GRPO-trained model ({task.NAME} task)\n\nStandalone weights from {origin}.\n\n"
        "Prompt it as it was trained: a system message with this text, then the task in the user message:\n\n"
        f"```text\n{system_prompt or task.SYSTEM_PROMPT}\n```\n"
    )


def merge(model: str, out: Path, dtype: str = "auto", trust_remote_code: bool = False, force: bool = False,
          system_prompt: str | None = None, log=print) -> Path:
    """Merge the adapter in ``model`` (a run's output dir or checkpoint) into its base and save to ``out``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base, adapter = resolve_model(model, None)
    refuse_existing(out, force)  # before any weight is loaded
    if adapter is None and not (Path(model) / "config.json").is_file():
        raise MergeError(f"{model} is neither a run's output dir nor a checkpoint (no adapter_config.json or "
                         "config.json); pass outputs/<run> or outputs/<run>/checkpoint-N")
    torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
    try:
        weights = AutoModelForCausalLM.from_pretrained(base, dtype=torch_dtype, trust_remote_code=trust_remote_code)
        tokenizer_source = adapter if adapter and (Path(adapter) / "tokenizer_config.json").is_file() else base
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_source, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as error:
        raise MergeError(f"cannot load the base model {base!r}: {str(error).strip().splitlines()[0]}") from error
    if adapter is None:
        log(f"{model} is a full fine-tune (use_peft: false): nothing to merge, saving its weights as they are")
    else:
        from peft import PeftModel

        log(f"merging the LoRA adapter {adapter} into {base}")
        weights = PeftModel.from_pretrained(weights, adapter).merge_and_unload()

    def write(tmp: Path) -> None:
        weights.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)  # with the chat template the model was trained with
        (tmp / "README.md").write_text(model_card(base, adapter, system_prompt), encoding="utf-8")

    write_atomically(out, write, force=force)
    log(f"merged model saved to {out} (loads with AutoModelForCausalLM.from_pretrained, no peft needed)")
    return out


def push(folder: Path, repo_id: str, private: bool | None = None, token: str | None = None) -> str:
    """Upload a saved model folder to the Hub repository ``repo_id`` (created if missing); return its URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        api.upload_folder(repo_id=repo_id, folder_path=str(folder), repo_type="model",
                          commit_message=f"Upload the merged GRPO model ({task.NAME} task)")
    except (OSError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise MergeError(
            f"push to hub_model_id {repo_id!r} failed: {reason}; check the id (your-name/model-name), log in "
            "(hf auth login, or HF_TOKEN=...) and unset HF_HUB_OFFLINE"
        ) from error
    return f"https://huggingface.co/{repo_id}"


def build_parser() -> OneLineParser:
    parser = OneLineParser(description="Merge a run's LoRA adapter into a standalone model.")
    parser.add_argument("model", nargs="?", help="a run's output dir or one of its checkpoints "
                                                 "(default: the config's output_dir)")
    parser.add_argument("--config", help=f"the run's config: output_dir, hub_model_id (default: {DEFAULT_CONFIG})")
    parser.add_argument("--out", help="where to save (default: <run>/merged, <run>/merged-checkpoint-N)")
    parser.add_argument("--dtype", choices=DTYPES, default="auto", help="weights dtype (default: as stored)")
    parser.add_argument("--force", action="store_true", help="replace an existing merged model")
    parser.add_argument("--push", action="store_true", help="upload the merged model to hub_model_id")
    parser.add_argument("--hub_model_id", help="the Hub repository to push to (default: the config's hub_model_id)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = {}
        config = args.config or DEFAULT_CONFIG
        if args.config or not args.model or (args.push and not args.hub_model_id):
            cfg = read_config(config)
        model = args.model or cfg["output_dir"]
        out = Path(args.out) if args.out else default_out(Path(model))
        repo_id = args.hub_model_id or cfg.get("hub_model_id")
        if args.push and not repo_id:
            raise MergeError(f"--push: set hub_model_id in {config} (your-name/model-name) or pass --hub_model_id")
        merge(model, out, args.dtype, bool(cfg.get("trust_remote_code")), args.force, cfg.get("system_prompt"))
        if args.push:
            url = push(out, repo_id, cfg.get("hub_private_repo"), cfg.get("hub_token"))
            print(f"pushed {out} to {url}")
    except (MergeError, EvalError) as error:
        print(f"error: {str(error).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    return 0
