"""Format priming: a brief supervised pass over gold completions before GRPO.

GRPO learns only from reward differences inside a group; a model that never produces the answer format gets the
same (zero) format and correctness reward for every completion, so it never learns (a random tiny model stays
flat at 0 for hundreds of steps). A few SFT steps on well-formed gold completions, the recipe Unsloth uses to
prime Qwen3 before GRPO, put the format within reach; GRPO then improves on it with the task's real rewards.
"""

from __future__ import annotations

from pathlib import Path

from . import task
from .data import build_prompt


def encode(tokenizer, row: dict, system_prompt: str | None = None) -> tuple[list[int], list[int]]:
    """Token ids of prompt + gold completion, and labels that train only on the completion (and its end token)."""
    prompt = build_prompt(row, system_prompt)
    prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
    if hasattr(prompt_ids, "keys"):
        prompt_ids = prompt_ids["input_ids"]
    completion_ids = tokenizer(task.gold_completion(row), add_special_tokens=False)["input_ids"]
    completion_ids = [*completion_ids, tokenizer.eos_token_id]
    ids = [*prompt_ids, *completion_ids]
    return ids, [-100] * len(prompt_ids) + completion_ids


def prime(
    model_path: str | Path,
    out_dir: str | Path,
    rows: list[dict],
    steps: int,
    learning_rate: float = 3e-3,
    batch_size: int = 8,
    seed: int = 0,
    system_prompt: str | None = None,
    log=print,
) -> Path:
    """Fine-tune ``model_path`` on the rows' gold completions for ``steps`` steps; save to ``out_dir``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = Path(out_dir)
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path)
    model.train()
    examples = [encode(tokenizer, row, system_prompt) for row in rows]
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)
    pad = tokenizer.pad_token_id
    for step in range(steps):
        batch = [examples[i] for i in torch.randint(len(examples), (batch_size,), generator=generator).tolist()]
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch])
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch])
        attention = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch])
        loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step == 0 or (step + 1) % 10 == 0 or step + 1 == steps:
            log(f"format priming step {step + 1}/{steps}: loss {loss.item():.3f}")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
