"""The code task's rewards: extraction, syntax credit, and correctness through the sandbox."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from _pkg import mod

sandbox = mod("sandbox")
code_task = mod("rewards.task")
rewards = mod("rewards")

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample.jsonl"
TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(0, 0) == 0"]


def wrap(code: str, fence: str = "python") -> str:
    return f"<reasoning>\nAdd the numbers.\n</reasoning>\n<answer>\n```{fence}\n{code}\n```\n</answer>"


def _isolation() -> str:
    """bubblewrap where it runs (CI requires it); else, explicitly, the unsafe mode (these programs are benign)."""
    if shutil.which("bwrap") or os.environ.get("GRPO_REQUIRE_BWRAP") == "1":
        return "bwrap"
    return "unsafe-rlimit-only"


BUILT: dict[str, object] = {}  # the module's correctness reward, bound to its own sandbox by the fixture


@pytest.fixture(autouse=True, scope="module")
def _sandbox():
    box = sandbox.Sandbox(sandbox.SandboxConfig(isolation=_isolation(), timeout_s=1.5, memory_mb=256, workers=2))
    BUILT["correctness"] = code_task.make_correctness(box)
    yield box
    box.close()


def correctness_reward(**kwargs) -> list[float | None]:
    return BUILT["correctness"](**kwargs)


def score(completions: list, tests: list | None = None, **kw) -> list[float | None]:
    n = len(completions)
    return correctness_reward(prompts=["p"] * n, completions=completions, tests=[tests or TESTS] * n, **kw)


def test_registry_names() -> None:
    assert rewards.REWARD_FUNCS["syntax"].__name__ == "syntax"
    assert "correctness" in rewards.reward_names() and "correctness" not in rewards.REWARD_FUNCS  # built per run
    assert BUILT["correctness"].__name__ == "correctness"


def test_each_run_gets_a_sandbox_with_its_own_settings() -> None:
    """The factory binds the config's sandbox_* settings; two runs share no sandbox and no setting."""
    task = mod("task")
    built = []
    for timeout, memory in ((1.25, 200), (2.5, 300)):
        settings = rewards.RewardSettings(
            64, task.TaskArguments(sandbox_isolation=_isolation(), sandbox_timeout_s=timeout, sandbox_memory_mb=memory)
        )
        built.append(rewards.build_reward("correctness", settings))
    try:
        first, second = built
        assert first.sandbox is not second.sandbox
        assert (first.sandbox.config.timeout_s, first.sandbox.config.memory_mb) == (1.25, 200)
        assert (second.sandbox.config.timeout_s, second.sandbox.config.memory_mb) == (2.5, 300)
        right = wrap("def add(a, b):\n    return a + b")
        assert first(completions=[right], tests=[TESTS]) == second(completions=[right], tests=[TESTS]) == [1.0]
    finally:
        for reward in built:
            reward.close()


def test_factory_binds_its_own_sandbox(_sandbox) -> None:
    reward = code_task.make_correctness(_sandbox)
    assert reward.__name__ == "correctness"
    right, wrong = wrap("def add(a, b):\n    return a + b"), wrap("def add(a, b):\n    return a - b")
    assert reward(completions=[right, wrong], tests=[TESTS, TESTS]) == [1.0, pytest.approx(1 / 3)]


def test_extraction_edge_fences() -> None:
    code = "def add(a, b):\n    return a + b"
    cases = [
        wrap(code, fence="py3"),
        wrap(code, fence="python3"),
        "\ufeff" + wrap(code),  # a byte-order mark before the completion
        wrap("\ufeff" + code),  # ... or before the code
        f"<reasoning>x</reasoning>\n<answer>\n```python\n{code}\n",  # the last fence left open
        f"Here it is:\n```py3\n{code}",  # open fence, no answer block
    ]
    for text in cases:
        assert code_task.extract_code(text) == code, repr(text)
    assert score(cases) == [1.0] * len(cases)
    # An open fence does not swallow a closed block before it, and closed fences still end the code.
    assert code_task.extract_code(f"```python\n{code}\n```\ntrailing words") == code


def test_right_wrong_partial() -> None:
    right = wrap("def add(a, b):\n    return a + b")
    wrong = wrap("def add(a, b):\n    return a - b")
    partial = wrap("def add(a, b):\n    return a + b if a >= 0 else 99")
    assert score([right, wrong, partial]) == [1.0, pytest.approx(1 / 3), pytest.approx(2 / 3)]


def test_repeats_run_once_and_share_their_score(_sandbox) -> None:
    """A GRPO group's identical completions of one row run once; the same code for another row runs on its own."""
    sizes = []

    class Counting:
        def run_batch(self, jobs):
            sizes.append(len(jobs))
            return _sandbox.run_batch(jobs)

    reward = code_task.make_correctness(Counting())
    right, wrong = wrap("def add(a, b):\n    return a + b"), wrap("def add(a, b):\n    return a - b")
    completions = [right, wrong, right, right, right]
    tests = [TESTS] * 4 + [["assert add(1, 2) == -1"]]
    assert reward(prompts=["p"] * 5, completions=completions, tests=tests) == [1.0, pytest.approx(1 / 3), 1.0, 1.0, 0.0]
    assert sizes == [3]


