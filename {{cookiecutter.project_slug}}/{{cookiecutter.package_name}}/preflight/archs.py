"""Architecture facts the memory estimate needs: the presets' default models (published config.json values), or any
model's config.json. Also the config readers the estimator and the doctor share."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LINEAR_LAYERS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

# Published config.json values (Hugging Face model repositories). kv bytes per token = 2 x layers x kv_heads x
# head_dim x 2: Qwen2.5 0.5B/1.5B/3B/7B = 12/28/36/56 KiB, Qwen3 0.6B/1.7B = 112, 4B/8B = 144, Llama-3.2-1B 32,
# Llama-3.2-3B 112, Llama-3.1-8B 128 (checked in tests/test_memory.py).
_QWEN2 = {"model_type": "qwen2", "vocab_size": 151936, "head_dim": 128, "attention_bias": True,
          "max_position_embeddings": 32768}
_QWEN3 = {"model_type": "qwen3", "vocab_size": 151936, "head_dim": 128, "num_key_value_heads": 8,
          "max_position_embeddings": 40960}
_LLAMA3 = {"model_type": "llama", "vocab_size": 128256, "num_key_value_heads": 8, "head_dim": 128,
           "max_position_embeddings": 131072}
KNOWN_MODELS: dict[str, dict[str, Any]] = {
    "Qwen/Qwen2.5-0.5B-Instruct": {**_QWEN2, "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                                   "num_attention_heads": 14, "num_key_value_heads": 2, "head_dim": 64,
                                   "tie_word_embeddings": True},
    "Qwen/Qwen2.5-1.5B-Instruct": {**_QWEN2, "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
                                   "num_attention_heads": 12, "num_key_value_heads": 2, "tie_word_embeddings": True},
    "Qwen/Qwen2.5-3B-Instruct": {**_QWEN2, "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
                                 "num_attention_heads": 16, "num_key_value_heads": 2, "tie_word_embeddings": True},
    "Qwen/Qwen2.5-7B-Instruct": {**_QWEN2, "vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944,
                                 "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                                 "tie_word_embeddings": False},
    "Qwen/Qwen3-0.6B": {**_QWEN3, "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
                        "num_attention_heads": 16, "tie_word_embeddings": True},
    "Qwen/Qwen3-1.7B": {**_QWEN3, "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 28,
                        "num_attention_heads": 16, "tie_word_embeddings": True},
    "Qwen/Qwen3-4B": {**_QWEN3, "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
                      "num_attention_heads": 32, "tie_word_embeddings": True},
    "Qwen/Qwen3-8B": {**_QWEN3, "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
                      "num_attention_heads": 32, "tie_word_embeddings": False},
    "meta-llama/Llama-3.2-1B-Instruct": {**_LLAMA3, "hidden_size": 2048, "intermediate_size": 8192,
                                         "num_hidden_layers": 16, "num_attention_heads": 32, "head_dim": 64,
                                         "tie_word_embeddings": True},
    "meta-llama/Llama-3.2-3B-Instruct": {**_LLAMA3, "hidden_size": 3072, "intermediate_size": 8192,
                                         "num_hidden_layers": 28, "num_attention_heads": 24,
                                         "tie_word_embeddings": True},
    "meta-llama/Llama-3.1-8B-Instruct": {**_LLAMA3, "hidden_size": 4096, "intermediate_size": 14336,
                                         "num_hidden_layers": 32, "num_attention_heads": 32,
                                         "tie_word_embeddings": False},
}
# Same architecture under another name (base models, Qwen2 = Qwen2.5 shapes, Qwen3 "-Base").
_ALIASES = {"qwen2-7b": "qwen2.5-7b", "qwen2-1.5b": "qwen2.5-1.5b", "qwen2-0.5b": "qwen2.5-0.5b"}


class EstimateError(ValueError):
    """The estimate cannot be made (unknown model, unreadable config); the message is one line."""


@dataclass(frozen=True)
class Arch:
    """The architecture facts the estimate needs, from a config.json."""

    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    attention_bias: bool = False
    qk_norm: bool = False
    checkpoint_bytes: int = 2  # dtype the checkpoint is stored in (vLLM loads this one)
    max_position: int = 0  # the model's full context (max_position_embeddings); vLLM's default max_model_len

    @property
    def embedding_params(self) -> int:
        """Input embedding plus the LM head when it is not tied to it."""
        return self.vocab * self.hidden * (1 if self.tied else 2)

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer of one decoder layer, by its usual module name."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        h, i = self.hidden, self.intermediate
        return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
                "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}

    @property
    def layer_params(self) -> int:
        shapes = self.linear_shapes()
        linear = sum(a * b for a, b in shapes.values())
        bias = (shapes["q_proj"][1] + 2 * shapes["k_proj"][1]) if self.attention_bias else 0
        norms = 2 * self.hidden + (2 * self.head_dim if self.qk_norm else 0)
        return linear + bias + norms

    @property
    def params(self) -> int:
        return self.layers * self.layer_params + self.embedding_params + self.hidden

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes per token in 16-bit: keys and values of every layer."""
        return 2 * self.layers * self.kv_heads * self.head_dim * 2

    def lora_params(self, r: int, targets: list[str]) -> int:
        """Trainable LoRA parameters: r x (in + out) for every targeted linear layer."""
        per_layer = sum(r * (a + b) for name, (a, b) in self.linear_shapes().items() if name in targets)
        head = r * (self.hidden + self.vocab) if "lm_head" in targets else 0
        return self.layers * per_layer + head


