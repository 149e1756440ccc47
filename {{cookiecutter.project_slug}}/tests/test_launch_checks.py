"""Launch-dependent refusals and the verified final save (no GPU needed: the launch is read from the environment)."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from _pkg import PKG, mod

distributed = mod("training.distributed")
ROOT = Path(__file__).resolve().parent.parent

DDP = {"WORLD_SIZE": "8", "LOCAL_RANK": "3", "ACCELERATE_MIXED_PRECISION": "bf16"}
ZERO3 = {**DDP, "ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3"}
FSDP = {**DDP, "ACCELERATE_USE_FSDP": "true"}


def args(tmp_path, **overrides):
    model = {"use_peft": False, "load_in_4bit": False, "dtype": "bfloat16", **overrides.pop("model", {})}
    training = {"learning_rate": 2e-6, "output_dir": str(tmp_path / "run"), "deepspeed": None, "fsdp": None,
                "bf16": True, "fp16": False, **overrides.pop("training", {})}
    script = {"format_priming_steps": 0, **overrides.pop("script", {})}
    return SimpleNamespace(**script), SimpleNamespace(**training), SimpleNamespace(**model)


def test_launch_env_reads_accelerate_variables(tmp_path):
    assert distributed.launch_env({}) == distributed.LaunchEnv()
    zero3 = distributed.launch_env(ZERO3)
    assert (zero3.world_size, zero3.local_rank, zero3.deepspeed, zero3.zero_stage) == (8, 3, True, 3)
    ds_file = tmp_path / "ds.json"
    ds_file.write_text('{"zero_optimization": {"stage": 2}}')
    from_file = distributed.launch_env({"ACCELERATE_USE_DEEPSPEED": "true",
                                        "ACCELERATE_DEEPSPEED_CONFIG_FILE": str(ds_file)})
    assert from_file.zero_stage == 2
    fsdp = distributed.launch_env(FSDP)
    assert fsdp.fsdp and not fsdp.deepspeed and fsdp.keeps_fp32_master_weights


@pytest.mark.parametrize("environ", [{}, DDP])
def test_bf16_full_finetune_without_master_weights_is_refused(tmp_path, environ):
    script, training, model = args(tmp_path)
    with pytest.raises(ValueError, match="use_peft: false.*bfloat16.*round away") as error:
        distributed.check_launch(script, training, model, environ)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("environ", [ZERO3, FSDP, {**DDP, "ACCELERATE_USE_DEEPSPEED": "true",
                                                   "ACCELERATE_DEEPSPEED_ZERO_STAGE": "2"}])
def test_bf16_full_finetune_under_sharded_optimizers_is_allowed(tmp_path, environ):
    distributed.check_launch(*args(tmp_path), environ)


@pytest.mark.parametrize("model", [{"dtype": "float32"}, {"use_peft": True}, {"load_in_4bit": True, "use_peft": True}])
def test_fp32_or_lora_is_allowed_under_plain_ddp(tmp_path, model):
    distributed.check_launch(*args(tmp_path, model=model), DDP)


def test_unset_dtype_full_finetune_is_refused(tmp_path):  # "auto" loads most checkpoints in bf16
    with pytest.raises(ValueError, match="dtype auto"):
        distributed.check_launch(*args(tmp_path, model={"dtype": None}), {})


def test_fsdp_without_mixed_precision_keeps_16bit_weights(tmp_path):
    no_mixed = {**FSDP, "ACCELERATE_MIXED_PRECISION": "no"}
    with pytest.raises(ValueError, match="round away"):
        distributed.check_launch(*args(tmp_path, training={"bf16": False}), no_mixed)


@pytest.mark.parametrize(("environ", "why"), [(DDP, "8 processes"),
                                              ({"ACCELERATE_USE_DEEPSPEED": "true",
                                                "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3"}, "ZeRO-3")])
def test_priming_under_several_processes_or_zero3_is_refused(tmp_path, environ, why):
    fp32 = {"model": {"dtype": "float32"}, "script": {"format_priming_steps": 20}}
    with pytest.raises(ValueError, match=f"format priming cannot run under .*{why}") as error:
        distributed.check_launch(*args(tmp_path, **fp32), environ)
    message = str(error.value)
    assert f"python -m {PKG}.training.priming --config" in message
    assert str(tmp_path / "run" / "format-primed") in message and "\n" not in message


def test_priming_already_done_is_reused_under_several_processes(tmp_path):
    fp32 = {"model": {"dtype": "float32"}, "script": {"format_priming_steps": 20}}
    script, training, model = args(tmp_path, **fp32)
    distributed.check_launch(script, training, model, {})  # one process primes in place: allowed
    primed = tmp_path / "run" / "format-primed"
    primed.mkdir(parents=True)
    (primed / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="format priming cannot run"):  # a config alone is no primed model
        distributed.check_launch(script, training, model, ZERO3)
    for name in ("tokenizer_config.json", "model.safetensors"):
        (primed / name).write_text("{}")
    distributed.check_launch(script, training, model, ZERO3)


def test_device_map_per_rank():
    single, ddp, zero3, fsdp = (distributed.launch_env(e) for e in ({}, DDP, ZERO3, FSDP))
    assert distributed.device_map(single, "unsloth") == "default"
    assert distributed.device_map(single, "transformers") == "default"
    assert distributed.device_map(ddp, "unsloth") == {"": 3}
    assert distributed.device_map(fsdp, "unsloth") == {"": 3}
    assert distributed.device_map(zero3, "unsloth") == "default"  # ZeRO-3 places the weights itself
    assert distributed.device_map(fsdp, "transformers") is None  # never "auto" over every GPU
    assert distributed.device_map(ddp, "transformers", quantized=True) == {"": 3}


def test_fsdp_config_checkpoints_sharded():
    config = yaml.safe_load((ROOT / "configs" / "accelerate" / "fsdp.yaml").read_text())
    assert config["fsdp_config"]["fsdp_state_dict_type"] == "SHARDED_STATE_DICT"


class FakePlugin:
    def __init__(self, state_dict_type):
        self.state_dict_type = state_dict_type

    def set_state_dict_type(self, state_dict_type):
        self.state_dict_type = f"StateDictType.{state_dict_type}"


class FakeTrainer:
    """transformers 5.24's save_model under FSDP: writes only when the state dict type is FULL_STATE_DICT."""

    def __init__(self, fsdp, main=True, state_dict_type="StateDictType.SHARDED_STATE_DICT", writes=True):
        self.is_fsdp_enabled = fsdp
        self.writes = writes
        self.printed = []
        self.accelerator = SimpleNamespace(is_main_process=main, print=self.printed.append,
                                           state=SimpleNamespace(fsdp_plugin=FakePlugin(state_dict_type)))

    def save_model(self, output_dir):
        if self.is_fsdp_enabled and "FULL_STATE_DICT" not in str(self.accelerator.state.fsdp_plugin.state_dict_type):
            return
        if self.writes and self.accelerator.is_main_process:
            Path(output_dir).mkdir(parents=True, exist_ok=True)
            (Path(output_dir) / "model.safetensors").write_bytes(b"weights")


