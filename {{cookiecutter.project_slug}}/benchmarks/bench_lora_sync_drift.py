"""How far the frozen base weights drift when TRL syncs a LoRA policy to vLLM every step, in bfloat16.

TRL's colocate and server weight sync under PEFT merge the adapter into the base weights in place
(``merge_adapter``), send them, and unmerge (``unmerge_adapter``): W <- W + s*B@A, then W <- W - s*B@A, both
rounded to the weights' dtype. In bfloat16 the two roundings need not cancel, so the "frozen" base can walk. This
runs that cycle ``--syncs`` times on a small Llama (random weights, a LoRA adapter with random B, as after some
training, moved a little between syncs as by an optimizer step) and prints the drift of the base weights relative
to their size, and what one rounding step is.

    python benchmarks/bench_lora_sync_drift.py                # 200 syncs, bfloat16
    python benchmarks/bench_lora_sync_drift.py --syncs 1000 --hidden 256
"""

import argparse

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--syncs", type=int, default=200)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    args = parser.parse_args()
    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    config = LlamaConfig(vocab_size=256, hidden_size=args.hidden, intermediate_size=2 * args.hidden,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4)
    model = LlamaForCausalLM(config).to(dtype)
    model = get_peft_model(model, LoraConfig(r=args.rank, lora_alpha=2 * args.rank, target_modules="all-linear"))
    for name, param in model.named_parameters():
        if "lora_B" in name:  # LoRA starts with B = 0; a trained adapter does not
            param.data = (torch.randn_like(param, dtype=torch.float32) * 0.02).to(dtype)
    base = {name: p.detach().clone() for name, p in model.named_parameters() if "base_layer.weight" in name}
    drift = []
    lora_b = [p for name, p in model.named_parameters() if "lora_B" in name]
    for step in range(1, args.syncs + 1):
        model.merge_adapter()  # what TRL does before each sync to vLLM ...
        model.unmerge_adapter()  # ... and after it
        with torch.no_grad():  # an optimizer step between two syncs: the adapter moves, the base must not
            for b in lora_b:
                b.add_((torch.randn_like(b, dtype=torch.float32) * 1e-3).to(dtype))
        if step in (1, 10, 50, args.syncs):
            worst = max(float((p.detach().float() - base[n].float()).abs().max() / base[n].float().abs().mean())
                        for n, p in model.named_parameters() if n in base)
            changed = sum(int((p.detach() != base[n]).sum()) for n, p in model.named_parameters() if n in base)
            total = sum(p.numel() for p in base.values())
            moved = sum(float(((p.detach().float() - base[n].float()) ** 2).sum())
                        for n, p in model.named_parameters() if n in base)
            size = sum(float((w.float() ** 2).sum()) for w in base.values())
            drift.append((step, worst, changed / total, (moved / size) ** 0.5))
    ulp = torch.finfo(dtype).eps
    print(f"{args.dtype}, hidden {args.hidden}, LoRA r{args.rank}; one rounding step is {ulp:.1e} of a weight")
    for step, worst, changed, relative in drift:
        print(f"after {step:>4} syncs: {changed:.1%} of base weights changed, ||W - W0|| / ||W0|| = {relative:.1e}, "
              f"worst change {worst:.2e} of the layer's mean |weight|")


if __name__ == "__main__":
    main()
