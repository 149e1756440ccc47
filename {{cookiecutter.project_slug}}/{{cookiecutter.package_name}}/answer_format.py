"""The answer format: one definition that writes the system prompt and drives the format rewards.

The model is asked to think inside ``<reasoning>...</reasoning>`` and then give its final answer inside
``<answer>...</answer>``. The final answer is the *last* ``<answer>`` block. Because the system prompt and the
format rewards are both derived from :data:`FORMAT`, they cannot drift apart. A tag earns format credit only when
its body :func:`has_content`.

Stdlib only: the post-generation quick smoke imports this module in cookiecutter's own interpreter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Completions longer than this are cut before any regex work, so every parser here runs in bounded time.
MAX_COMPLETION_CHARS = 100_000

_TAG = re.compile(r"<[^<>]*>")  # linear: each match attempt stops at the next "<"
_ALNUM = re.compile(r"[^\W_]")  # a letter or digit of any script (what str.isalnum accepts)


def has_content(text: str) -> bool:
    """Whether ``text`` has a letter or digit (any script) outside angle-bracket tags. Whitespace, zero-width and
    no-break spaces, punctuation and tags alone (``<answer>``, ``<b></b>``) are not content."""
    return _ALNUM.search(_TAG.sub("", text)) is not None


@dataclass(frozen=True)
class AnswerFormat:
    """The tags the model must produce, in order."""

    tags: tuple[str, ...] = ("reasoning", "answer")
    answer_tag: str = "answer"

    def open(self, tag: str) -> str:
        return f"<{tag}>"

    def close(self, tag: str) -> str:
        return f"</{tag}>"

    def example(self) -> str:
        """A skeleton of a well-formed completion, shown in the system prompt."""
        return "\n".join(f"{self.open(t)}\n...\n{self.close(t)}" for t in self.tags)

    def system_prompt(self, task_instruction: str) -> str:
        """The system prompt: the task's own instruction followed by the format the rewards check."""
        names = " then ".join(f"{self.open(t)}...{self.close(t)}" for t in self.tags)
        return (
            f"{task_instruction.strip()}\n"
            f"Respond in exactly this format: {names}, and nothing after the closing "
            f"{self.close(self.tags[-1])} tag:\n{self.example()}"
        )

    def strict_pattern(self) -> re.Pattern[str]:
        """The whole completion is exactly the tags in order, whitespace between them allowed; no tag of the format
        opens or closes inside a block (``<answer><reasoning>..</reasoning></answer>`` is not the format). The
        match's ``groups()`` are the tag bodies, in order (``format_strict`` checks each :func:`has_content`)."""
        marker = "|".join(re.escape(m) for t in self.tags for m in (self.open(t), self.close(t)))
        body = r"\s*".join(
            rf"{re.escape(self.open(t))}((?:(?!{marker}).)*){re.escape(self.close(t))}" for t in self.tags
        )
        return re.compile(rf"\A\s*{body}\s*\Z", re.DOTALL)


FORMAT = AnswerFormat()


def extract_answer(text: str, fmt: AnswerFormat = FORMAT) -> str | None:
    """Return the content of the last complete ``<answer>...</answer>`` block, stripped, or None."""
    if not isinstance(text, str):
        return None
    text = text[:MAX_COMPLETION_CHARS]
    close = fmt.close(fmt.answer_tag)
    end = text.rfind(close)
    if end < 0:
        return None
    start = text.rfind(fmt.open(fmt.answer_tag), 0, end)
    if start < 0:
        return None
    return text[start + len(fmt.open(fmt.answer_tag)) : end].strip()
