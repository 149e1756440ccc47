"""Ask a trained model a question in the task's format: the training system prompt and chat template, the answer
format's tags, the completion and its extracted final answer.

    python chat.py --config configs/smoke.yaml --model outputs/smoke/merged "What is 1 * 7?"
    python chat.py --model outputs/24gb "..."                  # a run's LoRA adapter on its base model
    python chat.py --model outputs/24gb/checkpoint-200 "..."   # a checkpoint
    python chat.py --model outputs/24gb/merged                 # interactive: a prompt per line, empty line ends

A prompt is the row's ``question``; a prompt that starts with ``{`` is a whole row in the task's row contract (JSON),
for tasks whose prompt shows more columns. The prompt is built by ``data.build_prompt`` and generated with the
evaluation's code (``evaluation.generation``): batched transformers ``generate``, or vLLM with ``--backend vllm`` (or
``auto`` with ``use_vllm`` set and vLLM installed).
"""

from __future__ import annotations

import argparse
import json
import sys

from . import data, task
from .answer_format import extract_answer
from .evaluation.generation import (
    generate_transformers,
    generate_vllm,
    load_model,
    load_tokenizer,
    pick_backend,
    vllm_engine,
)
from .evaluation.options import EvalError, OneLineParser, chat_template_kwargs, resolve_model, settings_from_args


class ChatError(ValueError):
    """A bad prompt or argument; its message is one line that says what to fix."""


def row_from_text(text: str) -> dict:
    """The row a prompt stands for: a JSON object is a whole row, anything else is the row's ``question``."""
    stripped = text.strip()
    if not stripped:
        raise ChatError("the prompt is empty")
    if not stripped.startswith("{"):
        return {"question": stripped}
    try:
        row = json.loads(stripped)
    except ValueError as error:
        raise ChatError(f"a prompt that starts with a brace must be a JSON row: {error}") from error
    if not isinstance(row, dict):
        raise ChatError("a JSON prompt must be an object (one row of the row contract)")
    return task.normalize(row)


def build_messages(text: str, system_prompt: str | None = None) -> list[dict[str, str]]:
    """The chat messages training would build for this prompt (system prompt, then the task's user message)."""
    row = row_from_text(text)
    try:
        return data.build_prompt(row, system_prompt)
    except KeyError as error:
        columns = ", ".join(task.REQUIRED_COLUMNS)
        raise ChatError(
            f"the {task.NAME} task's prompt needs column {error}: pass a JSON row with {columns}, "
            f"e.g. chat.py '{json.dumps(dict.fromkeys(task.REQUIRED_COLUMNS, '...'))}'"
        ) from error


class Chat:
    """A loaded model (transformers or vLLM) answering prompts in the task's format."""

    def __init__(self, settings):
        self.settings = settings
        self.base, self.adapter = resolve_model(settings.model, settings.adapter, settings.model_field)
        self.backend = pick_backend(settings)
        self.tokenizer = load_tokenizer(self.base, self.adapter, settings)
        if self.backend == "vllm":
            self.engine, self.generate = vllm_engine(settings, self.base, self.adapter), generate_vllm
        else:
            self.engine, self.generate = load_model(self.base, self.adapter, settings), generate_transformers

    def ask(self, text: str) -> tuple[list[dict[str, str]], list]:
        """(messages, samples) for one prompt: ``num_samples`` completions (1 = greedy)."""
        messages = build_messages(text, self.settings.get("system_prompt"))
        limit = int(self.settings.get("max_prompt_length"))
        length = data.prompt_length(self.tokenizer, messages, chat_template_kwargs(self.settings))
        if length > limit:
            print(f"warning: this prompt is {length} tokens, over max_prompt_length={limit} (training dropped such "
                  "prompts)", file=sys.stderr)
        samples = self.generate(self.settings, self.base, self.adapter, self.tokenizer, [messages], engine=self.engine)
        return messages, samples[0]


def render(samples: list) -> str:
    """Each completion, its extracted final answer, and whether it was cut at max_completion_length."""
    blocks = []
    for i, sample in enumerate(samples, 1):
        head = f"--- completion {i}/{len(samples)}\n" if len(samples) > 1 else ""
        answer = extract_answer(sample.text)
        tail = " (cut at max_completion_length)" if sample.truncated else ""
        found = answer if answer is not None else "none (no <answer> block)"
        blocks.append(f"{head}{sample.text.strip()}\n\nanswer: {found}{tail}")
    return "\n".join(blocks)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(description="Ask a trained model a question in the task's format.")
    parser.add_argument("prompt", nargs="?", help="the question (or a JSON row); none: read prompts interactively")
    parser.add_argument("--config", help="the run's config: system prompt, sampling, lengths (default: the preset)")
    parser.add_argument("--model", help="a merged model dir, a run's output dir (LoRA), a checkpoint or a hub id "
                                        "(default: the config's model)")
    parser.add_argument("--adapter", help="a LoRA adapter dir (peft) to apply to --model")
    parser.add_argument("--num_samples", type=int, help="completions per prompt (1 = greedy; default: the config's "
                                                         "eval_num_samples, 4 for the smoke model, else 1)")
    parser.add_argument("--temperature", type=float, help="override the config's sampling temperature")
    parser.add_argument("--max_completion_length", type=int, help="override the config's completion limit")
    parser.add_argument("--backend", choices=["auto", "transformers", "vllm"], default="auto")
    parser.add_argument("--show_prompt", action="store_true", help="print the chat messages sent (to stderr)")
    return parser


def settings_for(args: argparse.Namespace):
    """eval.py's settings (the config parsed as train.py parses it), for one prompt at a time."""
    eval_args = argparse.Namespace(
        config=args.config, model=args.model, adapter=args.adapter, num_samples=args.num_samples, pass_k=None,
        max_rows=None, batch_size=1, backend=args.backend, temperature=args.temperature,
        max_completion_length=args.max_completion_length,
    )
    return settings_from_args(eval_args)


def answer(chat: Chat, text: str, show_prompt: bool = False) -> None:
    messages, samples = chat.ask(text)
    if show_prompt:
        print(json.dumps(messages, indent=2, ensure_ascii=False), file=sys.stderr)
    print(render(samples), flush=True)


def interactive(chat: Chat, show_prompt: bool = False) -> None:
    print(f"chat with {chat.settings.model} ({task.NAME} task format); an empty line or Ctrl-D ends", file=sys.stderr)
    while True:
        try:
            text = input("> ")
        except EOFError:
            break
        if not text.strip():
            break
        try:
            answer(chat, text, show_prompt)
        except ChatError as error:
            print(f"error: {error}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.prompt is not None:
            build_messages(args.prompt)  # a bad prompt is refused before the model loads
        chat = Chat(settings_for(args))
        if args.prompt is None:
            interactive(chat, args.show_prompt)
        else:
            answer(chat, args.prompt, args.show_prompt)
    except (ChatError, EvalError, data.DataError, FileNotFoundError) as error:
        text = str(error).strip()
        print(f"error: {text.splitlines()[0] if text else type(error).__name__}", file=sys.stderr)
        return 1
    return 0
