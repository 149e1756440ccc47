"""Online difficulty pool: set aside the prompts whose groups keep scoring all the same, revisit them rarely.

A GRPO group whose completions all get the same reward has zero advantage: its generation is paid for and teaches
nothing (TRL logs the share of such groups as ``frac_reward_zero_std``). With ``difficulty_pool: true`` every
training group is watched through its ``correctness`` scores: a prompt whose completions all got the same
correctness (all right, all wrong, or for partial-credit rewards the same fraction) on ``pool_retire_after``
consecutive visits, with the same value each time, is *retired*. The sampler then skips retired prompts and draws
each again only with probability ``pool_revisit_prob`` when its turn comes; a revisited prompt whose group is mixed
again returns to the active pool. If fewer active prompts than a batch remain in a whole pass, retired ones fill
the batch, so training never stalls. Without a ``correctness`` reward the weighted total reward is watched.

A pool entry is a distinct prompt, not a dataset row: rows whose ``prompt`` (the text, or the chat messages) is the
same share one entry, keyed by a SHA-256 of its canonical JSON, so a prompt repeated over many rows builds its
streak from all of their visits. The ``pool_id`` column holds each row's prompt id (0..K-1 for K distinct prompts,
in order of first appearance). The sampler draws prompts uniformly, each once per pass over the K prompts in a
seeded shuffle (not in proportion to how many rows repeat them), hands the trainer one row of each drawn prompt
(a prompt's rows take turns, in a seeded shuffled order), and never puts one prompt twice in a generation batch
unless the split has fewer distinct prompts than a batch holds. An epoch keeps the length of TRL's
``RepeatSampler`` over the rows, so the trainer's step accounting is unchanged.

Pieces: ``prompt_keys`` (the row -> prompt id mapping), ``DifficultyPool`` (the per-prompt state and decisions,
pure Python), ``PoolSampler`` (TRL's ``RepeatSampler`` layout over rows of the admitted prompts),
``DifficultyPoolTrainer`` (a ``GRPOTrainer`` that feeds gathered group outcomes to the pool and logs
``pool/active``, ``pool/retired``, ``pool/revived`` and ``pool/skipped`` with the training metrics), and
``PoolCheckpoint`` (writes ``difficulty_pool.json`` into every checkpoint; ``train(resume_from_checkpoint=...)``
reloads it).

Several processes: every rank computes the same prompt ids from the same split (a content hash, not Python's
per-process salted ``hash``), gathers the prompt ids and the rewards of the whole generation batch (TRL gathers
the rewards anyway), so each rank applies the same observations in the same order and its seeded sampler makes
the same decisions; at each checkpoint the ranks compare a digest of their pool state (which includes a digest of
the prompt mapping) and stop if they differ. After a resume the pool state (streaks, retired prompts, counters,
revisit RNG) is exactly the saved one, provided the split has the same distinct prompts; the prompt order that
follows is a fresh seeded draw from it, not a replay of the interrupted run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import sys

from torch.utils.data import Sampler
from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer

from ..rules import PoolSettings, pool_settings

ID_COLUMN = "pool_id"
STATE_FILE = "difficulty_pool.json"


def trainer_class(script_args, seed: int = 0) -> tuple[type[GRPOTrainer], dict]:
    """(trainer class, extra constructor kwargs): TRL's GRPOTrainer when the pool is off."""
    settings = pool_settings(script_args, seed)
    if settings is None:
        return GRPOTrainer, {}
    return DifficultyPoolTrainer, {"pool_settings": settings}


# ------------------------------------------------------------------------------------------------- prompt ids


