"""Count what autograd keeps for one decoder layer and compare it with the estimator's per-token working set (CPU).

    python benchmarks/bench_layer_working_set.py

Builds single-layer Qwen2 / Qwen3 / Llama models at small sizes (16-bit and fp32, with and without PEFT LoRA),
runs one layer's forward under ``torch.autograd.graph.saved_tensors_hooks`` at two sequence lengths, and takes the
bytes per token of the tensors it saves (parameters, the layer input and the rotary tables excluded) from the
difference. ``estimator.layer_working_set`` is the per-token model of that set; the 1-byte dropout masks CUDA keeps
are left out here because the CPU kernel does not save them.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PACKAGE = next(path.parents[1].name for path in ROOT.glob("*/preflight/estimator.py"))
estimator = importlib.import_module(f"{PACKAGE}.preflight.estimator")
archs = importlib.import_module(f"{PACKAGE}.preflight.archs")
SHAPES = [("qwen2", 128, 320, 4, 2, 32), ("qwen2", 256, 640, 8, 2, 32), ("qwen3", 128, 320, 4, 2, 32),
          ("llama", 256, 448, 8, 4, 32)]


def saved_bytes(model_type, hidden, inter, heads, kv, head_dim, dtype, lora_dropout, peft, tokens) -> int:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(model_type, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=1,
                                  num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim,
                                  vocab_size=128, attn_implementation="sdpa")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    if peft:
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=lora_dropout,
                                                 target_modules="all-linear", task_type="CAUSAL_LM"))
    model.train()
    layer = next(module for name, module in model.named_modules() if name.endswith("layers.0"))
    rotary = next(module for name, module in model.named_modules() if name.endswith("rotary_emb"))
    x = torch.randn(2, tokens, hidden, dtype=dtype, requires_grad=True)
    positions = torch.arange(tokens).unsqueeze(0).expand(2, tokens)
    tables = rotary(x, positions)
    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        layer(x, attention_mask=None, position_ids=positions, position_embeddings=tables)
    skip = {p.untyped_storage().data_ptr() for p in model.parameters()} | {x.untyped_storage().data_ptr()}
    skip |= {table.untyped_storage().data_ptr() for table in tables}
    return sum(size for pointer, size in seen.items() if pointer not in skip)


def main() -> int:
    import torch

    print(f"{'layer':<34} {'variant':<16} {'measured B/token':>17} {'estimate':>9} {'ratio':>6}")
    worst = 0.0
    for model_type, hidden, inter, heads, kv, head_dim in SHAPES:
        facts = {"model_type": model_type, "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": 1,
                 "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim, "vocab_size": 128}
        arch = archs.arch_from_config(facts)
        for label, dtype, peft, dropout in [("bf16", torch.bfloat16, False, 0.0),
                                            ("bf16 LoRA", torch.bfloat16, True, 0.0),
                                            ("bf16 LoRA drop", torch.bfloat16, True, 0.05),
                                            ("fp32", torch.float32, False, 0.0)]:
            args = (model_type, hidden, inter, heads, kv, head_dim, dtype, dropout, peft)
            measured = (saved_bytes(*args, 128) - saved_bytes(*args, 64)) / (2 * 64)
            targets = list(archs.LINEAR_LAYERS) if peft else None
            est = estimator.layer_working_set(arch, 2 if dtype == torch.bfloat16 else 4, targets, dropout, 8)
            if peft and dropout > 0:  # CPU dropout keeps no mask: drop the CUDA-only 1 byte per adapted input
                q = heads * head_dim
                est -= 5 * hidden + q + inter
            ratio = est / measured
            worst = max(worst, abs(ratio - 1))
            name = f"{model_type} h{hidden} i{inter} q{heads}x{head_dim} kv{kv}"
            print(f"{name:<34} {label:<16} {measured:17.0f} {est:9.0f} {ratio:6.2f}")
    print(f"largest deviation: {worst:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
