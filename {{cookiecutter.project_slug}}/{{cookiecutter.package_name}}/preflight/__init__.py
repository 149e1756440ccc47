"""Fit and pre-flight checks: will this config fit the GPU, and is this machine ready to train it.

- ``doctor.py``: the pre-flight check, one line per check with its fix (``python -m <package>.preflight.doctor``);
  ``doctor_report.py`` its report, ``doctor_sources.py`` its model and dataset checks, ``multinode.py`` its
  multi-node checks, ``machine.py`` the facts it reads from the machine
- ``memory.py``: the GPU memory estimate, its advice and the start-up check (``python -m <package>.preflight.memory``)
- ``estimator.py``: the estimate's model; ``activation_memory.py`` its activation and logits terms,
  ``vllm_memory.py`` colocated vLLM's share, ``archs.py`` the architecture facts it needs
- ``launch.py``: how the run is launched (processes, sharding), read from the launcher

Nothing is imported here.
"""
