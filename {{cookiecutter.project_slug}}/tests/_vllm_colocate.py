"""Worker of the vLLM colocate tests: train.py's training with vLLM colocated on CPU (TRL's real generation and
weight sync, patched for the CPU by ``_vllm_cpu``), checked at every sync: right after TRL syncs at step k, vLLM's
log-probs of fixed token sequences against the trainer's model as it is at step k (and as it was at step k - 1).
``skip:K`` / ``stale:K`` breaks the sync at step K only (skipped, or made from a copy of the weights one step
old), the negative control: there the same check must see vLLM one step behind, and the next sync recover. Writes
the records as JSON.

    python tests/_vllm_colocate.py <result.json> <none|skip:K|stale:K> <train.py args...>
"""

import json
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path[:0] = [str(TESTS), str(TESTS.parent)]

import _vllm_cpu  # noqa: E402

_vllm_cpu.install()

import torch  # noqa: E402
import trl  # noqa: E402
from _pkg import mod  # noqa: E402

PROMPTS = ["What is 2 + 3? <reasoning>", "Answer as <answer>7</answer> then stop.", "The sum of 12 and 30 is"]


def hf_logprobs(model, sequences: list[list[int]]) -> list[list[float]]:
    training = model.training
    model.eval()
    rows = []
    with torch.no_grad():
        for ids in sequences:
            logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()
            rows.append(torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0].tolist())
    model.train(training)
    return rows


def vllm_logprobs(llm, sequences: list[list[int]]) -> list[list[float]]:
    from vllm import SamplingParams, TokensPrompt

    params = SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=0)
    outputs = llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in sequences], params, use_tqdm=False)
    return [[out.prompt_logprobs[j][ids[j]].logprob for j in range(1, len(ids))]
            for out, ids in zip(outputs, sequences, strict=True)]


def max_gap(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))


def check_every_sync(trainer, breaking: str, records: list) -> None:
    """Wrap TRL's sync: after each one, vLLM against the trainer's weights now and one step ago."""
    generation = trainer.vllm_generation
    real_sync = generation.sync_weights
    model = trainer.accelerator.unwrap_model(trainer.model)
    sequences = [trainer.processing_class(text, add_special_tokens=False)["input_ids"] for text in PROMPTS]
    last = {"weights": None, "logprobs": None}

    def checked_sync():
        step = trainer.state.global_step
        now = {name: value.detach().clone() for name, value in model.state_dict().items()}
        broken = breaking != "none" and step == int(breaking.split(":")[1])
        if broken and breaking.startswith("stale"):  # synced from the weights of a step ago, the live ones restored
            model.load_state_dict(last["weights"])
            real_sync()
            model.load_state_dict(now)
        elif not broken:
            real_sync()
        served, trained = vllm_logprobs(generation.llm, sequences), hf_logprobs(model, sequences)
        record = {"step": step, "broken": broken, "gap": max_gap(served, trained)}
        if last["logprobs"] is not None:
            record["gap_previous_step"] = max_gap(served, last["logprobs"])
        records.append(record)
        last.update(weights=now, logprobs=trained)

    generation.sync_weights = checked_sync


def main(result: str, breaking: str, argv: list[str]) -> None:
    trainers, records = [], []
    train = trl.GRPOTrainer.train

    def recording_train(self, *args, **kwargs):
        trainers.append(self)
        check_every_sync(self, breaking, records)
        return train(self, *args, **kwargs)

    trl.GRPOTrainer.train = recording_train
    mod("training.train").cli(argv)
    trainer = trainers[0]
    model = trainer.accelerator.unwrap_model(trainer.model)
    Path(result).write_text(json.dumps({
        "steps": trainer.state.global_step,
        "peft": hasattr(model, "peft_config"),
        "vllm_dtype": str(trainer.vllm_generation.llm.llm_engine.model_config.dtype),
        "syncs": records,
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
