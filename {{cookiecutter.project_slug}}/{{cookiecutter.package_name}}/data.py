"""Dataset loading: a hub dataset or a local JSONL/Parquet/CSV file, checked against the task's row contract,
turned into conversational prompts, filtered by prompt length and split into train/eval."""

from __future__ import annotations

from pathlib import Path

from . import task

LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


class DataError(ValueError):
    """Bad dataset input; its message is one line that says what to fix."""


def build_prompt(row: dict, system_prompt: str | None = None) -> list[dict[str, str]]:
    """The conversational prompt for one row: the format's system prompt, then the task's user message."""
    return [
        {"role": "system", "content": system_prompt or task.SYSTEM_PROMPT},
        {"role": "user", "content": task.user_message(row)},
    ]


def check_columns(column_names: list[str], source: str) -> None:
    missing = [c for c in task.REQUIRED_COLUMNS if c not in column_names]
    if missing:
        raise DataError(
            f"dataset {source!r} lacks column(s) {', '.join(missing)}; the {task.NAME} task needs "
            f"{', '.join(task.REQUIRED_COLUMNS)} (has: {', '.join(column_names) or 'none'})"
        )


def load_raw(name: str, config: str | None = None):
    """Load a DatasetDict from a local file (by extension) or from the hub, in the task's row contract."""
    from datasets import Dataset, DatasetDict, load_dataset

    if name.startswith("generate:"):  # a task's own deterministic generator, e.g. "generate:5000"
        count = name.split(":", 1)[1]
        if not hasattr(task, "generate_rows") or not count.isdigit():
            raise DataError(f"dataset {name!r}: only 'generate:N' with a task that has a generator is supported")
        return DatasetDict({"train": Dataset.from_list(task.generate_rows(int(count)))})
    if name.startswith("curriculum:"):  # the task's easy smoke curriculum, e.g. "curriculum:2000"
        count = name.split(":", 1)[1]
        if not hasattr(task, "generate_curriculum") or not count.isdigit():
            raise DataError(f"dataset {name!r}: only 'curriculum:N' with a task that has a curriculum is supported")
        return DatasetDict({"train": Dataset.from_list(task.generate_curriculum(int(count)))})
    path = Path(name)
    if path.suffix in LOCAL_FORMATS:
        if not path.is_file():
            raise DataError(f"dataset file {name!r} does not exist")
        dataset = load_dataset(LOCAL_FORMATS[path.suffix], data_files={"train": str(path)})
        check_columns(dataset["train"].column_names, name)
        return dataset.map(task.normalize)
    dataset = load_dataset(name, config)
    if not isinstance(dataset, DatasetDict):
        dataset = DatasetDict({"train": dataset})
    columns = next(iter(dataset.values())).column_names
    return dataset.map(task.from_hub_row, remove_columns=columns)


def priming_rows(name: str, train, limit: int = 512, seed: int = 0) -> list[dict]:
    """The rows format priming learns from: a curriculum's own priming part (disjoint from its GRPO rows), else the
    first ``limit`` training rows."""
    if name.startswith("curriculum:"):
        return task.generate_curriculum(limit, seed=seed, part="priming")
    return train.select(range(min(len(train), limit))).to_list()


def prompt_length(tokenizer, prompt: list[dict[str, str]], chat_template_kwargs: dict | None = None) -> int:
    kwargs = chat_template_kwargs or {}
    ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, **kwargs)
    if hasattr(ids, "keys"):  # a BatchEncoding
        ids = ids["input_ids"]
    return len(ids)


def load_splits(
    name: str,
    config: str | None,
    train_split: str,
    test_split: str,
    eval_fraction: float = 0.1,
    seed: int = 0,
):
    """Return (train, eval) datasets in the row contract: the dataset's own test split, else a seeded hold-out."""
    raw = load_raw(name, config)
    if train_split not in raw:
        raise DataError(f"dataset {name!r} has no split {train_split!r} (has: {', '.join(raw)})")
    train = raw[train_split]
    check_columns(train.column_names, name)
    if test_split in raw:
        return train, raw[test_split]
    if not 0 < eval_fraction < 1:
        raise DataError(f"eval_fraction must be in (0, 1), got {eval_fraction}")
    parts = train.train_test_split(test_size=max(1, round(len(train) * eval_fraction)), seed=seed)
    return parts["train"], parts["test"]


def add_prompts(
    splits: dict,
    tokenizer,
    max_prompt_length: int,
    system_prompt: str | None = None,
    chat_template_kwargs: dict | None = None,
    log=print,
) -> dict:
    """Add the conversational ``prompt`` column to each split and drop prompts over ``max_prompt_length`` tokens."""

    def add_prompt(row: dict) -> dict:
        prompt = build_prompt(row, system_prompt)
        return {"prompt": prompt, "prompt_tokens": prompt_length(tokenizer, prompt, chat_template_kwargs)}

    out = {}
    for split_name, split in splits.items():
        split = split.map(add_prompt)
        kept = split.filter(lambda n: n <= max_prompt_length, input_columns="prompt_tokens")
        dropped = len(split) - len(kept)
        log(f"{split_name}: {len(kept)} prompts kept, {dropped} dropped as longer than {max_prompt_length} tokens")
        if len(kept) == 0:
            raise DataError(f"every {split_name} prompt is longer than max_prompt_length={max_prompt_length} tokens")
        out[split_name] = kept.remove_columns("prompt_tokens")
    return out