def prompt_key(prompt) -> str:
    """A prompt's content key: SHA-256 of its canonical JSON (a string, or chat messages as a list of dicts).
    The same on every process and every run, unlike Python's ``hash``."""
    text = json.dumps(prompt, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_keys(prompts) -> tuple[list[int], str]:
    """(each row's prompt id, a digest of the mapping) for an iterable of prompts: rows with the same prompt share
    one id; ids are dense (0..K-1) in order of first appearance. The digest is a SHA-256 over the distinct keys in
    id order, so two splits with the same distinct prompts in the same first-seen order get the same digest."""
    ids: dict[str, int] = {}
    row_ids = [ids.setdefault(prompt_key(prompt), len(ids)) for prompt in prompts]
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()
    return row_ids, digest


# ---------------------------------------------------------------------------------------------------- the pool


class DifficultyPool:
    """Per-prompt streaks of identical all-same groups, the retired set and the revisit draws. Entries are prompt
    ids (0..size-1); ``prompts_digest`` names the prompt mapping they refer to (see ``prompt_keys``)."""

    def __init__(self, size: int, settings: PoolSettings, prompts_digest: str | None = None):
        self.size = size
        self.settings = settings
        self.prompts_digest = prompts_digest
        self.streak = [0] * size  # consecutive visits whose group was all-same with the same value
        self.last: list[float | None] = [None] * size  # that value
        self.retired = [False] * size
        self.visits = [0] * size
        self.revived = 0  # retired prompts that came back after a mixed group
        self.skipped = 0  # times a retired prompt's turn was passed over
        self.rng = random.Random(settings.seed)

    # decisions ---------------------------------------------------------------------------------------------
    def admits(self, index: int) -> bool:
        """Whether the sampler takes this prompt now: always when active, else with probability revisit_prob."""
        if not self.retired[index]:
            return True
        if self.rng.random() < self.settings.revisit_prob:
            return True
        self.skipped += 1
        return False

    def observe_group(self, index: int, scores: list[float]) -> None:
        """One visit of a prompt: its group's scores (NaN or None = unscored, counted as 0)."""
        values = [0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in scores]
        self.visits[index] += 1
        uniform = bool(values) and max(values) - min(values) < 1e-6
        if uniform and self.last[index] is not None and abs(values[0] - self.last[index]) < 1e-6:
            self.streak[index] += 1
        elif uniform:
            self.streak[index] = 1
        else:
            self.streak[index] = 0
        self.last[index] = values[0] if uniform else None
        if self.streak[index] >= self.settings.retire_after:
            self.retired[index] = True
        elif self.retired[index]:
            self.retired[index] = False
            self.revived += 1

    def observe(self, ids: list[int], scores: list[float], group_size: int) -> None:
        """A generation batch, prompt-major: ``ids`` and ``scores`` hold one entry per completion."""
        if len(ids) != len(scores) or len(ids) % group_size:
            raise ValueError(f"{len(ids)} ids and {len(scores)} scores do not make groups of {group_size}")
        for start in range(0, len(ids), group_size):
            self.observe_group(int(ids[start]), list(scores[start : start + group_size]))

    def counts(self) -> dict[str, int]:
        retired = sum(self.retired)
        return {"active": self.size - retired, "retired": retired, "revived": self.revived, "skipped": self.skipped}

    # state -------------------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        version, internal, gauss = self.rng.getstate()
        return {
            "size": self.size,
            "prompts_digest": self.prompts_digest,
            "retire_after": self.settings.retire_after,
            "revisit_prob": self.settings.revisit_prob,
            "streak": self.streak,
            "last": self.last,
            "retired": [i for i, r in enumerate(self.retired) if r],
            "visits": self.visits,
            "revived": self.revived,
            "skipped": self.skipped,
            "rng": [version, list(internal), gauss],
        }

    def load_state_dict(self, state: dict) -> None:
        if state.get("size") != self.size:
            raise ValueError(f"the saved pool is for {state.get('size')} distinct prompts, the training split has "
                             f"{self.size}")
        saved_digest = state.get("prompts_digest")
        if saved_digest is not None and self.prompts_digest is not None and saved_digest != self.prompts_digest:
            raise ValueError("the saved pool is for other prompts than the training split's (prompts_digest differs)")
        self.streak = [int(v) for v in state["streak"]]
        self.last = [None if v is None else float(v) for v in state["last"]]
        self.retired = [False] * self.size
        for index in state["retired"]:
            self.retired[int(index)] = True
        self.visits = [int(v) for v in state["visits"]]
        self.revived, self.skipped = int(state["revived"]), int(state["skipped"])
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.state_dict(), sort_keys=True).encode()).hexdigest()