def test_malformed_empty_and_no_code() -> None:
    completions = [
        wrap("def add(a, b)\n    return a + b"),  # syntax error
        "",
        "<reasoning>I think the answer is 3.</reasoning><answer>3</answer>",  # bare answer, not code
        "no tags and no code at all",
        None,
        42,
        [{"role": "assistant", "content": None}],
    ]
    assert score(completions) == [0.0] * len(completions)
    assert code_task.syntax_reward(completions=completions) == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_both_completion_forms_and_fences() -> None:
    code = "def add(a, b):\n    return a + b"
    completions = [
        wrap(code),
        [{"role": "assistant", "content": wrap(code, fence="py")}],
        wrap(code, fence=""),
        f"```python\n{code}\n```",  # no answer block: last fenced block of the completion
        f"<answer>\n{code}\n</answer>",  # bare answer block text
        wrap("def add(a, b):\n    return 0") + "\n" + wrap(code),  # the last answer block counts
    ]
    assert score(completions) == [1.0] * len(completions)
    assert code_task.syntax_reward(completions=completions) == [1.0] * len(completions)


def test_last_block_inside_answer_wins() -> None:
    text = (
        "<reasoning>```python\ndef add(a, b):\n    return a + b\n```</reasoning>"
        "<answer>```python\nprint('draft')\n```\n```python\ndef add(a, b):\n    return a * b\n```</answer>"
    )
    assert code_task.extract_code(text) == "def add(a, b):\n    return a * b"
    assert score([text]) == [pytest.approx(1 / 3)]  # only add(0, 0) == 0 holds for a * b


def test_hacks_get_nothing() -> None:
    hacks = [
        wrap("import sys\nprint('3 passed')\nsys.exit(0)"),
        wrap("import os\nos._exit(0)"),
        wrap("raise SystemExit(0)"),
        wrap("def add(a, b):\n    import os\n    os._exit(0)"),
        wrap("while True:\n    pass"),
        wrap("import builtins\nbuiltins.bool = lambda *a: True\ndef add(a, b):\n    return 99"),
        wrap("class E:\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return E()"),
    ]
    assert score(hacks) == [0.0] * len(hacks)


# A HumanEval-style row (HumanEval/38): the prompt defines a helper the tests call, and the target's signature.
CYCLIC_PROMPT = (
    "def encode_cyclic(s: str):\n"
    "    groups = [s[(3 * i):min((3 * i + 3), len(s))] for i in range((len(s) + 2) // 3)]\n"
    "    groups = [(group[1:] + group[0]) if len(group) == 3 else group for group in groups]\n"
    "    return ''.join(groups)\n\n\n"
    "def decode_cyclic(s: str):\n"
    '    """takes as input string encoded with encode_cyclic function. Returns decoded string."""\n'
)
CYCLIC_TESTS = [
    "def check(candidate):\n    for s in ('abcdefg', 'hello world', 'xy'):\n"
    "        assert candidate(encode_cyclic(s)) == s\ncheck(decode_cyclic)"
]


def test_helpers_of_the_prompt_cannot_be_redefined() -> None:
    """The tests call the prompt's ``encode_cyclic``: a solution that redefines it (and its target) as the identity
    scores 0, as it did 1; right solutions score 1 with or without their own copy of the helper."""
    identity = "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s"
    right = "def decode_cyclic(s):\n    return encode_cyclic(encode_cyclic(s))"
    alone = (
        "def decode_cyclic(s):\n    groups = [s[3 * i:3 * i + 3] for i in range((len(s) + 2) // 3)]\n"
        "    return ''.join(g[-1] + g[:-1] if len(g) == 3 else g for g in groups)"
    )
    completions = [wrap(identity), wrap(CYCLIC_PROMPT.split("def decode")[0] + right), wrap(alone)]
    n = len(completions)
    got = correctness_reward(completions=completions, tests=[CYCLIC_TESTS] * n, entry_point=["decode_cyclic"] * n,
                             question=[CYCLIC_PROMPT] * n)  # fmt: skip
    assert got == [0.0, 1.0, 1.0]
    helpers = code_task.prompt_helpers(CYCLIC_PROMPT, "decode_cyclic")
    assert "def encode_cyclic" in helpers and "decode_cyclic" not in helpers
    fenced = f"Complete decode_cyclic:\n```python\n{CYCLIC_PROMPT}```"
    assert code_task.prompt_helpers(fenced, "decode_cyclic") == helpers
    assert code_task.prompt_helpers("Write a function add(a, b) that adds.", "add") == ""
    assert code_task.prompt_helpers("def add(a, b):\n    'Add.'", "add") == ""  # only the target: no helper


def test_contract_edges() -> None:
    right = wrap("def add(a, b):\n    return a + b")
    # Unknown kwargs are accepted; missing tests score 0; lengths always match.
    assert correctness_reward(completions=[right], completion_ids=[[1, 2]], trainer_state=None) == [0.0]
    assert correctness_reward(completions=[]) == []
    assert correctness_reward(completions=None) == []
    assert code_task.syntax_reward(completions=None) == []
    # A CSV-style JSON string of tests, and an entry point the code does not define.
    assert correctness_reward(completions=[right], tests=[json.dumps(TESTS)]) == [1.0]
    assert correctness_reward(completions=[right], tests=[TESTS], entry_point=["subtract"]) == [0.0]
    assert correctness_reward(completions=[right], tests=[TESTS], entry_point=["add"]) == [1.0]


def test_sample_gold_solutions_score_one() -> None:
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    assert len(rows) >= 20
    for row in rows:
        assert {"question", "tests", "entry_point", "solution"} <= set(row)
        assert 2 <= len(row["tests"]) <= 4 and len(row["question"].split()) < 50
        assert row["entry_point"] in row["question"]
    completions = [wrap(row["solution"]) for row in rows]
    scores = correctness_reward(
        completions=completions, tests=[r["tests"] for r in rows], entry_point=[r["entry_point"] for r in rows]
    )
    assert scores == [1.0] * len(rows)
