"""A config mistake is refused before torch and TRL load (``known.refuse_early``), with the very line the parser
gives later: the names and types read from the installed sources are the parser's own, and the real train.py imports
no torch to refuse a misspelt option (test_bad_input checks each case of its table gets the parser's line early)."""

import subprocess
import sys
from pathlib import Path

import pytest
from _pkg import PKG, mod

known, config = mod("known"), mod("config")
ROOT = Path(__file__).resolve().parent.parent
PROBES = [True, 0, 1, -2, 1.5, "x", "1", "1e-5", ["a"], [1.0], ["a", 1], None, {"a": 1}]


def test_the_names_and_types_are_the_parsers():
    """Read from the sources of the TRL and transformers installed here: a version that moves a class where this
    reading cannot follow fails here (the early check would then stand aside), never drifts silently."""
    hints = known.field_hints()
    assert set(hints) | known.ARGPARSE == {action.dest for action in config.parser()._actions}
    real = config.field_hints()
    disagree = [(key, value) for key in real for value in PROBES
                if known._type_problem(hints[key], value) != config._type_problem(real[key], value)]
    assert not disagree, disagree


def test_a_typo_is_refused_before_torch_is_imported():
    done = subprocess.run([sys.executable, "-X", "importtime", "train.py", "--config", "configs/smoke.yaml",
                           "--max_stepz", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1
    assert lines[-1].startswith("error: unknown option --max_stepz (did you mean --max_steps?)"), lines[-1]
    imported = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")}
    assert f"{PKG}.known" in imported and not {"torch", "transformers", "trl"} & imported


def test_the_error_holds_its_setting_as_data(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "configs" / "smoke.yaml").read_text(encoding="utf-8") + "learning_rat: 0.1\n")
    for argv, key in ((["--config", "configs/smoke.yaml", "--max_completion_length", "0"], "max_completion_length"),
                      (["--config", "configs/smoke.yaml", "--max_stepz", "1"], "max_stepz"),
                      (["--config", str(bad)], "learning_rat")):
        with pytest.raises(known.ConfigError) as error:
            known.refuse_early(argv)
        assert error.value.key == key and str(error.value).count(key) >= 1
