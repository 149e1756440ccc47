"""What model.py hands the loaders: the config's model settings, and one device per rank under a distributed launch."""

import sys
import types
from types import SimpleNamespace

import pytest
import torch
from _pkg import mod
from trl import ModelConfig

model = mod("training.model")
LAUNCH_VARS = ("WORLD_SIZE", "LOCAL_RANK", "ACCELERATE_USE_DEEPSPEED", "ACCELERATE_DEEPSPEED_ZERO_STAGE",
               "ACCELERATE_USE_FSDP", "ACCELERATE_MIXED_PRECISION")


@pytest.fixture
def launch(monkeypatch):
    for name in LAUNCH_VARS:
        monkeypatch.delenv(name, raising=False)

    def set_launch(**env):
        for name, value in env.items():
            monkeypatch.setenv(name, value)

    return set_launch


def model_args(**overrides):
    values = {"model_name_or_path": "some/model", "model_revision": "r1", "dtype": "bfloat16",
              "attn_implementation": "sdpa", "use_peft": True, "lora_r": 8, "lora_alpha": 16,
              "lora_dropout": 0.07, "lora_target_modules": ["q_proj", "v_proj"], "use_rslora": True,
              "lora_modules_to_save": ["lm_head"], **overrides}
    return ModelConfig(**values)


def training_args(**overrides):
    values = {"use_cpu": False, "max_completion_length": 256, "use_vllm": True, "vllm_gpu_memory_utilization": 0.4,
              "trust_remote_code": False, "gradient_checkpointing": True, "seed": 7, "model_init_kwargs": None,
              **overrides}
    return SimpleNamespace(**values)


@pytest.fixture
def no_tokenizer(monkeypatch):
    monkeypatch.setattr(model, "AutoTokenizer", SimpleNamespace(from_pretrained=lambda *a, **k: "tokenizer"))


def test_transformers_single_process_keeps_trl_placement(launch, no_tokenizer):
    args = training_args()
    model.load_transformers(model_args(), args)
    assert "device_map" not in args.model_init_kwargs
    assert args.model_init_kwargs["revision"] == "r1" and args.model_init_kwargs["attn_implementation"] == "sdpa"


def test_transformers_under_fsdp_never_gets_auto(launch, no_tokenizer):
    launch(WORLD_SIZE="4", LOCAL_RANK="2", ACCELERATE_USE_FSDP="true", ACCELERATE_MIXED_PRECISION="bf16")
    args = training_args()
    model.load_transformers(model_args(), args)
    assert args.model_init_kwargs["device_map"] is None  # FSDP shards from a CPU load; "auto" spans every GPU


class FakeFastLanguageModel:
    calls: dict = {}

    @classmethod
    def from_pretrained(cls, **kwargs):
        cls.calls["from_pretrained"] = kwargs
        return "model", "tokenizer"

    @classmethod
    def get_peft_model(cls, policy, **kwargs):
        cls.calls["get_peft_model"] = kwargs
        return "peft-model"


@pytest.fixture
def fake_unsloth(monkeypatch):
    if not hasattr(model, "load_unsloth"):
        pytest.skip("this project renders the trl backend; Unsloth's loader is not part of it")
    FakeFastLanguageModel.calls = {}
    monkeypatch.setitem(sys.modules, "unsloth", types.SimpleNamespace(FastLanguageModel=FakeFastLanguageModel))
    return FakeFastLanguageModel.calls


def test_unsloth_gets_the_configs_model_settings(launch, fake_unsloth):
    policy, tokenizer, peft_config = model.load_unsloth(model_args(), training_args(), 512)
    assert (policy, tokenizer, peft_config) == ("peft-model", "tokenizer", None)
    loaded = fake_unsloth["from_pretrained"]
    assert loaded["model_name"] == "some/model" and loaded["revision"] == "r1"
    assert loaded["dtype"] is torch.bfloat16 and loaded["attn_implementation"] == "sdpa"
    assert loaded["max_seq_length"] == 512 + 256 and loaded["fast_inference"] is True
    assert "device_map" not in loaded  # one process: Unsloth's own default
    peft = fake_unsloth["get_peft_model"]
    assert peft["lora_dropout"] == 0.07 and peft["r"] == 8 and peft["lora_alpha"] == 16
    assert peft["target_modules"] == ["q_proj", "v_proj"] and peft["use_rslora"] is True
    assert peft["modules_to_save"] == ["lm_head"] and peft["random_state"] == 7


def test_unsloth_auto_dtype_and_unset_attention(launch, fake_unsloth):
    model.load_unsloth(model_args(dtype="auto", attn_implementation=None), training_args(), 512)
    loaded = fake_unsloth["from_pretrained"]
    assert loaded["dtype"] is None and "attn_implementation" not in loaded


@pytest.mark.parametrize(("env", "expected"), [
    ({"WORLD_SIZE": "2", "LOCAL_RANK": "1"}, {"": 1}),
    ({"WORLD_SIZE": "4", "LOCAL_RANK": "3", "ACCELERATE_USE_FSDP": "true"}, {"": 3}),
])
def test_unsloth_puts_each_rank_on_its_own_gpu(launch, fake_unsloth, env, expected):
    launch(**env)
    model.load_unsloth(model_args(), training_args(), 512)
    assert fake_unsloth["from_pretrained"]["device_map"] == expected
