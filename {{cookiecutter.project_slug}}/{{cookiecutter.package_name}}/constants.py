"""Names and numbers every layer may import: the model backends, the audit's default limits and the units of the
memory estimate. With ``settings.py`` (the defaults table) and ``files.py`` (atomic writes), the ground floor: it
imports nothing of the project. Stdlib only."""

BACKENDS = ("trl", "unsloth")  # model_backend: transformers + PEFT, or Unsloth's FastLanguageModel (GPU only)

# The verifier audit's defaults (audit.py): the config's audit_rows, audit_max_false_negative, audit_max_false_positive
AUDIT_ROWS = 64
AUDIT_MAX_FALSE_NEGATIVE = 0.05
AUDIT_MAX_FALSE_POSITIVE = 0.05

# Units of the memory estimate (preflight/)
GIB = float(2**30)
NF4_BYTES_PER_PARAM = 0.56  # 4-bit NF4 weights with their quantization constants