# ------------------------------------------------------------------------------------------------- the sampler


class PoolSampler(Sampler):
    """TRL's RepeatSampler layout (each row ``mini_repeat_count`` times in a row, each chunk of ``batch_size`` rows
    ``repeat_count`` times) over a continuing seeded shuffle of the prompts the pool admits, one row per admitted
    prompt. ``row_ids[row]`` is the row's prompt id (None: one row per prompt, row i = prompt i). Prompts are drawn
    uniformly, each once per pass over the pool; a prompt's rows take turns in a seeded shuffled order. A chunk holds
    ``batch_size`` distinct prompts (prompts repeat only when the pool has fewer). An epoch has as many chunks as
    RepeatSampler's over the rows, so the trainer's step accounting is unchanged."""

    def __init__(self, pool: DifficultyPool, mini_repeat_count: int, batch_size: int, repeat_count: int,
                 shuffle: bool = True, seed: int = 0, row_ids: list[int] | None = None):
        self.pool = pool
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count
        self.shuffle = shuffle
        self.order = random.Random(seed)
        self.stream: list[int] = []
        row_ids = list(range(pool.size)) if row_ids is None else [int(i) for i in row_ids]
        self.num_rows = len(row_ids)
        self.rows: list[list[int]] = [[] for _ in range(pool.size)]  # each prompt's rows
        for row, prompt in enumerate(row_ids):
            if not 0 <= prompt < pool.size:
                raise ValueError(f"row {row} has prompt id {prompt}, outside the pool of {pool.size} prompts")
            self.rows[prompt].append(row)
        if not all(self.rows):
            raise ValueError("every prompt id of the pool needs at least one row")
        self.turns: list[list[int]] = [[] for _ in range(pool.size)]  # each prompt's rows left in this round

    def __len__(self) -> int:
        return (self.num_rows // self.batch_size) * self.batch_size * self.mini_repeat_count * self.repeat_count

    def _candidate(self) -> int:
        if not self.stream:
            indexes = list(range(self.pool.size))
            if self.shuffle:
                self.order.shuffle(indexes)
            self.stream = indexes[::-1]
        return self.stream.pop()

    def row(self, prompt: int) -> int:
        """The next row of a prompt: its rows in turn, reshuffled each round."""
        if not self.turns[prompt]:
            rows = list(self.rows[prompt])
            if self.shuffle and len(rows) > 1:
                self.order.shuffle(rows)
            self.turns[prompt] = rows[::-1]
        return self.turns[prompt].pop()

    def chunk(self) -> list[int]:
        """The next ``batch_size`` distinct prompts the pool admits (retired ones fill in if a pass is not enough)."""
        chunk: list[int] = []
        passed_over: list[int] = []
        for _ in range(self.pool.size):
            index = self._candidate()
            if index in chunk:
                continue
            if self.pool.admits(index):
                chunk.append(index)
                if len(chunk) == self.batch_size:
                    return chunk
            else:
                passed_over.append(index)
        for index in dict.fromkeys(passed_over):  # a whole pass admitted too few: take retired prompts after all
            if index not in chunk:
                chunk.append(index)
                if len(chunk) == self.batch_size:
                    return chunk
        for index in range(self.pool.size):  # reachable when the stream restarted mid-chunk, or the pool is small
            if index not in chunk:
                chunk.append(index)
                if len(chunk) == self.batch_size:
                    return chunk
        distinct = len(chunk)  # fewer distinct prompts than a batch: they repeat (with their other rows, if any)
        return chunk + [chunk[i % distinct] for i in range(self.batch_size - distinct)] if distinct else chunk

    def __iter__(self):
        for _ in range(self.num_rows // self.batch_size):
            rows = [self.row(prompt) for prompt in self.chunk()]
            for _ in range(self.repeat_count):
                for index in rows:
                    for _ in range(self.mini_repeat_count):
                        yield index


# ------------------------------------------------------------------------------------------------- the trainer


class PoolCheckpoint(TrainerCallback):
    """Writes the pool state into each checkpoint, after checking that every rank holds the same state."""

    def __init__(self, trainer: DifficultyPoolTrainer):
        self.trainer = trainer

    def on_save(self, args, state, control, **kwargs):
        from accelerate.utils import gather_object

        pool = self.trainer.pool
        digests = gather_object([pool.digest()])
        if len(set(digests)) != 1:
            raise RuntimeError(f"difficulty pool state differs between ranks at step {state.global_step}")
        if state.is_world_process_zero:
            folder = os.path.join(args.output_dir, f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
            if os.path.isdir(folder):
                payload = {**pool.state_dict(), "global_step": state.global_step, "ranks_agreed": len(digests)}
                tmp = os.path.join(folder, STATE_FILE + ".tmp")
                with open(tmp, "w", encoding="utf-8") as handle:
                    json.dump(payload, handle)
                os.replace(tmp, os.path.join(folder, STATE_FILE))
        return control


class DifficultyPoolTrainer(GRPOTrainer):
    """GRPOTrainer whose train sampler draws from a ``DifficultyPool`` fed with each generation batch's groups.
    The pool has one entry per distinct prompt of the training split; the ``pool_id`` column carries it."""

    def __init__(self, *args, pool_settings: PoolSettings, train_dataset=None, **kwargs):
        if train_dataset is None or not hasattr(train_dataset, "add_column"):
            raise ValueError("difficulty_pool needs a map-style training dataset (datasets.Dataset)")
        if "prompt" not in train_dataset.column_names:
            raise ValueError("difficulty_pool needs a 'prompt' column in the training dataset")
        if ID_COLUMN in train_dataset.column_names:
            train_dataset = train_dataset.remove_columns(ID_COLUMN)
        prompts = (p for batch in train_dataset.select_columns("prompt").iter(batch_size=1024) for p in batch["prompt"])
        self.pool_row_ids, digest = prompt_keys(prompts)
        train_dataset = train_dataset.add_column(ID_COLUMN, self.pool_row_ids)
        super().__init__(*args, train_dataset=train_dataset, **kwargs)
        self.pool = DifficultyPool(max(self.pool_row_ids, default=-1) + 1, pool_settings, prompts_digest=digest)
        self.add_callback(PoolCheckpoint(self))

    def _get_train_sampler(self, dataset=None) -> Sampler:
        return PoolSampler(
            self.pool,
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
            shuffle=self.shuffle_dataset,
            seed=self.args.seed,
            row_ids=self.pool_row_ids,
        )

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        if self.model.training:  # every rank: ids and rewards of the whole generation batch, in the same order
            from accelerate.utils import gather_object

            ids = gather_object([int(x[ID_COLUMN]) for x in inputs])
            if "correctness" in self.reward_func_names:
                scores = rewards_per_func[:, self.reward_func_names.index("correctness")]
            else:
                weights = self.reward_weights.to(rewards_per_func.device)
                scores = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
            self.pool.observe(ids, scores.tolist(), self.num_generations)
        return rewards_per_func

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self.model.training:
            logs.update({f"pool/{name}": value for name, value in self.pool.counts().items()})
        super().log(logs, start_time)

    def train(self, resume_from_checkpoint=None, **kwargs):
        checkpoint = resume_from_checkpoint
        if checkpoint is True:
            from transformers.trainer_utils import get_last_checkpoint

            checkpoint = get_last_checkpoint(self.args.output_dir)
        if checkpoint:
            path = os.path.join(checkpoint, STATE_FILE)
            try:
                with open(path, encoding="utf-8") as handle:
                    self.pool.load_state_dict(json.load(handle))
                self.accelerator.print(f"difficulty pool restored from {path}: {self.pool.counts()}")
            except (OSError, ValueError, KeyError, TypeError) as error:
                print(f"warning: difficulty pool not restored ({error}); starting with every prompt active",
                      file=sys.stderr)
        return super().train(resume_from_checkpoint=resume_from_checkpoint, **kwargs)
