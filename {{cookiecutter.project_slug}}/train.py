"""GRPO training with TRL's GRPOTrainer; the recipe is ``<package>/training/train.py``, the settings
``<package>/config.py``.

    python train.py                                   # the project's default GPU preset
    python train.py --config configs/24gb.yaml        # another GPU preset
    python train.py --config configs/smoke.yaml       # tiny random model on the smoke curriculum, CPU, 1-2 min
    python train.py --config configs/24gb.yaml --learning_rate 5e-6 --max_steps 200   # CLI overrides win

Every hyperparameter lives in the YAML config: GRPOConfig fields, TRL's ModelConfig fields, the script arguments
and the task's own settings. Training resumes from the last complete checkpoint in ``output_dir`` when there is
one; a rerun of a finished run says so and does nothing.
"""

import importlib

PACKAGE = "{{ cookiecutter.package_name }}"

if __name__ == "__main__":
    importlib.import_module(f"{PACKAGE}.commands").train()  # Unsloth loads before trl when the config uses it