def test_final_save_under_fsdp_switches_to_a_full_state_dict(tmp_path):
    trainer = FakeTrainer(fsdp=True)
    assert distributed.save_final_model(trainer, tmp_path / "out") == ["model.safetensors"]
    assert "FULL_STATE_DICT" in trainer.accelerator.state.fsdp_plugin.state_dict_type
    assert trainer.printed and "model saved" in trainer.printed[0]


def test_final_save_that_wrote_nothing_is_an_error_not_model_saved(tmp_path):
    trainer = FakeTrainer(fsdp=False, writes=False)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "config.json").write_text("{}")  # a config without weights is not a model
    with pytest.raises(distributed.SaveError, match="no model weights"):
        distributed.save_final_model(trainer, tmp_path / "out")
    assert trainer.printed == []


def test_final_save_on_other_ranks_checks_nothing(tmp_path):
    assert distributed.save_final_model(FakeTrainer(fsdp=True, main=False), tmp_path / "out") == []


def test_saved_model_files(tmp_path):
    assert distributed.saved_model_files(tmp_path) == []
    (tmp_path / "adapter_model.safetensors").write_bytes(b"x")
    shards = {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": shards}))
    (tmp_path / shards["a"]).write_bytes(b"x")
    assert distributed.saved_model_files(tmp_path) == []  # an index whose shards are not all there: cut short
    (tmp_path / shards["b"]).write_bytes(b"x")
    assert distributed.saved_model_files(tmp_path) == ["adapter_model.safetensors", "model.safetensors.index.json"]


def test_lora_under_zero3_checkpointing_reaches_the_model_reentrant(tmp_path):
    """TRL 1.16 forces use_reentrant=True on gradient_checkpointing_kwargs for LoRA + ZeRO-3, but transformers 5.2x's
    Trainer enables checkpointing from activation_checkpointing_kwargs: train.py sets the name the Trainer reads."""
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import GRPOConfig

    def trl_forces_reentrant(config):  # what GRPOTrainer.__init__ does for PEFT + ZeRO-3 + checkpointing
        config.gradient_checkpointing_kwargs = config.gradient_checkpointing_kwargs or {}
        config.gradient_checkpointing_kwargs["use_reentrant"] = True

    # transformers 5.2x renamed gradient to activation checkpointing; 5.17 (the Unsloth stack) has only the old name
    renamed = "activation_checkpointing" in GRPOConfig.__dataclass_fields__
    name = "activation_checkpointing" if renamed else "gradient_checkpointing"

    def new_config():
        return GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **{name: True})

    if renamed:
        dropped = new_config()
        trl_forces_reentrant(dropped)
        assert not (dropped.activation_checkpointing_kwargs or {}).get("use_reentrant")  # the defect, upstream
    config = new_config()
    distributed.reentrant_checkpointing(config, peft=True, launch=distributed.launch_env(ZERO3))
    trl_forces_reentrant(config)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1))
    getattr(model, f"{name}_enable")(**{f"{name}_kwargs": dict(getattr(config, f"{name}_kwargs"))})
    assert model.model.layers[0]._gradient_checkpointing_func.keywords == {"use_reentrant": True}
    for peft, environ in ((False, ZERO3), (True, DDP)):  # only LoRA under ZeRO-3 needs it
        untouched = new_config()
        distributed.reentrant_checkpointing(untouched, peft=peft, launch=distributed.launch_env(environ))
        assert getattr(untouched, f"{name}_kwargs") is None
