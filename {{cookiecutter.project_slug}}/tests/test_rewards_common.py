"""Shared rewards: format, format_strict, length, repetition, and the completion helpers."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml
from _pkg import mod
from conftest import sample_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

common = mod("rewards.common")
rewards = mod("rewards")
answer_format = mod("answer_format")

GOOD = "<reasoning>\n48 / 2 = 24, 48 + 24 = 72\n</reasoning>\n<answer>\n72\n</answer>"
SHARED = ["format", "format_strict", "length", "repetition"]
RANGES = {"format": (0.0, 1.0), "format_strict": (0.0, 1.0), "length": (-1.0, 0.0), "repetition": (-1.0, 0.0)}


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def shared(name: str):
    """A shared reward as a run builds it (``length`` comes from its factory)."""
    return rewards.build_reward(name, rewards.RewardSettings(256))


def test_registry_names_match_keys() -> None:
    for name, func in rewards.REWARD_FUNCS.items():
        assert func.__name__ == name
    assert set(SHARED) <= set(rewards.reward_names())
    assert "correctness" in rewards.reward_names()
    assert "length" in common.FACTORIES and "length" not in rewards.REWARD_FUNCS  # no module-level default
    for name in SHARED:
        assert shared(name).__name__ == name


def test_factory_refuses_a_name_taken_by_a_registered_reward() -> None:
    with pytest.raises(ValueError, match="registered as 'format'"):
        common.factory("format")(lambda settings: None)
    with pytest.raises(ValueError, match="registered as 'length'"):
        common.register("length")(lambda **kwargs: [])


def test_register_sets_names() -> None:
    @common.register("my_reward")
    def f(completions, **kw):
        return [0.0] * len(completions)

    try:
        assert f.__name__ == "my_reward" and f.__qualname__ == "my_reward"
        assert rewards.REWARD_FUNCS["my_reward"] is f  # registering is all it takes
    finally:
        common.REGISTRY.pop("my_reward")


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("plain", "plain"),
        (chat("hi"), "hi"),
        ([{"role": "assistant", "content": [{"type": "text", "text": "parts"}]}], "parts"),
        (None, ""),
        (5, ""),
        ({"role": "assistant"}, ""),
        ([{"role": "assistant", "content": None}], ""),
        ([1, 2], ""),
    ],
)
def test_completion_text(completion: object, expected: str) -> None:
    assert common.completion_text(completion) == expected


def test_completion_text_is_capped() -> None:
    big = "x" * (answer_format.MAX_COMPLETION_CHARS * 2)
    assert len(common.completion_text(big)) == answer_format.MAX_COMPLETION_CHARS
    assert len(common.completion_text(chat(big))) == answer_format.MAX_COMPLETION_CHARS


def test_format_rewards_on_real_looking_completions() -> None:
    fmt = rewards.REWARD_FUNCS["format"]
    strict = rewards.REWARD_FUNCS["format_strict"]
    cases = [
        GOOD,
        "<reasoning>\nthinking\n</reasoning>\n<answer>\n72\n</answer>\nHope this helps! Let me know.",
        "<reasoning>\nthinking\n</reasoning>\nThe answer is 72",
        "<answer>72</answer>",
        "The answer is 72.",
        "<answer>72</answer><reasoning>why</reasoning>",
        "",
    ]
    scores = fmt(completions=cases)
    assert scores[0] == 1.0
    assert 0.5 < scores[1] < 1.0  # trailing prose costs
    assert 0.45 < scores[2] < 0.5  # reasoning block only, then prose
    assert scores[3] == pytest.approx(0.5)  # answer block only
    assert scores[4] == 0.0 and scores[6] == 0.0
    # out of order: the answer block before reasoning earns nothing, and its 19 characters are outside the blocks
    assert scores[5] == pytest.approx(0.5 - 0.019)
    assert strict(completions=cases) == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert strict(completions=[chat(GOOD), "  " + GOOD + "\n"]) == [1.0, 1.0]


def test_format_duplicate_tags_cost() -> None:
    twice = GOOD + "\n<answer>\n73\n</answer>"
    assert common.format_score(twice) < common.format_score(GOOD)
    assert rewards.REWARD_FUNCS["format_strict"](completions=[twice]) == [0.0]


def test_format_nested_reasoning_is_not_strict() -> None:
    nested = "<reasoning><reasoning>a</reasoning></reasoning><answer>1</answer>"
    closed_twice = [
        "<reasoning>a</reasoning></reasoning><answer>1</answer>",
        "<reasoning>a</reasoning><answer>1</answer></answer>",
        "<reasoning>a</reasoning>\n<answer>1</answer>x</answer>",
    ]
    assert rewards.REWARD_FUNCS["format_strict"](completions=[nested, *closed_twice]) == [0.0] * 4


# Tags around nothing: no letter or digit outside tags in any body (whitespace, zero-width and no-break spaces,
# punctuation, other tags).
EMPTY_BODIES = [
    "<reasoning></reasoning><answer></answer>",
    "<reasoning> </reasoning>\n<answer>\n</answer>",
    "<reasoning>\u200b\u200c\u2060</reasoning><answer>\u00a0\ufeff\u3000\u180e</answer>",
    "<reasoning>...</reasoning><answer>?!</answer>",
    "<reasoning><answer></reasoning><answer></reasoning></answer>",  # bodies that are only the other tags
    "<reasoning><b></b></reasoning><answer><br/></answer>",
    "<reasoning>" + " " * 50_000 + "</reasoning><answer>" + "\n" * 40_000 + "</answer>",
]


@pytest.mark.parametrize("text", EMPTY_BODIES, ids=[f"empty{i}" for i in range(len(EMPTY_BODIES))])
def test_empty_tag_bodies_earn_no_format_credit(text: str) -> None:
    assert common.format_score(text) == 0.0
    assert rewards.REWARD_FUNCS["format_strict"](completions=[text, chat(text)]) == [0.0, 0.0]
    assert common.repetition_score(text) == -1.0


@pytest.mark.parametrize(
    ("text", "fmt", "strict"),
    [
        ("<reasoning>x</reasoning><answer></answer>", 0.5, 0.0),  # each tag needs its own content
        ("<reasoning> </reasoning><answer>72</answer>", 0.5, 0.0),
        ("<reasoning>a</reasoning><answer>. 7</answer>", 1.0, 1.0),  # one digit is content
        ("<reasoning>数学</reasoning><answer>٧٢</answer>", 1.0, 1.0),  # letters and digits of any script
        ("<reasoning>why<answer>72</answer>", 0.75, 0.0),  # unclosed: the body runs to the next tag
        ("<reasoning><answer>72</answer>", 0.5, 0.0),
        ("thinking</reasoning><answer>72</answer>", 0.75, 0.0),  # the opening tag was in the prompt
        ("</reasoning><answer>72</answer>", 0.5, 0.0),
        ("<reasoning>x</reasoning><answer>72", 0.748, 0.0),  # "72" trails the last tag found
        ("<reasoning>x</reasoning><answer>", 0.5, 0.0),
        ("<REASONING>x</REASONING><ANSWER>1</ANSWER>", 0.0, 0.0),  # tags are case-sensitive, like extract_answer
        ('<reasoning type="x">a</reasoning><answer id="1">3</answer>', 0.5, 0.0),  # closing tags only
        ("<reasoning>x</reasoning><answer><reasoning>y</reasoning></answer>", 0.875, 0.0),  # nested: duplicates
        ("<reasoning>a < b</reasoning><answer>x<y>z</answer>", 1.0, 1.0),  # "<" in a body is fine
    ],
)
def test_format_credit_needs_a_body(text: str, fmt: float, strict: float) -> None:
    assert common.format_score(text) == pytest.approx(fmt)
    assert rewards.REWARD_FUNCS["format_strict"](completions=[text]) == [strict]


def test_length_reward_dapo_shape() -> None:
    length = rewards.build_reward("length", rewards.RewardSettings(100))  # buffer: a quarter of the budget
    assert (length.__name__, length.max_len, length.buffer) == ("length", 100, 25)
    length = common.LengthReward(100, 20)
    ids = [[0] * n for n in (10, 80, 90, 100, 150)]
    assert length(completions=["x"] * 5, completion_ids=ids) == [0.0, 0.0, pytest.approx(-0.5), -1.0, -1.0]
    # no token ids (outside TRL): no punishment
    assert length(completions=["x" * 10_000, "y"]) == [0.0, 0.0]
    assert length(completions=["a", "b"], completion_ids=[None, "abc"]) == [0.0, 0.0]


def test_length_default_buffer_and_picklable() -> None:
    import pickle

    length = common.LengthReward(400)
    assert common.length_penalty(300, length.max_len, length.buffer) == 0.0
    assert common.length_penalty(350, length.max_len, length.buffer) == pytest.approx(-0.5)
    assert pickle.loads(pickle.dumps(length))(completions=["x"], completion_ids=[[0] * 350]) == [pytest.approx(-0.5)]
    fmt = pickle.loads(pickle.dumps(rewards.REWARD_FUNCS["format"]))
    assert fmt is rewards.REWARD_FUNCS["format"]


def test_per_completion_pads_columns_and_never_raises() -> None:
    def score(text, gold=None):
        if text == "boom":
            raise RuntimeError("scorer bug")
        return 1.0 if text == gold else 0.0

    reward = common.PerCompletion("probe", score)
    assert reward(completions=["a", "boom", chat("c")], gold=["a", "b"]) == [1.0, 0.0, 0.0]
    assert reward(completions=None) == [] and reward.__name__ == "probe"


def test_register_refuses_a_second_reward_under_one_name() -> None:
    with pytest.raises(ValueError, match="registered as 'format'"):
        common.register("format")(lambda **kwargs: [])


def test_dotted_path_reward_and_unknown_names() -> None:
    dotted = rewards.build_reward(f"{common.__name__}.repetition_reward", rewards.RewardSettings(64))
    assert dotted is rewards.REWARD_FUNCS["repetition"]
    assert rewards.check_reward_config(["format", "nope.missing"], [1.0, 1.0])[0].startswith(
        "unknown reward function(s) ['nope.missing']"
    )


def test_repetition() -> None:
    rep = rewards.REWARD_FUNCS["repetition"]
    loop = "the answer is 72 " * 50
    varied = "First we halve 48 to get 24 clips sold in May, then add both months to get 72 in total."
    a, b, c, d = rep(completions=[loop, varied, "72", chat(GOOD)])
    assert a < -0.9 and b == c == d == 0.0  # a short answer is not repetitive


@pytest.mark.parametrize("text", ["", "   ", "\n\t \u200b\u00a0\ufeff\u3000", "...?!", "<answer></answer>", None])
def test_repetition_gives_an_empty_completion_the_worst_score(text: object) -> None:
    assert rewards.REWARD_FUNCS["repetition"](completions=[text]) == [-1.0]


def test_unknown_kwargs_and_prompts_accepted() -> None:
    for name in SHARED:
        out = shared(name)(
            prompts=["p"] * 2,
            completions=[GOOD, chat(GOOD)],
            completion_ids=[[1, 2], [3]],
            trainer_state=object(),
            answer=["72", "72"],
            whatever=[1, 2],
        )
        assert len(out) == 2


junk = st.one_of(
    st.text(max_size=300),
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3),
    st.lists(st.dictionaries(st.sampled_from(["role", "content"]), st.text(max_size=50)), max_size=3),
    st.text(alphabet="<>/reasoninganswer\n ", max_size=200),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(junk, max_size=6), st.lists(st.one_of(st.none(), st.lists(st.integers(), max_size=400)), max_size=6))
def test_shared_rewards_never_raise(completions: list[object], ids: list[object]) -> None:
    for name in SHARED:
        out = shared(name)(completions=completions, completion_ids=ids)
        assert len(out) == len(completions)
        lo, hi = RANGES[name]
        assert all(isinstance(v, float) and lo <= v <= hi for v in out)


def test_huge_and_unicode_input() -> None:
    huge = "<reasoning>" + "数学 🙂 " * 200_000 + "</reasoning><answer>72</answer>"
    for name in SHARED:
        out = shared(name)(completions=[huge, chat(huge)])
        lo, hi = RANGES[name]
        assert len(out) == 2 and all(lo <= v <= hi for v in out)


HOSTILE_100K = [
    "<reasoning>" + "</reasoning><answer>a" * 5_000 + "</answer>x",
    "<reasoning>" + "</reasoning> <answer></answer> " * 3_000 + "junk",
    " " * 100_000 + "x",
    "<reasoning>" + "</reasoning>" * 8_000 + "<answer>",
    "<reasoning></reasoning>" + " " * 99_000 + "<answer>x",
    "<reasoning>x</reasoning><answer>" + "</answer> " * 9_000 + "x",
    "<reasoning>x</reasoning>" + " <answer>" * 9_000,
    "<reasoning>" * 9_000,
    "a b c " * 20_000,
    "<" * 100_000,
    "<reasoning>" + "<a" * 50_000,
    "<reasoning>" + "\u200b" * 99_000 + "</reasoning><answer>1</answer>",
    "<reasoning>" + "<b>" * 33_000 + "</reasoning><answer>",
    "<reasoning>x</reasoning><answer>" + "<answer" * 14_000,
    "<reasoning>" + "<reasoning x>" * 7_000 + "</reasoning>",
]


@pytest.mark.parametrize("text", HOSTILE_100K, ids=[f"hostile{i}" for i in range(len(HOSTILE_100K))])
def test_shared_rewards_are_linear_on_hostile_text(text: str) -> None:
    """The strict pattern, format and repetition scans on 100k characters built to make them backtrack."""
    start = time.perf_counter()
    for func in (rewards.REWARD_FUNCS["format"], rewards.REWARD_FUNCS["format_strict"], common.repetition_reward):
        out = func(completions=[text, text * 2])
        assert len(out) == 2 and all(isinstance(v, float) for v in out)
    assert time.perf_counter() - start < 1.0  # measured worst ~0.05 s; x20 margin for a loaded machine


# ------------------------------------------------------------------------ what each kind of completion earns

ROOT = Path(__file__).resolve().parent.parent
EMPTY_ANSWERS = ["", "<reasoning></reasoning><answer></answer>", "<reasoning> </reasoning>\n<answer>\u200b</answer>"]
EMPTY_BOUND = 0.0  # an empty answer earns nothing under any mix (the README table states how much less)
EARNED = r" \| ".join([r"(-?[\d.]+)"] * 4)  # four numbers: what each kind of completion earns
MIX_ROW = re.compile(rf"^\| ([\w-]+) \| (\w+ [\d.]+(?:, \w+ [\d.]+)*) \| {EARNED} \|", re.M)
KINDS = ("right", "untagged", "wrong", "empty")  # the table's columns after the weights, in order


def readme_mixes() -> dict[str, tuple[list[str], list[float], dict[str, float]]]:
    """Every reward mix of the task, as the README's table states it: names, weights, and what each kind of
    completion earns (right in tags, right without tags, wrong in tags, empty)."""
    out = {}
    for mix, pairs, *earned in MIX_ROW.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        names, weights = zip(*(pair.rsplit(" ", 1) for pair in pairs.split(", ")), strict=True)
        out[mix] = (list(names), [float(w) for w in weights], dict(zip(KINDS, map(float, earned), strict=True)))
    return out


def test_the_configs_use_a_mix_of_the_readme_table() -> None:
    mixes = [(names, weights) for names, weights, _ in readme_mixes().values()]
    assert len(mixes) >= 2
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert (config["reward_funcs"], config["reward_weights"]) in mixes, path.name


@pytest.fixture(scope="module")
def mix_rewards():
    """Every reward any mix names, built as a run builds it (the task's default settings)."""
    task = mod("task")
    names = {name for names, _, _ in readme_mixes().values() for name in names}
    try:
        built = {name: rewards.build_reward(name, rewards.RewardSettings(256, task.TaskArguments())) for name in names}
    except task.ERRORS as error:  # e.g. the code sandbox without bubblewrap
        pytest.skip(str(error))
    yield built
    for reward in built.values():
        getattr(reward, "close", lambda: None)()


def total(built: dict, names: list[str], weights: list[float], completion: str, row: dict) -> float:
    """TRL's reward for one completion: the weighted sum, a None (not applicable) counting as nothing."""
    columns = {key: [value] for key, value in row.items()}
    scores = [built[name](prompts=[row.get("question")], completions=[completion], **columns)[0] for name in names]
    return sum(w * v for v, w in zip(scores, weights, strict=True) if v is not None)


@pytest.mark.parametrize("mix", sorted(readme_mixes()))
def test_the_readme_table_says_what_each_kind_of_completion_earns(mix_rewards, mix: str) -> None:
    names, weights, stated = readme_mixes()[mix]
    task = mod("task")
    repeats = common.repetition_score  # the table's figures are for answers that repeat no phrase (0)
    rows = [r for r in sample_rows() if repeats(task.gold_completion(r)) == repeats(task.untagged_completion(r)) == 0]
    row = rows[0]
    gold = task.gold_completion(row)
    wrong = gold[: gold.rindex("<answer>")] + "<answer>\nnone\n</answer>"  # well-formed, and no credit at all
    assert mix_rewards["correctness"](completions=[wrong], **{k: [v] for k, v in row.items()}) == [0.0]
    earned = {
        "right": total(mix_rewards, names, weights, task.gold_completion(row), row),
        "untagged": total(mix_rewards, names, weights, task.untagged_completion(row), row),
        "wrong": total(mix_rewards, names, weights, wrong, row),
    }
    empty = [total(mix_rewards, names, weights, text, row) for text in EMPTY_ANSWERS]
    assert earned == pytest.approx({kind: stated[kind] for kind in earned})  # what the README's table says
    assert empty == [pytest.approx(stated["empty"])] * len(EMPTY_ANSWERS)
    assert max(empty) <= EMPTY_BOUND < earned["wrong"] < earned["right"]
    if earned["untagged"]:  # read without tags: worth more than any wrong answer, less than the right one in tags
        assert earned["wrong"] < earned["untagged"] < earned["right"]
    assert common.FORMAT.open(common.FORMAT.answer_tag) not in task.untagged_completion(row)


JUNK = "Sure! Here is a long preamble that has nothing to do with the format. " * 45  # ~3,000 characters


@pytest.mark.parametrize("where", ["before", "between", "after"])
def test_text_outside_the_blocks_is_not_free(where: str) -> None:
    reasoning, answer = "<reasoning>\nthinking\n</reasoning>", "<answer>\n73\n</answer>"
    text = {"before": JUNK + reasoning + answer, "between": reasoning + JUNK + answer,
            "after": reasoning + answer + JUNK}
    clean = common.format_score(reasoning + "\n" + answer)
    assert clean == 1.0
    assert common.format_score(text[where]) == pytest.approx(clean - common.MAX_OUTSIDE_COST)  # capped at the most
    short = {"before": "Sure! " + reasoning + answer, "after": reasoning + answer + " Sure!"}.get(where)
    if short:  # and charged by the character below the cap ("Sure!" is 5 characters)
        assert common.format_score(short) == pytest.approx(clean - 0.005)
    assert rewards.REWARD_FUNCS["format_strict"](completions=[text[where]]) == [0.0]
