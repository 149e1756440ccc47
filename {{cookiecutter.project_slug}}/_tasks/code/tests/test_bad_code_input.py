"""The code task's own bad input, one line each before anything expensive: sandbox settings are refused while the
config parses (not ~20 s in, when the sandbox starts), and a ``tests`` column that is not a non-empty list of test
snippets is refused by row (it used to train with correctness always 0)."""

import json

import pytest
from conftest import sample_rows

SANDBOX_CASES = {
    "isolation maybe": ({"sandbox_isolation": "maybe"}, ["sandbox_isolation", "'maybe'", "unsafe-rlimit-only"]),
    "negative timeout": ({"sandbox_timeout_s": -1}, ["sandbox_timeout_s", "positive"]),
    "zero timeout": ({"sandbox_timeout_s": 0}, ["sandbox_timeout_s", "positive"]),
    "tiny memory": ({"sandbox_memory_mb": 8}, ["sandbox_memory_mb", "at least 32"]),
    "timeout as a word": ({"sandbox_timeout_s": "soon"}, ["sandbox_timeout_s", "a number", "'soon'"]),
}


@pytest.mark.parametrize("case", SANDBOX_CASES, ids=list(SANDBOX_CASES))
def test_bad_sandbox_settings_are_refused_before_the_data_loads(run_cli, case):
    settings, words = SANDBOX_CASES[case]
    message = run_cli(settings=settings)
    assert all(word in message for word in words), message


def test_bad_sandbox_option_on_the_command_line(run_cli):
    message = run_cli(argv=["--sandbox_isolation", "maybe"])
    assert "sandbox_isolation" in message and "'maybe'" in message


TESTS_VALUES = {  # the same bad value in every row: the file loads, the row contract refuses it
    "a number": (5, "got 5 (int)"),
    "text that is not JSON": ("assert f(1) == 2", "a string that is not a JSON list"),
    "a dict": ({"assert f(1) == 2": True}, "(dict)"),
    "a list of ints": ([1, 2], "got an item 1 (int)"),
    "an empty list": ([], "is an empty list"),
    "null": (None, "is missing (null)"),
}


@pytest.mark.parametrize("case", TESTS_VALUES, ids=list(TESTS_VALUES))
def test_a_tests_column_that_is_not_test_snippets_is_refused(run_cli, case):
    value, words = TESTS_VALUES[case]
    rows = [{**row, "tests": value} for row in sample_rows()]
    message = run_cli(rows=rows, stage="data")
    assert "row 1: tests" in message and words in message and f"{len(rows)} of {len(rows)} rows" in message, message


def test_a_csv_tests_cell_must_hold_a_json_list(run_cli):
    rows = sample_rows()
    lines = ["question,tests"] + [f'"{row["question"]}","{json.dumps(row["tests"]).replace(chr(34), chr(34) * 2)}"'
                                  for row in rows]
    lines[2] = f'"{rows[1]["question"]}","assert is_even(4)"'  # a snippet, not a JSON list of snippets
    message = run_cli(raw="\n".join(lines).encode(), suffix=".csv", stage="data")
    assert "row 2: tests" in message and "not a JSON list" in message, message