def arch_from_config(config: dict[str, Any], name: str = "model") -> Arch:
    """Read the architecture from a config.json dict (a multimodal config's ``text_config`` is used)."""
    cfg = config.get("text_config") or config
    try:
        hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        model_type = str(cfg.get("model_type", config.get("model_type", "")))
        dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or config.get("torch_dtype") or "bfloat16")
        return Arch(
            name=name,
            hidden=hidden,
            intermediate=int(cfg["intermediate_size"]),
            layers=int(cfg["num_hidden_layers"]),
            heads=heads,
            kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            vocab=int(cfg["vocab_size"]),
            tied=bool(cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", False))),
            attention_bias=bool(cfg.get("attention_bias", model_type == "qwen2")),
            qk_norm=model_type.startswith("qwen3"),
            checkpoint_bytes=4 if dtype in ("float32", "torch.float32") else 2,
            max_position=int(cfg.get("max_position_embeddings") or 0),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise EstimateError(f"{name}: config.json lacks a usable {error} (need hidden_size, intermediate_size, "
                            "num_hidden_layers, num_attention_heads, vocab_size)") from None


def _short(name: str) -> str:
    base = name.rstrip("/").rsplit("/", 1)[-1].lower()
    base = re.sub(r"-(instruct|base|it|chat)$", "", base)
    return _ALIASES.get(base, base)


def read_model_config(path: str | Path) -> dict[str, Any]:
    """A config.json, or a model folder that holds one."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise EstimateError(f"cannot read model config {path}: {error}") from None


def resolve_arch(model_name: str, model_config: dict[str, Any] | None = None) -> Arch:
    """The architecture of ``model_name``: the given config.json, a local folder's, or the shipped facts."""
    if model_config is not None:
        return arch_from_config(model_config, model_name)
    if model_name and (Path(model_name) / "config.json").is_file():
        return arch_from_config(read_model_config(model_name), model_name)
    wanted = _short(model_name or "")
    for known, facts in KNOWN_MODELS.items():
        if known.lower() == (model_name or "").lower() or _short(known) == wanted:
            return arch_from_config(facts, model_name)
    raise EstimateError(
        f"no architecture facts for model {model_name!r}: pass --model_config path/to/config.json "
        f"(known: {', '.join(KNOWN_MODELS)})"
    )


def gpu_gb_from_preset(name: str | Path) -> float | None:
    """GPU memory per device named by a preset file (``24gb`` -> 24, ``40-48gb`` -> 40, ``8x80gb`` -> 80).

    None for ``cpu-only`` and for names that carry no size.
    """
    stem = Path(name).stem.lower()
    match = re.fullmatch(r"(?:\d+x)?(\d+)(?:-\d+)?gb", stem)
    return float(match.group(1)) if match else None


def load_config(path: str | Path) -> dict[str, Any]:
    """The YAML config train.py reads, as a dict (settings.read_yaml); a bad file is an EstimateError line."""
    from ..settings import ConfigError, read_yaml

    try:
        return read_yaml(path)
    except ConfigError as error:
        raise EstimateError(str(error)) from None

