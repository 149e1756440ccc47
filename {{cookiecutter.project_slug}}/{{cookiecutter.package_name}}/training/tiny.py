"""A tiny random-weight causal LM with a locally trained tokenizer, for smoke runs and tests (no hub).

The tokenizer is a byte-level BPE trained on the run's data (a JSONL file or the smoke curriculum), with the
format's tags and ChatML markers as single tokens and the chat template in ``chat_template.jinja``. The model is a
2-layer Llama with random weights. Both are saved with ``save_pretrained``, so the training script loads them
exactly like a hub model.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from .. import task
from ..answer_format import FORMAT
from ..data import build_prompt
from .checkpoints import atomic_dir, is_model_dir

CHAT_TEMPLATE = Path(__file__).resolve().parents[1] / "chat_template.jinja"  # the package's
SPECIAL_TOKENS = ["<pad>", "<|im_start|>", "<|im_end|>", "<unk>"]


def format_tokens() -> list[str]:
    return [tag for t in FORMAT.tags for tag in (FORMAT.open(t), FORMAT.close(t))]


def corpus(data_file: str | Path, system_prompt: str | None = None) -> list[str]:
    """Every string of every row of a JSONL file (or of the ``curriculum:N`` rows), each row's prompt as the chat
    template lays it out (``system_prompt``, else the task's, and the role names) and its gold completion: the
    tokenizer's corpus. With the prompt in the corpus its words become tokens instead of single characters."""
    texts: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    if str(data_file).startswith("curriculum:"):  # the generated smoke curriculum: all three of its parts
        rows = [row for part, n in (("train", 2000), ("priming", 500), ("test", 200))
                for row in task.generate_curriculum(n, part=part)]
    else:
        lines = Path(data_file).read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
    for row in rows:
        walk(row)
        texts.extend(f"{message['role']}\n{message['content']}" for message in build_prompt(row, system_prompt))
        texts.append(task.gold_completion(row))
    return texts


def build_tiny_model(
    out_dir: str | Path,
    data_file: str | Path,
    extra_texts: tuple[str, ...] = (),
    vocab_size: int = 1024,
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
    system_prompt: str | None = None,
    num_heads: int = 4,
) -> Path:
    """Build (or reuse, if ``out_dir`` already holds one) the tiny model and tokenizer; returns ``out_dir``.

    ``num_heads`` attention heads (half as many key/value heads): 2 gives head_dim 32 at hidden 64, a head size
    vLLM's CPU backend supports (32, 64, 80, ...; the vLLM tests use it)."""
    out = Path(out_dir)
    if _built(out):
        return out
    with build_lock(out):  # two runs starting at once in one project: one builds, the other waits and reuses it
        if not _built(out):
            texts = [*corpus(data_file, system_prompt), *extra_texts]
            _build(out, texts, vocab_size, hidden_size, num_layers, seed, num_heads)
    return out


def _built(out: Path) -> bool:
    return is_model_dir(out) and (out / "tokenizer.json").is_file()


@contextmanager
def build_lock(out: Path):
    """Hold ``<out>.lock`` exclusively (POSIX ``flock``; released when the process ends, even by a kill)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "a+b") as lock:
        try:
            import fcntl
        except ImportError:  # Windows: no lock; one run at a time builds the model
            yield
            return
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build(out: Path, texts: list[str], vocab_size: int, hidden_size: int, num_layers: int, seed: int,
           num_heads: int) -> None:
    """Train the tokenizer on ``texts``, build the random-weight model, save both to ``out`` atomically."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    # Digits are single tokens, so numbers are spelled digit by digit (a tiny model can learn arithmetic on them).
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer)
    bpe.add_tokens(format_tokens())
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<pad>", unk_token="<unk>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE.read_text(encoding="utf-8")

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=max(1, num_heads // 2),
        max_position_embeddings=2048,
        tie_word_embeddings=False,  # tied, every resume would warn of missing keys (lm_head.weight is not saved)
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    with atomic_dir(out) as partial:  # never a half-written model under the final name
        tokenizer.save_pretrained(partial)
        model.save_pretrained(partial)
