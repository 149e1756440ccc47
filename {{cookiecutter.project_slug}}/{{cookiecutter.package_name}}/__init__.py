"""GRPO fine-tuning on the {{ cookiecutter.task }} task: data, rewards, model loading and a tiny smoke model."""
