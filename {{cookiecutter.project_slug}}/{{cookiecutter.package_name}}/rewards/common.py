"""Shared rewards (any task) and the helpers every reward module uses.

Contract (TRL ``GRPOTrainer``): ``f(prompts=None, completions=..., **columns) -> list[float | None]``. TRL passes each
dataset column as a keyword (one element per completion) plus ``completion_ids``, ``trainer_state`` and others; all
unknown keywords are accepted and ignored. A completion is a plain string or a conversational list of messages
(``[{"role": "assistant", "content": "..."}]``); anything else scores as an empty completion. The functions never
raise and always return one score per completion.

Shared rewards and ranges:

* ``format`` in [0, 1]: incremental credit for the tags of :data:`FORMAT`, see :func:`format_score`.
* ``format_strict`` in {0, 1}: 1 iff the whole completion matches ``FORMAT.strict_pattern()``, every body with
  content (``answer_format.has_content``: a letter or digit outside tags).
* ``length`` in [-1, 0]: DAPO soft overlong punishment on token counts, see :class:`LengthReward`.
* ``repetition`` in [-1, 0]: minus the fraction of repeated word n-grams (-1 for a text with no content), see
  :func:`repetition_score`.

Time: completions are cut at ``MAX_COMPLETION_CHARS``; every scan here is linear on that (``str.find``/``count``,
one ``\\S+`` pass, the strict pattern, anchored at the start, whose tag bodies stop at the next tag of the format, and
``has_content``'s two passes, whose tag pattern stops at the next ``<``), so a call takes tens of milliseconds at
most (measured on 100k-character texts built to make them backtrack).

Stdlib only at module level: the post-generation quick smoke imports this in cookiecutter's interpreter.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..answer_format import FORMAT, MAX_COMPLETION_CHARS, AnswerFormat, has_content

RewardFunc = Callable[..., list[float | None]]
F = TypeVar("F", bound=Callable[..., Any])


REGISTRY: dict[str, RewardFunc] = {}  # rewards that need no run settings; ``rewards.REWARD_FUNCS`` is this dict


@dataclass(frozen=True)
class RewardSettings:
    """What a factory binds its reward to: the run's completion budget and the task's own settings (its
    ``task.TaskArguments``, parsed from the same config; None means the task's defaults)."""

    max_completion_length: int = 256
    task: Any = None


Factory = Callable[[RewardSettings], RewardFunc]
FACTORIES: dict[str, Factory] = {}  # rewards built per run from its settings (open-r1's ``get_reward_funcs``)


def register(name: str) -> Callable[[F], F]:
    """Decorator: register a reward under ``name``, the name TRL logs it under (``rewards/<name>/mean``)."""

    def deco(func: F) -> F:
        if (name in REGISTRY and REGISTRY[name] is not func) or name in FACTORIES:
            raise ValueError(f"two rewards are registered as {name!r}")
        func.__name__ = name
        func.__qualname__ = name
        REGISTRY[name] = func
        return func

    return deco


def factory(name: str) -> Callable[[Factory], Factory]:
    """Decorator: ``make(settings) -> reward`` builds the reward ``name`` for a run (its ``__name__`` is ``name``)."""

    def deco(make: Factory) -> Factory:
        if name in REGISTRY or (name in FACTORIES and FACTORIES[name] is not make):
            raise ValueError(f"two rewards are registered as {name!r}")
        FACTORIES[name] = make
        return make

    return deco


class PerCompletion:
    """A batch reward made from a per-completion scorer ``score(text, **row) -> float | None``.

    It takes TRL's keywords, pads every dataset column the scorer names to one value per completion, calls the
    scorer once per completion, and scores ``default`` for one that raises: the never-raise policy lives here, so
    each scorer stays a plain function. Picklable (by its registered name).
    """

    def __init__(self, name: str, score: Callable[..., float | None], default: float | None = 0.0) -> None:
        self.__name__ = self.__qualname__ = name
        self.__doc__ = score.__doc__
        self.score = score
        self.default = default
        params = list(inspect.signature(score).parameters.values())[1:]
        self.keys = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    def __call__(self, prompts: object = None, completions: object = None, **kwargs: Any) -> list[float | None]:
        try:
            texts = completion_texts(completions)
        except Exception:
            return [self.default] * completion_count(completions)
        columns = {key: column(kwargs.get(key), len(texts)) for key in self.keys}
        out: list[float | None] = []
        for i, text in enumerate(texts):
            try:
                out.append(self.score(text, **{key: values[i] for key, values in columns.items()}))
            except Exception:
                out.append(self.default)
        return out

    def __reduce__(self):
        return registered, (self.__name__,)


def registered(name: str) -> RewardFunc:
    """The reward registered under ``name``."""
    return REGISTRY[name]


def per_completion(name: str, default: float | None = 0.0) -> Callable[[Callable[..., float | None]], RewardFunc]:
    """Decorator: register a per-completion scorer as the batch reward ``name`` (see :class:`PerCompletion`)."""

    def deco(score: Callable[..., float | None]) -> RewardFunc:
        return register(name)(PerCompletion(name, score, default))

    return deco


def completion_text(completion: object) -> str:
    """The text of one completion, plain or conversational, cut at ``MAX_COMPLETION_CHARS``; ``""`` if unusable.

    For a conversational completion the contents of all messages are joined (TRL passes a single assistant
    message; joining keeps multi-message outputs scoreable). ``content`` may itself be a list of typed parts
    (``[{"type": "text", "text": "..."}]``), as in multimodal chat formats.
    """
    try:
        if isinstance(completion, str):
            return completion[:MAX_COMPLETION_CHARS]
        if isinstance(completion, dict):
            completion = [completion]
        if isinstance(completion, (list, tuple)):
            parts: list[str] = []
            size = 0
            for message in completion:
                content = message.get("content") if isinstance(message, dict) else None
                if isinstance(content, list):  # typed parts
                    content = "".join(
                        p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
                    )
                if isinstance(content, str):
                    parts.append(content)
                    size += len(content)
                    if size >= MAX_COMPLETION_CHARS:
                        break
            return "\n".join(parts)[:MAX_COMPLETION_CHARS]
    except Exception:  # a malformed object must never break a training step
        pass
    return ""


def completion_texts(completions: object) -> list[str]:
    """:func:`completion_text` over a batch; a non-list batch gives an empty list."""
    if not isinstance(completions, (list, tuple)):
        return []
    return [completion_text(c) for c in completions]


def column(values: object, n: int) -> list[Any]:
    """A dataset column as a list of exactly ``n`` items (missing or short columns are padded with None)."""
    if isinstance(values, (list, tuple)):
        out = list(values[:n])
    elif values is None:
        out = []
    else:  # a scalar broadcast to every completion
        out = [values] * n
    return out + [None] * (n - len(out))


# --------------------------------------------------------------------------------------------------- format


MAX_OUTSIDE_COST = 0.5  # the most text outside the format's blocks costs (0.001 per character)


def format_score(text: str, fmt: AnswerFormat = FORMAT) -> float:
    """Incremental format score in [0, 1].

    For each tag of ``fmt`` (in order) a completion earns ``1 / (2 * len(tags))`` for the opening tag and the same
    for its closing tag, each looked for after the previous marker found (so ``<answer>`` placed before
    ``<reasoning>`` earns nothing, and a completion with only the answer block earns half). A tag whose body (from
    its opening tag, or the previous marker when that is missing, to its closing tag, or the next tag's opening
    when that is missing) has no :func:`has_content` earns nothing: ``<answer> </answer>`` is not an answer. Each
    tag is expected once: a tag that occurs more than once costs a quarter of its share. Text outside the blocks
    (before the first opening tag, between one block's closing tag and the next block's opening tag, after the last
    closing tag; whitespace aside) costs 0.001 per character, up to ``MAX_OUTSIDE_COST`` (0.5): "answer then
    ramble" and "junk, then a well-formed answer" are always worth less than a clean completion. Text before a
    closing tag whose opening tag is missing is that tag's body (the opening tag may end the prompt), not outside.
    Empty or non-text input scores 0.
    """
    if not text:
        return 0.0
    share = 1.0 / (2 * len(fmt.tags))
    score = 0.0
    pos = 0
    last_end = -1
    after_block = True  # no marker yet, or the last one closed a block: text up to the next opening is outside
    outside = 0  # characters outside the blocks, whitespace aside
    for i, tag in enumerate(fmt.tags):
        opened = text.find(fmt.open(tag), pos)
        start = pos if opened < 0 else opened + len(fmt.open(tag))
        closed = text.find(fmt.close(tag), start)
        end = closed
        if end < 0:  # unclosed: the body runs to the next tag's opening, or to the end
            following = text.find(fmt.open(fmt.tags[i + 1]), start) if i + 1 < len(fmt.tags) else -1
            end = following if following >= 0 else len(text)
        credit = share if has_content(text[start:end]) else 0.0
        if opened >= 0 and after_block:  # before the first block, or between a closing tag and this opening
            outside += len(text[max(last_end, 0) : opened].strip())
        for marker, idx in ((fmt.open(tag), opened), (fmt.close(tag), closed)):
            if idx < 0:
                continue  # missing (or out of order): no credit, later markers are still looked for
            score += credit
            if text.count(marker) > 1:
                score -= share / 4
            pos = idx + len(marker)
            last_end = pos
            after_block = marker == fmt.close(tag)
    if last_end >= 0:
        outside += len(text[last_end:].strip())
        score -= min(MAX_OUTSIDE_COST, 0.001 * outside)
    return max(0.0, min(1.0, score))


@per_completion("format")
def format_reward(text: str) -> float:
    """Incremental format credit in [0, 1] (see :func:`format_score`)."""
    return format_score(text)


_STRICT = FORMAT.strict_pattern()


@per_completion("format_strict")
def format_strict_reward(text: str) -> float:
    """1.0 iff the whole completion is exactly the tags of ``FORMAT`` in order (whitespace between), each body with
    :func:`has_content`, else 0.0."""
    match = _STRICT.match(text) if text else None
    return 1.0 if match and all(has_content(body) for body in match.groups()) else 0.0


# --------------------------------------------------------------------------------------------------- length

def length_penalty(n_tokens: int, max_len: int, buffer: int) -> float:
    """DAPO soft overlong punishment: 0 up to ``max_len - buffer`` tokens, then linear down to -1 at ``max_len``."""
    start = max_len - buffer
    if n_tokens <= start:
        return 0.0
    return -min(1.0, (n_tokens - start) / max(1, buffer))


class LengthReward:
    """Soft overlong punishment in [-1, 0] on the token count of each completion (``completion_ids`` from TRL),
    bound to the run's ``max_completion_length``. A callable class, not a closure, so it stays picklable.

    Without ``completion_ids`` (e.g. a reward self-check outside TRL) the token count is unknown and every
    completion gets 0.0: character or word counts are too loose a proxy to punish with.

    >>> LengthReward(100, 20)(completions=["a", "b"], completion_ids=[[0] * 80, [0] * 90])
    [0.0, -0.5]
    """

    __name__ = "length"

    def __init__(self, max_completion_length: int, buffer: int | None = None) -> None:
        """``buffer`` defaults to a quarter of ``max_completion_length``; clamped to ``[1, max_completion_length]``."""
        self.max_len = max(1, int(max_completion_length))
        buf = self.max_len // 4 if buffer is None else int(buffer)
        self.buffer = max(1, min(buf, self.max_len))

    def __call__(
        self, prompts: object = None, completions: object = None, completion_ids: object = None, **kwargs: Any
    ) -> list[float | None]:
        n = completion_count(completions)
        ids = column(completion_ids, n)
        out: list[float | None] = []
        for item in ids:
            try:
                countable = hasattr(item, "__len__") and not isinstance(item, (str, bytes, dict))  # list or tensor
                out.append(length_penalty(len(item), self.max_len, self.buffer) if countable else 0.0)  # type: ignore[arg-type]
            except Exception:
                out.append(0.0)
        return out


@factory("length")
def length_for_run(settings: RewardSettings) -> LengthReward:
    """``length`` bound to the run's ``max_completion_length`` (buffer: a quarter of it)."""
    return LengthReward(settings.max_completion_length)


# ----------------------------------------------------------------------------------------------- repetition

REPETITION_NGRAM = 3
_WORD = re.compile(r"\S+")


def repetition_score(text: str, n: int = REPETITION_NGRAM) -> float:
    """Minus the fraction of word n-grams that repeat an earlier n-gram, in [-1, 0].

    Words are whitespace tokens, lower-cased. A text without :func:`has_content` (empty, whitespace, only tags)
    scores -1, the worst; other texts with fewer than ``n + 1`` words score 0. A text that is one phrase looped many
    times tends to -1.
    """
    if not has_content(text):
        return -1.0
    words = [w.lower() for w in _WORD.findall(text)]
    total = len(words) - n + 1
    if total < 2:
        return 0.0
    grams = {tuple(words[i : i + n]) for i in range(total)}
    return -(total - len(grams)) / total


@per_completion("repetition")
def repetition_reward(text: str) -> float:
    """n-gram repetition penalty in [-1, 0] (see :func:`repetition_score`)."""
    return repetition_score(text)


def completion_count(completions: object) -> int:
    """How many completions a reward was given (0 for anything that is not a list or tuple)."""
    return len(completions) if isinstance(completions, (list, tuple)) else 0


__all__ = [
    "FACTORIES",
    "RewardSettings",
    "column",
    "completion_count",
    "completion_text",
    "completion_texts",
    "LengthReward",
    "REGISTRY",
    "format_score",
    "factory",
    "length_for_run",
    "length_penalty",
    "per_completion",
    "register",
    "repetition_score",
]
