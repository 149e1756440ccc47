"""Dataset loading: a hub dataset or a local JSONL/Parquet/CSV file, checked against the task's row contract,
turned into conversational prompts, filtered by prompt length and split into train/eval."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from . import contract, task

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


def check_contract(dataset, source: str) -> None:
    """Every row holds what the task's row contract (``task.COLUMNS``) says, or one DataError line naming the first
    bad row; checked before the rows are normalised, so no row reaches a reward it would silently score 0."""
    names = [name for name in task.COLUMNS if name in dataset.column_names]
    problem = contract.check_rows(_rows(dataset.select_columns(names), names), task.COLUMNS, source)
    if problem:
        raise DataError(problem)


def _rows(dataset, names: list[str]):
    for batch in dataset.iter(batch_size=1024):
        for values in zip(*(batch[name] for name in names), strict=True):
            yield task.normalize(dict(zip(names, values, strict=True)))


def read_jsonl_lines(path: Path) -> list[dict]:
    """The rows of a JSONL file read line by line, or a DataError naming the first line that is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise DataError(f"dataset file {str(path)!r} line {line} is not UTF-8 text: is it a JSONL file?") from error
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            raise DataError(f"dataset file {str(path)!r} line {number} is not valid JSON ({error}); fix or remove "
                            "that line (one JSON object per line)") from error
        if not isinstance(row, dict):
            raise DataError(f"dataset file {str(path)!r} line {number} is a JSON {type(row).__name__}, not an "
                            "object with the task's columns")
        rows.append(row)
    return rows


def jsonl_problem(path: Path) -> str | None:
    """The row contract checked on a JSON-lines file's rows as written (datasets turns a column of mixed types into
    decoded JSON, which would blame the wrong rows); None for other formats or when every row is fine."""
    if path.suffix == ".jsonl" or (path.suffix == ".json" and not path.read_bytes().lstrip().startswith(b"[")):
        rows = read_jsonl_lines(path)
        return contract.check_rows((task.normalize(row) for row in rows), task.COLUMNS, str(path))
    return None


def unreadable(path: Path, error: BaseException) -> DataError:
    """Why a local file did not load, as precisely as the file allows: a JSONL file's first bad line or row."""
    problem = jsonl_problem(path)  # raises for the first line that is not JSON
    if problem:
        return DataError(problem)
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    cause = error.__cause__ or error.__context__
    if cause is not None and str(cause).strip():
        text = str(cause).strip().splitlines()[0]
    return DataError(f"dataset file {str(path)!r} cannot be read as {LOCAL_FORMATS[path.suffix]} ({text}); check "
                     "that it is a valid file of that format with the task's columns")


def load_local(path: Path):
    """A local JSONL/JSON/Parquet/CSV file as a DatasetDict with one ``train`` split, or one DataError line."""
    from datasets import load_dataset

    if not path.is_file():
        raise DataError(f"dataset file {str(path)!r} does not exist; fix dataset_name")
    if path.stat().st_size == 0 or (path.suffix in (".jsonl", ".csv") and not path.read_bytes().strip()):
        raise DataError(f"dataset file {str(path)!r} is empty; it needs rows with "
                        f"{', '.join(task.REQUIRED_COLUMNS)}")
    progress = datasets_progress(False)
    try:
        return load_dataset(LOCAL_FORMATS[path.suffix], data_files={"train": str(path)})
    except Exception as error:  # noqa: BLE001 - pyarrow, json and datasets each raise their own; say which line
        raise unreadable(path, error) from error
    finally:
        datasets_progress(progress)


def datasets_progress(enabled: bool) -> bool:
    """Turn datasets' progress bars on or off; returns whether they were on (local files load in a blink)."""
    import datasets

    was = not datasets.are_progress_bars_disabled()
    (datasets.enable_progress_bars if enabled else datasets.disable_progress_bars)()
    return was


def load_raw(name: str, config: str | None = None):
    """Load a DatasetDict from a local file (by extension) or from the hub, in the task's row contract."""
    from datasets import Dataset, DatasetDict, load_dataset

    if name.startswith("generate:"):  # a task's own deterministic generator, e.g. "generate:5000"
        count = name.split(":", 1)[1]
        if not hasattr(task, "generate_rows") or not count.isdigit():
            raise DataError(f"dataset {name!r}: only 'generate:N' with a task that has a generator is supported")
        return DatasetDict({"train": Dataset.from_list(task.generate_rows(int(count)))})
    if name.startswith("curriculum:"):  # the task's smoke curriculum, e.g. "curriculum:2000": train and test parts
        count = name.split(":", 1)[1]
        if not hasattr(task, "generate_curriculum") or not count.isdigit():
            raise DataError(f"dataset {name!r}: only 'curriculum:N' with a task that has a curriculum is supported")
        train = task.generate_curriculum(int(count))  # GRPO rows; and a held-out eval split, a tenth of their size
        test = task.generate_curriculum(max(1, int(count) // 10), part="test")
        return DatasetDict({"train": Dataset.from_list(train), "test": Dataset.from_list(test)})
    path = Path(name)
    if path.suffix in LOCAL_FORMATS:
        dataset = load_local(path)
        check_columns(dataset["train"].column_names, name)
        try:
            check_contract(dataset["train"], name)
        except DataError as error:
            raise DataError(jsonl_problem(path) or str(error)) from None
        progress = datasets_progress(False)
        try:
            return dataset.map(task.normalize)
        finally:
            datasets_progress(progress)
    dataset = load_dataset(name, config)
    if not isinstance(dataset, DatasetDict):
        dataset = DatasetDict({"train": dataset})
    columns = next(iter(dataset.values())).column_names
    dataset = dataset.map(task.from_hub_row, remove_columns=columns)
    for split in dataset.values():
        check_contract(split, name)
    return dataset


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
    if len(train) < 2:
        raise DataError(f"dataset {name!r} has {len(train)} row(s); training needs at least 2 (one is held out for "
                        "evaluation by eval_fraction), and a useful run hundreds: add rows")
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

    prompted = {}
    progress = datasets_progress(False)  # this function logs its own line per split
    try:
        for split_name, split in splits.items():
            # a fingerprint of our own: datasets cannot hash a closure over the tokenizer, and says so on stderr
            split = split.map(add_prompt, new_fingerprint=uuid.uuid4().hex)
            kept = split.filter(lambda n: n <= max_prompt_length, input_columns="prompt_tokens",
                                new_fingerprint=uuid.uuid4().hex)
            prompted[split_name] = (split, kept)
    finally:
        datasets_progress(progress)
    out = {}
    for split_name, (split, kept) in prompted.items():
        dropped = len(split) - len(kept)
        log(f"{split_name}: {len(kept)} prompts kept, {dropped} dropped as longer than {max_prompt_length} tokens")
        if len(kept) == 0:
            raise DataError(f"every {split_name} prompt is longer than max_prompt_length={max_prompt_length} tokens")
        out[split_name] = kept.remove_columns("prompt_tokens")
    return out
