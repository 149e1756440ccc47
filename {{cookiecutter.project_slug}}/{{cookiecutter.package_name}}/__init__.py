"""GRPO fine-tuning on one verifiable task: data, rewards, model loading and a tiny smoke model."""

DEFAULT_CONFIG = "configs/{{ cookiecutter.gpu }}.yaml"  # the GPU preset this project was generated for
