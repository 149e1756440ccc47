"""The sampler-gap figures of a vLLM run (training/vllm_check.py) on hand-made log-probs: the clip-range fraction in
sequence and token modes, tokens vLLM could not score, the causes named, health.json kept and extended. The real
run (vLLM colocated on CPU) is in test_vllm_cpu.py."""

import json
import math
from types import SimpleNamespace

import torch
from _pkg import mod

check = mod("training.vllm_check")


def batch(diffs: list[list[float]], nan_at: tuple | None = None) -> dict:
    """old - sampled = ``diffs`` per token (every token a completion token)."""
    sampled = torch.full((len(diffs), len(diffs[0])), -1.0)
    old = sampled + torch.tensor(diffs)
    if nan_at:
        sampled[nan_at] = math.nan
    return {"old_per_token_logps": old, "sampling_per_token_logps": sampled,
            "completion_mask": torch.ones_like(sampled, dtype=torch.long)}


def test_sequence_ratio_outside_the_clip_range_is_counted():
    # sequence ratios exp(0.3) ~ 1.35 (inside [0.5, 3]), exp(1.5) ~ 4.5 (above), exp(-1.2) ~ 0.30 (below)
    found = check.measure(batch([[0.1, 0.1, 0.1], [0.5, 0.5, 0.5], [-0.4, -0.4, -0.4]]), "sequence_mask", 0.5, 3.0)
    assert found["sequences"] == 3 and abs(found["outside_clip"] - 2 / 3) < 1e-6
    assert abs(found["gap_mean"] - (0.3 + 1.5 + 1.2) / 9) < 1e-6 and abs(found["gap_max"] - 0.5) < 1e-6
    no_floor = check.measure(batch([[0.1, 0.1, 0.1], [0.5, 0.5, 0.5], [-0.4, -0.4, -0.4]]), "sequence_mask", None, 3.0)
    assert abs(no_floor["outside_clip"] - 1 / 3) < 1e-6  # TRL's default: no lower bound
    assert abs(no_floor["far_from_one"] - 2 / 3) < 1e-6  # yet the ratio 0.30 is far from 1


def test_token_modes_count_a_sequence_with_any_token_outside():
    # per token: exp(1.2) ~ 3.3 > 3 in the first sequence only; the second sums high but each token is inside
    found = check.measure(batch([[0.0, 1.2, 0.0], [0.9, 0.9, 0.9]]), "token_truncate", None, 3.0)
    assert found["outside_clip"] == 0.5


def test_tokens_vllm_could_not_score_are_left_out_and_correction_off_is_not_measured():
    found = check.measure(batch([[0.2, 0.2], [0.2, 0.2]], nan_at=(0, 1)), "sequence_mask", None, 3.0)
    assert found["tokens"] == 3 and abs(found["gap_max"] - 0.2) < 1e-6 and math.isfinite(found["gap_mean"])
    assert check.measure({"completion_mask": torch.ones(1, 2)}, "sequence_mask", None, 3.0) is None


def test_causes_name_what_the_config_sets():
    args = SimpleNamespace(top_k=20, top_p=0.9, min_p=0.0)
    causes = check.likely_causes(args, dropout=0.05)
    assert "top_k=20" in causes and "top_p=0.9" in causes and "min_p" not in causes
    assert "lora_dropout 0.05" in causes and "stale weight sync" in causes and "dtype" in causes
    plain = check.likely_causes(SimpleNamespace(top_k=0, top_p=1.0, min_p=0.0))
    assert "truncation" not in plain and "lora_dropout" not in plain


def test_a_large_gap_warns_once_and_health_json_keeps_the_verdict(tmp_path, capsys):
    args = SimpleNamespace(vllm_importance_sampling_mode="sequence_mask", vllm_importance_sampling_clip_min=None,
                           vllm_importance_sampling_clip_max=3.0, top_k=50, top_p=1.0, min_p=0.0,
                           output_dir=str(tmp_path))
    outputs = [batch([[1e-7, 1e-7]]), batch([[0.4, 0.9]]), batch([[0.4, 0.9]]), batch([[5.0, 5.0]])]
    trainer = SimpleNamespace(args=args, model=torch.nn.Linear(1, 1), state=SimpleNamespace(global_step=0),
                              accelerator=SimpleNamespace(is_main_process=True, unwrap_model=lambda m: m),
                              _generate_and_score_completions=lambda inputs: outputs.pop(0))
    gap = check.SamplerGapCheck(trainer)
    for step in range(4):
        trainer.state.global_step = step
        trainer._generate_and_score_completions(None)
    err = capsys.readouterr().err
    assert err.count("vllm sampler gap at step") == check.FIRST_BATCHES == 3  # the first batches only
    assert err.count("warning: vLLM and the trainer disagree") == 1 and "top_k=50" in err
    (tmp_path / "health.json").write_text(json.dumps({"verdict": "learning"}))
    gap.on_train_end(args, SimpleNamespace(), None)
    written = json.loads((tmp_path / "health.json").read_text())
    assert written["verdict"] == "learning" and written["sampler_gap"]["large"] is True
    assert [b["step"] for b in written["sampler_gap"]["batches"]] == [0, 1, 2]
    assert abs(written["sampler_gap"]["gap_max"] - 0.9) < 1e-6 and "top_k=50" in written["sampler_gap"]["fix"]
