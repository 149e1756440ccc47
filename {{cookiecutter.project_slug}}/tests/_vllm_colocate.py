"""Worker of the vLLM colocate tests: train.py's training with vLLM colocated on CPU (TRL's real generation and
weight sync, patched for the CPU by ``_vllm_cpu``), then a final sync and vLLM's log-probs of fixed token sequences
against the trained model's and the initial model's, written as JSON.

    python tests/_vllm_colocate.py <result.json> <initial model dir> <train.py args...>
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
from transformers import AutoModelForCausalLM  # noqa: E402

PROMPTS = ["What is 2 + 3? <reasoning>", "Answer as <answer>7</answer> then stop.", "The sum of 12 and 30 is"]


def hf_logprobs(model, ids: list[int]) -> list[float]:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()


def vllm_logprobs(llm, sequences: list[list[int]]) -> list[list[float]]:
    from vllm import SamplingParams, TokensPrompt

    params = SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=0)
    outputs = llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in sequences], params, use_tqdm=False)
    return [[out.prompt_logprobs[j][ids[j]].logprob for j in range(1, len(ids))]
            for out, ids in zip(outputs, sequences, strict=True)]


def main(result: str, initial: str, argv: list[str]) -> None:
    trainers = []
    train = trl.GRPOTrainer.train

    def recording_train(self, *args, **kwargs):
        trainers.append(self)
        return train(self, *args, **kwargs)

    trl.GRPOTrainer.train = recording_train
    mod("training.train").cli(argv)
    trainer = trainers[0]
    generation = trainer.vllm_generation
    generation.sync_weights()  # the final sync: vLLM held the weights from before the last optimizer step
    tokenizer = trainer.processing_class
    sequences = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in PROMPTS]
    served = vllm_logprobs(generation.llm, sequences)
    model = trainer.accelerator.unwrap_model(trainer.model).eval()
    start = AutoModelForCausalLM.from_pretrained(initial, dtype=torch.float32).eval()

    def max_gap(model) -> float:
        return max(abs(a - b) for ids, row in zip(sequences, served, strict=True)
                   for a, b in zip(hf_logprobs(model, ids), row, strict=True))

    Path(result).write_text(json.dumps({
        "steps": trainer.state.global_step,
        "peft": hasattr(model, "peft_config"),
        "vllm_dtype": str(generation.llm.llm_engine.model_config.dtype),
        "gap_trained": max_gap(model),
        "gap_initial": max_gap(start),
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
