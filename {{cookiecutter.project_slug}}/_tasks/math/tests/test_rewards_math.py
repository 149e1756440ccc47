"""Math correctness: extraction, equivalence, anti-gaming, robustness and time bounds."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from _pkg import mod
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

math_task = mod("rewards.task")
correctness = mod("rewards").REWARD_FUNCS["correctness"]
DATA = Path(__file__).resolve().parent.parent / "data" / "sample.jsonl"
FAST = 1.0  # seconds: screened or fast-path calls
BOUND = math_task.VERIFY_TIMEOUT_S + 0.5 + 10.0  # one comparison + a possible worker (re)start on a busy machine


def wrap(answer: str) -> str:
    return f"<reasoning>\nLet me work it out step by step.\n</reasoning>\n<answer>\n{answer}\n</answer>"


def final_answer(gold: str) -> str:
    return gold.rsplit("####", 1)[1].strip() if "####" in gold else gold


def one(pred: str, gold: str) -> float | None:
    return correctness(completions=[wrap(pred)], answer=[gold])[0]


def test_sample_gold_scores_one() -> None:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    assert len(rows) >= 20
    completions = [wrap(final_answer(r["answer"])) for r in rows]
    assert correctness(completions=completions, answer=[r["answer"] for r in rows]) == [1.0] * len(rows)


def test_sample_gold_scores_one_without_math_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(math_task.WORKER, "verify", lambda *a, **k: None)  # as if math-verify were not installed
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    completions = [wrap(final_answer(r["answer"])) for r in rows]
    assert correctness(completions=completions, answer=[r["answer"] for r in rows]) == [1.0] * len(rows)


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("72", "Natalia sold 48/2 = 24 clips in May.\n#### 72"),
        ("The answer is 72.", "72"),
        ("$72$", "72"),
        ("\\boxed{72}", "72"),
        ("72 clips", "72"),
        ("\\$1,234", "#### 1,234"),
        ("1234", "1,234"),
        ("1,080.00", "1080"),
        ("0.75", "\\frac{3}{4}"),
        ("3/4", "\\dfrac{3}{4}"),
        ("\\frac{1}{3}", "1/3"),
        ("0.333333", "\\frac{1}{3}"),
        ("50\\%", "50%"),
        ("x = 3", "3"),
        ("48 + 24 = 72", "72"),
        ("Natalia sold 72 clips", "72"),
        ("She earned \\$10.", "10"),
        ("-7", "-7"),
        ("\\sqrt{18}", "3\\sqrt{2}"),
        ("(x+1)^2", "x^2+2x+1"),
        ("\\{3, 2\\}", "\\{2, 3\\}"),
        ("[2, \\infty)", "\\boxed{[2, \\infty)}"),
        ("\\frac{\\sqrt{3}}{2}", "\\sin(\\pi/3)"),
    ],
)
def test_equivalent_answers_score_one(pred: str, gold: str) -> None:
    assert one(pred, gold) == 1.0


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("73", "72"),
        ("72 or 73", "72"),
        ("73 or 72", "72"),
        ("72\n73", "72"),
        ("1 2 3 72", "72"),
        ("1, 2, 72", "72"),
        (", ".join(str(i) for i in range(200)), "72"),
        ("The answer is 73, not 72", "72"),
        ("73 = 72", "72"),
        ("it is not 72", "72"),
        ("I think it is 72 because 48+24", "72"),
        ("72!", "72"),
        ("-72", "72"),
        ("x = 73 = 72", "72"),
        ("0.125", "0.1254"),
        ("0.33", "\\frac{1}{3}"),
        ("\\{2\\}", "\\{2, 3\\}"),
        ("[2, \\infty)", "(2, \\infty)"),
        ("", "72"),
        ("7 2", "72"),
    ],
)
def test_wrong_or_gaming_answers_score_zero(pred: str, gold: str) -> None:
    assert one(pred, gold) == 0.0


def test_extraction_rules() -> None:
    # last answer block wins
    assert correctness(completions=[wrap("73") + "\n<answer>72</answer>"], answer=["72"]) == [1.0]
    # boxed fallback without answer block
    assert correctness(completions=["so it is \\boxed{\\frac{3}{4}} overall"], answer=["0.75"]) == [1.0]
    assert correctness(completions=["\\boxed{1} then \\boxed{72}"], answer=["72"]) == [1.0]
    # boxed inside the answer block
    assert correctness(completions=[wrap("so \\boxed{72}")], answer=["72"]) == [1.0]
    # bare number without any tag: no credit
    assert correctness(completions=["The answer is 72"], answer=["72"]) == [0.0]
    # unclosed answer block: no credit
    assert correctness(completions=["<answer>72"], answer=["72"]) == [0.0]
    assert math_task.last_boxed("\\boxed{\\frac{1}{2}} and \\boxed{a{b}c}") == "a{b}c"
    assert math_task.last_boxed("\\boxed{unbalanced") is None


def test_both_completion_forms_and_bad_items() -> None:
    good = wrap("72")
    out = correctness(
        completions=[good, [{"role": "assistant", "content": good}], None, 3, {"no": "content"}, [{"role": "x"}]],
        answer=["72"] * 6,
        prompts=["q"] * 6,
        completion_ids=[[1]] * 6,
        trainer_state=None,
        question=["q"] * 6,
    )
    assert out == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_unparseable_gold_is_none() -> None:
    assert correctness(completions=[wrap("1")] * 4, answer=["", "   ", None, ["x"]]) == [None] * 4
    assert correctness(completions=[wrap("1"), wrap("1")], answer=["1"]) == [1.0, None]  # short column


def test_gold_is_cached() -> None:
    math_task.parse_gold.cache_clear()
    correctness(completions=[wrap("72")] * 8, answer=["#### 72"] * 8)
    info = math_task.parse_gold.cache_info()
    assert info.misses == 1 and info.hits == 7


PATHOLOGICAL = [
    "\\frac{" * 200 + "1" + "}{2}" * 200,
    "2^{" * 30 + "2" + "}" * 30,
    "2^{2^{2^{2^{2}}}}",
    "9^{9^{9}}",
    "9^9^9^9",
    "10^{1000000}",
    "100000!",
    "\\binom{100000}{50000}",
    "(" * 5000 + "1" + ")" * 5000,
    "x" * 50_000,
    "\\sqrt{" * 100 + "2" + "}" * 100,
    "((3!)!)!",  # nested factorials: screened at once, never a verifier kill and restart
    "(5!)!",
    "3!!!",
    "(10^{5})!",
]


@pytest.mark.parametrize("pred", PATHOLOGICAL)
def test_pathological_inputs_are_fast(pred: str) -> None:
    start = time.perf_counter()
    assert one(pred, "72") == 0.0
    assert one(pred, "x^2+1") == 0.0
    assert time.perf_counter() - start < FAST


def test_pathological_from_a_thread() -> None:
    results: list[list[float | None]] = []

    def run() -> None:
        results.append(correctness(completions=[wrap(p) for p in PATHOLOGICAL], answer=["72"] * len(PATHOLOGICAL)))

    start = time.perf_counter()
    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert results == [[0.0] * len(PATHOLOGICAL)]
    assert time.perf_counter() - start < FAST * len(PATHOLOGICAL)


def test_slow_comparison_is_killed_off_main_thread() -> None:
    """An input that passes screening but is slow for sympy: the worker is killed after VERIFY_TIMEOUT_S."""
    results: list[float | None] = []
    slow = "(x+1)^{9999} - (x-1)^{9999}"

    def run() -> None:
        results.append(one(slow, "x^2+1"))
        results.append(one("(x+1)^2", "x^2+2x+1"))  # the worker restarts and still answers

    thread = threading.Thread(target=run)
    start = time.perf_counter()
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert results == [0.0, 1.0]
    assert time.perf_counter() - start < 2 * BOUND


def test_worker_timeout_returns_false_and_recovers() -> None:
    worker = math_task.WORKER
    assert worker.verify("x^2+2x+1", "(x+1)^2") is True
    # Seconds of sympy, so no reply within 0.1 s however busy the machine (a fast comparison with timeout=0 could
    # still be answered between the request and the first look at the reply): killed, no credit.
    assert worker.verify("(x+1)^{9999} - (x-1)^{9999}", "x^2+1", timeout=0.1) is False
    assert worker.verify("x^2+2x+1", "(x+1)^2") is True


text_or_junk = st.one_of(
    st.text(max_size=200),
    st.text(alphabet="0123456789.,/\\{}^$()[]-+ fracboxed", max_size=80).map(wrap),
    st.none(),
    st.integers(),
    st.lists(st.fixed_dictionaries({"role": st.just("assistant"), "content": st.text(max_size=80)}), max_size=2),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(text_or_junk, max_size=5), st.sampled_from(["72", "#### 1,234", "\\frac{3}{4}", "x^2", "", None]))
def test_never_raises(completions: list[object], gold: object) -> None:
    out = correctness(completions=completions, answer=[gold] * len(completions))
    assert len(out) == len(completions)
    assert all(v is None or v in (0.0, 1.0) for v in out)


def test_huge_unicode_completion() -> None:
    huge = "数学 🙂 " * 100_000 + wrap("72")
    start = time.perf_counter()
    assert correctness(completions=[huge, wrap("七十二 🙂")], answer=["72", "72"]) == [0.0, 0.0]
    assert time.perf_counter() - start < FAST


# ------------------------------------------------------------------------------ over-credit and hedges


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("72x", "72"),  # a variable is not a unit
        ("72i", "72"),
        ("72 y^2", "72"),
        ("72 m", "72"),  # a single letter is never stripped
        ("72 xy", "72"),
        ("72 xyz", "72"),
        ("72 abc", "72"),
        ("72 pi", "72"),
        ("72\\pi", "72"),
        ("72 a", "72"),
        ("2", "2x"),  # the gold is not mangled into 2
        ("2", "#### 2x"),
        ("\\boxed{73}, \\boxed{72}", "72"),  # several boxes in the answer block
        ("\\boxed{73} \\boxed{72}", "72"),
        ("73 \\to 72", "72"),
        ("73 \\rightarrow 72", "72"),
        ("73 -> 72", "72"),
        ("73 → 72", "72"),
        ("72?", "72"),
        ("Is it 72?", "72"),
        ("\\approx 72", "72"),
        ("≈ 72", "72"),
        ("approximately 72", "72"),
        ("about 72 clips", "72"),
        ("between 70 and 74", "72"),
        ("70 to 74", "72"),
        ("from 70 to 72", "72"),
        ("70-74", "72"),
        ("72, 73", "72"),
        ("72; 73", "72"),
        ("at least 72", "72"),
        ("> 72", "72"),
        ("\\geq 72", "72"),
        ("73, actually 72", "72"),
        ("72 (or 73)", "72"),
        ("72 \\pm 1", "72"),
        ("\\approx 0.33", "\\frac{1}{3}"),  # an approximation must still round correctly to >= 3 places
    ],
)
def test_over_credits_score_zero(pred: str, gold: str) -> None:
    assert one(pred, gold) == 0.0


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("0.5x", "\\frac{x}{2}"),
        ("x + x", "2x"),
        ("2x", "2x"),
        ("\\approx 0.333333", "\\frac{1}{3}"),  # no finite decimal: the rounding rule applies
        ("72 dollars", "72"),
        ("5 km/h", "5"),
        ("3 cm^2", "3"),
        ("5\\text{ m}", "5"),  # a unit declared with \text after a number
        ("5", "5\\text{ m}"),
        ("10", "10 \\text{ inches}"),
        ("\\boxed{72} \\boxed{72}", "72"),  # the same box twice is one answer
    ],
)
def test_units_and_algebra_score_one(pred: str, gold: str) -> None:
    assert one(pred, gold) == 1.0


# A second round of attacks: each earned 1.0 before (the gold value is in the answer, the final statement is not it)
@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("x=3, y=2", "x=2, y=3"),  # swapped values of a system
        ("a = 5, b = -1", "a = -1, b = 5"),
        ("3, 2", "x=2, y=3"),  # values without their names
        ("-(72)", "72"),  # a sign the number does not carry
        ("-\\left(72\\right)", "72"),
        ("minus 72", "72"),
        ("negative 72", "72"),
        ("\\frac{1}{2} = \\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt{3}}{2}"),  # a false equation: every side must hold
        ("4 = 3\\sqrt{2}", "3\\sqrt{2}"),
        ("5 = 2x+3", "2x+3"),
        ("2^6 = 72", "72"),
        ("8 \\times 8 = 72", "72"),
        ("73 | 72", "72"),  # two values joined by a separator
        ("73 \\cr 72", "72"),
        ("73 \\\\[2pt] 72", "72"),
        ("73 \\therefore 72", "72"),
        ("73 \\equiv 72", "72"),
        ("73 \\bmod 72", "72"),
        ("73 \\hspace{1em} 72", "72"),
        ("73 := 72", "72"),
        ("73... 72", "72"),
        ("73. Oops, 72", "72"),
        ("\\boxed{73 \\boxed{72}}", "72"),  # the outer box is the answer
        ("\\phantom{73} 72", "72"),
        ("72 million", "72"),  # words that change the value are not units
        ("72 \\text{ thousand}", "72"),
        ("72 over seven", "72"),
        ("one over 72", "72"),
        ("72 squared", "72"),
        ("the square root of 72", "72"),
        ("72 plus one", "72"),
        ("72 \\mathrm{i}", "72"),  # a letter in \text is a unit only when it is one (m, s, h...)
        ("72\\text{ x}", "72"),
        ("72_{8}", "72"),
        ("over 72", "72"),  # bounds and approximations
        ("below 72", "72"),
        ("\\leqq 72", "72"),
        ("\\gg 72", "72"),
        ("\\lesssim 72", "72"),
        ("near 72", "72"),
        ("~72", "72"),
        ("72 (rounded)", "72"),
        ("72 is wrong", "72"),  # negations
        ("never 72", "72"),
        ("except 72", "72"),
        ("\\not 72", "72"),
        ("\\alpha \\not= 72", "72"),
        ("\\text{Monday}\\text{Tuesday}", "\\text{Monday}"),
    ],
)
def test_second_round_over_credits_score_zero(pred: str, gold: str) -> None:
    assert one(pred, gold) == 0.0


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("**72**", "72"),
        ("5\\,000", "5000"),
        ("-(72)", "-72"),
        ("\u22127", "-7"),
        ("x = 2, y = 3", "x=2, y=3"),
        ("48 + 24 = 72", "72"),
        ("\\sqrt{5184}", "72"),
        ("(x, y) = (1, 2)", "(1, 2)"),
        ("\\sin(\\pi/3) = \\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt{3}}{2}"),
        ("monday", "\\text{Monday}"),
        ("0.333333 (rounded)", "\\frac{1}{3}"),
        ("72 seconds", "72"),
        ("72 square feet", "72"),
    ],
)
def test_second_round_correct_answers_score_one(pred: str, gold: str) -> None:
    assert one(pred, gold) == 1.0


def test_boxes_without_an_answer_block() -> None:
    texts = ["\\boxed{73}, \\boxed{72}", "\\boxed{73} or \\boxed{72}", "\\boxed{73} \\to \\boxed{72}"]
    assert correctness(completions=texts, answer=["72"] * 3) == [0.0] * 3
    # an intermediate result boxed in the working, then the final one, is still the last box
    assert correctness(completions=["first \\boxed{1}, then the total is \\boxed{72}"], answer=["72"]) == [1.0]


# ------------------------------------------------------------- a box is the answer only as the whole answer

# Gold 72 unless given. Each scored 1.0 when any box in the answer block was taken as the answer by itself.
BOX_NOT_WHOLE = [
    "\\boxed{72} or 73",  # hedged, combined, negated
    "It is either \\boxed{72} or 73.",
    "\\boxed{72} is wrong, the answer is 73",
    "73, not \\boxed{72}",
    "73 \\neq \\boxed{72}",
    "\\boxed{72} (or 73)",
    "\\boxed{72}, 73",
    "$\\boxed{72}$ or $73$",
    "\\boxed{72} \\text{ or } 73",
    "\\boxed{72}\\;\\text{or}\\;73",
    "\\boxed{72} \\text{(or 73)}",
    "\\boxed{72}\\text{-ish}",
    "\\boxed{72} or more",
    "$\\boxed{72}$ = x",
    "\\boxed{72} \x00 73",
    "\\text{not }\\boxed{72}",
    "\\lnot\\boxed{72}",
    "maybe \\boxed{72}",
    "about \\boxed{72}",
    "at least \\boxed{72}",
    "\\boxed{72}?",
    "-\\boxed{72}",  # operated on
    "{-}\\boxed{72}",
    "\u2212\\boxed{72}",
    "\\text{Answer: } -\\boxed{72}",
    "2 \\times \\boxed{72}",
    "\\boxed{72}\\cdot 2",
    "\\boxed{72}^2",
    "\\boxed{72}$^2$",
    "\\boxed{72}0",
    "1\\boxed{72}",
    "72 \\boxed{72}",
    "\\boxed{72}.5",
    "\\sqrt{\\boxed{72}}",
    "\\frac{\\boxed{72}}{1}",
    "\\overline{\\boxed{72}}",
    "e^{\\boxed{72}}",
    "\\left(\\boxed{72}\\right)",
    "(\\boxed{72})",
    "*\\boxed{72}*",
    "\\boxed{72}+0",
    "\\boxed{72}\\times 10^{0}",  # equal in value, but the box is operated on
    "\\boxed{72} - 1 = 71",
    "72 \\pm \\boxed{72}",
    "\\boxed{72}!",
    "\\boxed{72}'",
    "\\boxed{72}_{8}",
    "\\boxed{72}\\\\73",
    "\\boxed{72} \\\\ 73",
    "\\boxed{72}\n73",
    "\\boxed{72}|73",
    "\\boxed{72}\\hspace{1cm}73",
    "\\phantom{73}\\boxed{72}",
    "\\color{red}\\boxed{72}",
    "\\boxed{72}\\boxed{}",
    "x\\boxed{72}",  # a variable or a value word next to it
    "\\pi\\boxed{72}",
    "\\mathrm{x}\\boxed{72}",
    "\\text{73 }\\boxed{72}",
    "\\boxed{72}x",
    "\\boxed{72} x",
    "\\boxed{72}\\text{ x}",
    "\\boxed{72}\\mathrm{x}",
    "twice \\boxed{72}",
    "half of \\boxed{72}",
    "\\boxed{72} thousand",
    "\\boxed{72} hundredths",
    "2^6 = \\boxed{72}",  # an equation chain must hold on every side
    "73 = \\boxed{72}",
    "x = 73 = \\boxed{72}",
    "\\boxed{72} = 73",
    "\\boxed{-72}",
]
BOX_WHOLE = [
    "\\boxed{72}",
    "$\\boxed{72}$",
    "$$\\boxed{72}$$",
    "\\[\\boxed{72}\\]",
    "\\(\\boxed{72}\\)",
    "$\\displaystyle \\boxed{72}$",
    "**\\boxed{72}**",
    "\\boxed{72}.",
    "so \\boxed{72}",
    "The answer is \\boxed{72}.",
    "Therefore the final answer is $\\boxed{72}$. I hope it is correct.",
    "**Answer:** \\boxed{72}",
    "\\text{The answer is } \\boxed{72}",
    "Natalia sold \\boxed{72} clips.",
    "The answer to the question is \\boxed{72}.",
    "\\boxed{72}\\text{ dollars.}",
    "\\boxed{72} dollars",
    "\\boxed{72}\\text{ clips}",
    "\\boxed{72}\\,\\text{cm}",
    "\\boxed{72}~\\text{dollars}",
    "\\boxed{72}cm",
    "\\boxed{72}\\text{ m}",
    "\\boxed{72}\\%",  # as 72\% (a percent sign is dropped on both sides)
    "\\boxed{72}^\\circ",
    "\\$\\boxed{72}",
    "x = \\boxed{72}",
    "$x = \\boxed{72}$",
    "x &= \\boxed{72}",
    "\\boxed{72} &",
    "48 + 24 = \\boxed{72}",  # a true equation chain, judged as a whole
    "$48 + 24 = \\boxed{72}$",
    "The total is $48+24=\\boxed{72}$.",
    "\\boxed{72} = 48 + 24",
    "\\boxed{72} \\boxed{72}",
    "\\boxed{72} \\fbox{72}",
    "\\boxed{\\boxed{72}}",
    "\\boxed{72 \\text{ clips}}",
    "\\boxed{72 \\times 10^{0}}",  # inside the box it is the answer's own arithmetic
]


@pytest.mark.parametrize("pred", BOX_NOT_WHOLE)
def test_box_that_is_not_the_whole_answer_scores_zero(pred: str) -> None:
    assert one(pred, "72") == 0.0


@pytest.mark.parametrize("pred", BOX_WHOLE)
def test_box_that_is_the_whole_answer_scores_one(pred: str) -> None:
    assert one(pred, "72") == 1.0


# Without an answer block the last box is judged in its context: its line from the last sentence end, or a display
NO_BLOCK = [
    ("$-\\boxed{72}$", 0.0),
    ("\\boxed{72} or 73", 0.0),
    ("It is either \\boxed{72} or 73.", 0.0),
    ("It is either $\\boxed{72}$ or 73.", 0.0),
    ("So the answer is $2 \\times \\boxed{72}$.", 0.0),
    ("73, not \\boxed{72}", 0.0),
    ("Is it \\boxed{72}?", 0.0),
    ("\\boxed{72} is wrong", 0.0),
    ("\\boxed{72}0", 0.0),
    ("Total 73.\n\\boxed{72}. Or 73.", 0.0),
    ("$$\n-\n\\boxed{72}\n$$", 0.0),
    ("\\[\n2 \\times\n\\boxed{72}\n\\]", 0.0),
    ("$$\n\\boxed{72}\n$$ or 73", 0.0),
    ("<answer>\\boxed{72} or 73", 0.0),
    ("so it is \\boxed{72} overall", 1.0),
    ("48 + 24 = 72\n\\boxed{72}", 1.0),
    ("48 + 24 = 72. So the answer is $\\boxed{72}$.", 1.0),
    ("We got 73 first. $$\n\\boxed{72}\n$$", 1.0),
    ("So $48+24=\\boxed{72}$.", 1.0),
    ("\\[\nx = 48 + 24\n= \\boxed{72}\n\\]", 1.0),
    ("\\begin{align}\nx &= 48 + 24 \\\\\n  &= \\boxed{72}\n\\end{align}", 1.0),
    ("<answer>\\boxed{72}", 1.0),  # an unclosed answer block: the last box
    ("It is either\n\\boxed{72}\nor 73", 0.0),  # one sentence over three lines
    ("It is either 73 or\n\\boxed{72}", 0.0),
    ("the answer is not\n\\boxed{72}", 0.0),
    ("2 \\times\n\\boxed{72}", 0.0),
    ("\\boxed{72}\n73", 0.0),
    ("\\boxed{72}\n- 1", 0.0),
    ("maybe\n\\boxed{72}", 0.0),
    ("48 + 24 = 72\n\\boxed{72}\nThis checks out.", 1.0),  # working before, a new sentence after
    ("The answer is\n\\boxed{72}", 1.0),
    ("48 + 24 =\n\\boxed{72}", 1.0),
    ("Total 73 or\n\n\\boxed{72}", 1.0),  # a blank line ends a sentence
    ("so \\boxed{72}</reasoning>", 1.0),
]


@pytest.mark.parametrize(("text", "expected"), NO_BLOCK)
def test_last_box_without_an_answer_block_is_judged_in_its_context(text: str, expected: float) -> None:
    assert correctness(completions=[text], answer=["72"]) == [expected]


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ("0.333", "\\frac{1}{3}", 0.0),  # a rounded decimal is credited from MIN_ROUNDED_PLACES places on
        ("0.33333", "\\frac{1}{3}", 0.0),
        ("0.333334", "\\frac{1}{3}", 0.0),  # not correctly rounded
        ("0.333333", "\\frac{1}{3}", 1.0),
        ("0.3333333333", "\\frac{1}{3}", 1.0),
        ("1{,}000{,}000", "1000000", 1.0),  # LaTeX thousands separators
        ("\\boxed{1{,}000{,}000}", "1,000,000", 1.0),
        ("7{,}2", "72", 0.0),  # not a thousands group
        ("1{,}00{,}000", "100000", 0.0),
        ("1234{,}567", "1234567", 0.0),
        ("602000000000000000000000", "6.02 \\times 10^{23}", 1.0),  # scientific notation is an exact number
        ("6.02 \\times 10^{23}", "602000000000000000000000", 1.0),
        ("6.02 \\cdot 10^{23}", "6.02 \\times 10^{23}", 1.0),
        ("1.5 \\times 10^{-3}", "0.0015", 1.0),
        ("6.02 \\times 10^{22}", "6.02 \\times 10^{23}", 0.0),
        ("602000000000000000000001", "6.02 \\times 10^{23}", 0.0),
    ],
)
def test_rounding_separators_and_scientific_notation(pred: str, gold: str, expected: float) -> None:
    assert one(pred, gold) == expected


def test_boxes_in_context_keep_other_golds() -> None:
    assert one("$(x+1)^2 = \\boxed{x^2+2x+1}$", "x^2+2x+1") == 1.0
    assert one("The solutions are \\boxed{\\{2, 3\\}}.", "\\{2, 3\\}") == 1.0
    assert one("-\\boxed{72}", "-72") == 0.0  # a sign outside the box operates on it, whatever the gold


def test_gold_is_normalised_conservatively() -> None:
    assert math_task.parse_gold("2x").text == "2x"
    assert math_task.parse_gold("72 y^2").number is None
    assert math_task.parse_gold("5\\text{ cm}").number == 5
    assert math_task.parse_gold("#### 1,234 dollars").number == 1234


# ----------------------------------------------------------------------------------- time bounds

answer_module = mod("rewards.math_answer")
screens_module = mod("rewards.math_screens")
box_module = mod("rewards.math_box")
OWN_CODE_S = 5 * math_task.OWN_CODE_BOUND_S  # the documented bound of our own scanning, x5 for a loaded machine
NASTY = [
    "7" + "a" * 480 + "!",  # exponential backtracking in the old unit-tail regex
    "72 " + "ab " * 330 + "!",
    "\\boxed{" * 10_000,  # quadratic in the old last_boxed
    "\\boxed{" * 10_000 + "72" + "}",
    "{" * 50_000 + "}" * 50_000,
    "$" * 999,
    "so, the answer is " * 55,
    "1," * 499,
    "7" + " " * 998 + "!",
    "x = " * 250,
    "\\text{" * 150 + "a" * 100,
    "72 " + "\\boxed{1}, " * 90,
    "^" + " " * 299 + "7" * 5,
    "\\boxed{" + "{}" * 49_000,  # one box, 98k braces to pair
    "x. " * 33_000 + "\\boxed{72}",  # many sentence ends before the last box
    "$$" * 49_000 + "\\boxed{72}$$",  # displays to pair around it
    "\\[" * 33_000 + "\\boxed{72}" + "\\]",
    "a" * 99_000 + "\\boxed{72}",  # one long word before it
    "\\boxed{72}" + "\\text{a}" * 9_000,  # a long tail
    "\\\\frac{1}{2}" * 9_000 + "\\\\boxed{72}",  # doubled backslashes to halve
    "y_1 = \\boxed{1} and " * 60 + "y = \\boxed{72}",  # names before many boxes
    "a, " * 300 + "making $\\boxed{72}$.",  # clauses before the box
    "Rounded to the nearest cent, " * 30 + "\\boxed{72.00}",
    "The final answer is 72. " * 2_000 + "\\boxed{72}",  # lead-ins after... and before the box
]


@pytest.mark.parametrize("body", NASTY, ids=[f"nasty{i}" for i in range(len(NASTY))])
def test_nasty_answers_are_bounded(body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(math_task.WORKER, "verify", lambda *a, **k: False)  # time our own code, not sympy
    for text in (wrap(body), body, wrap(body) * 3):
        start = time.perf_counter()
        assert correctness(completions=[text], answer=["72"]) in ([0.0], [1.0])
        assert time.perf_counter() - start < OWN_CODE_S, repr(text[:40])
    start = time.perf_counter()
    answer_module.normalize(body[: answer_module.MAX_RAW_ANSWER_CHARS])
    answer_module.last_boxed((body * 10)[:100_000])
    assert time.perf_counter() - start < OWN_CODE_S


def test_long_answers_are_refused_before_any_regex() -> None:
    words = "Natalia sold 72 clips in all"
    assert one(words, "72") == 1.0
    assert one(words + ", so" * (answer_module.MAX_RAW_ANSWER_CHARS // 4), "72") == 0.0


ADVERSARIAL_TOKENS = ["a", "7", " ", "}", "{", "=", "^", "\\boxed{", "\\text{", "$", ",", ".", "x", "cm", "?", "or"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(ADVERSARIAL_TOKENS), min_size=100, max_size=400).map("".join))
def test_random_adversarial_answers_are_bounded(body: str) -> None:
    start = time.perf_counter()
    answer_module.normalize(body)
    screens_module.multiple_candidates(body)
    answer_module.several_boxes(body, answer_block=True)
    box_module.extract_prediction(body)
    screens_module.pathological(body)
    assert time.perf_counter() - start < OWN_CODE_S


# ----------------------------------------------------------------------------------- the worker script


def test_worker_is_a_script_with_a_line_protocol() -> None:
    import subprocess
    import sys

    script = Path(math_task.WORKER.script)
    assert script.name == "math_verify_worker.py" and script.is_file()
    proc = subprocess.run(
        [sys.executable, str(script)],
        input='{"g": "x^2+2x+1", "p": "(x+1)^2"}\n{"g": "2x", "p": "2"}\nnot json\n',
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines == [{"ready": True}, {"ok": True}, {"ok": False}, {"ok": False}]


def test_box_spam_scores_zero_at_once() -> None:
    cap = answer_module.MAX_BOXES
    assert correctness(completions=["step \\boxed{1}, " * (cap - 1) + "so \\boxed{72}"], answer=["72"]) == [1.0]
    assert correctness(completions=["step \\boxed{1}, " * cap + "so \\boxed{72}"], answer=["72"]) == [0.0]


def _pm(rows: str) -> str:
    return "\\begin{pmatrix}" + rows + "\\end{pmatrix}"


# (answer block, gold, score): the final answer found in working and prose, notations read, and what stays refused
FINAL_ANSWER = [
    ("Therefore $x \\geq 5$ is the solution.", "$x >= 5$", 1.0),
    ("48 + 24 = 72, so the answer is \\boxed{72}", "72", 1.0),
    ("Answer: \\boxed{72}\n\nExplanation: 48 + 24 = 72", "72", 1.0),
    ("First 48 + 24 = 72.\nSo the total is 72 clips.\nI hope it is correct.", "72", 1.0),
    ("$f(1) = \\frac{3}{2} - 1 = \\boxed{\\frac{1}{2}}$", "0.5", 1.0),
    ("The final answer is $14{,}916$. I hope it is correct.", "14916", 1.0),
    ("Thus, the values of \\( k \\) are: \\[ \\boxed{[-4, 0]} \\]", "[-4, 0]", 1.0),
    ("2^6 = 72, so the answer is \\boxed{72}", "72", 0.0),  # the working's chain ends in the answer: it must hold
    ("$x = 5 + 5 + 1 = 7 = 11$", "11", 0.0),  # a false chain
    ("The answer is 73. The answer is 72.", "72", 0.0),  # two answers stated
    ("The answer is 72. Wait, actually 73.", "72", 0.0),  # taken back
    ("72\n\n73", "73", 0.0),
    ("It is 73, or maybe it is 72.", "72", 0.0),
    ("It is not the case that the answer is 72.", "72", 0.0),
    ("72 is wrong", "72", 0.0),
    ("The answer is about 72.", "72", 0.0),
    ("\\boxed{1}, \\boxed{2}", "\\{1, 2\\}", 1.0),  # several boxes forming one answer
    ("\\boxed{1} and \\boxed{2}", "\\boxed{1} and \\boxed{2}", 1.0),  # a gold written that way
    ("\\boxed{1} or \\boxed{2}", "\\{1, 2\\}", 0.0),
    ("\\boxed{73}, \\boxed{72}", "72", 0.0),
    ("x \\in \\boxed{[0, 1)}", "[0, 1)", 1.0),
    ("\\cfrac{1}{3}", "1/3", 1.0),
    ("{1 \\over 3}", "1/3", 1.0),
    ("\\mathbf{72}", "72", 1.0),
    ("\\boldsymbol{72}", "72", 1.0),
    ("11,\\!111,\\!100", "11111100", 1.0),
    ("1 000", "1000", 1.0),
    ("1000,99", "1000.99", 1.0),  # a decimal comma, in the prediction or the gold
    ("0.111", "0,111", 1.0),
    ("7.2e1", "72", 1.0),
    ("seventy-two", "72", 1.0),
    ("72 thousand", "72000", 1.0),
    ("|72|", "72", 1.0),
    ("\\{72\\}", "72", 1.0),
    ("\\sin 60^\\circ", "\\frac{\\sqrt{3}}{2}", 1.0),
    ("72\\%", "0.72", 1.0),
    ("0.72", "72\\%", 1.0),
    ("28 pct", "28\\%", 1.0),
    ("\\boxed{72}.\n\\end{align*}", "72", 1.0),
    ("72", "72 cm", 1.0),  # a gold with a unit, a prediction without
    ("$y = -\\frac{1}{2}x + \\frac{3}{4}$", "$2x + 4y - 3 = 0$", 1.0),  # the same line in another form
    ("$y = -\\frac{1}{2}x + 1$", "$2x + 4y - 3 = 0$", 0.0),
    ("It is worth $\\boxed{\\$16,\\!386.20}$ at the end of the 5-year period.", "16386.20", 1.0),
    ("It is $\\boxed{72}$ or 73 after 5 years.", "72", 0.0),
    ("It is $\\boxed{72}$ after about 5 years, or 73.", "72", 0.0),
    ("So $x = \\boxed{72} + 1$.", "72", 0.0),  # the box ends no chain: something follows it
    ("So $x = \\boxed{72}^2$.", "72", 0.0),
    ("Then $129^{34} + 96^{38} \\equiv \\boxed{9} \\pmod{11}$.", "9", 1.0),
    ("So $2(x-1) = 0 \\Rightarrow \\boxed{x = 1}$.", "x = 1", 1.0),
    ("\\[ 12 \\div 2 = 6 \\] for a quotient of $\\boxed{6}$.", "6", 1.0),
]

# Unearned credit: each scores 0, and its right sibling 1
UNEARNED = [
    (_pm("3 \\\\ 2 \\\\ 1"), _pm("1 \\\\ 2 \\\\ 3")),  # a permuted vector: rows never collapse into one
    (_pm("1 & 3 \\\\ 2 & 4"), _pm("1 & 2 \\\\ 3 & 4")),  # a transposed matrix
    ("72 grand", "72"),  # words that change the value are no units
    ("72 thirds", "72"),
    ("72\\text{ K}", "72"),
    ("72 thousand", "72"),
    ("72 cents", "\\$72"),  # a unit that differs from the gold's
    ("72 km", "72 cm"),
    ("72 hours", "72 minutes"),
    ("5\\text{ km}", "5\\text{ cm}"),
    ("\\{1, 2\\}", "(1, 2)"),  # a set is no tuple
    ("(1, 2)", "\\{1, 2\\}"),
]
RIGHT_SIBLINGS = {"72": "72", "\\$72": "72 dollars", "72 cm": "72\\text{ cm}", "72 minutes": "72 min",
                  "5\\text{ cm}": "5 cm", "(1, 2)": "(1, 2)", "\\{1, 2\\}": "\\{2, 1\\}"}


def test_final_answer_notations_and_hedges_in_one_call() -> None:
    golds = [gold for _, gold, _ in FINAL_ANSWER]
    got = correctness(completions=[wrap(pred) for pred, _, _ in FINAL_ANSWER], answer=golds)
    pairs = zip(FINAL_ANSWER, got, strict=True)
    wrong = [(pred, gold, want, score) for (pred, gold, want), score in pairs if score != want]
    assert not wrong


def test_unearned_credit_scores_zero_beside_a_right_sibling() -> None:
    preds, golds, want = [], [], []
    for pred, gold in UNEARNED:
        sibling = RIGHT_SIBLINGS.get(gold, gold)
        preds += [pred, sibling]
        golds += [gold, gold]
        want += [0.0, 1.0]
    got = correctness(completions=[wrap(p) for p in preds], answer=golds)
    assert list(zip(preds, golds, got, strict=True)) == list(zip(preds, golds, want, strict=True))


# Right answers read in more forms, each class beside its hostile variants (all in one call: a right answer keeps
# its exact score beside the refused ones): (answer block, gold, score)
MORE_FORMS = [
    ("$\\\\boxed{\\\\frac{1}{2}}$", "\\frac{1}{2}", 1.0),  # LaTeX with every backslash doubled, in either side
    ("\\frac{1}{2}", "\\\\frac{1}{2}", 1.0),
    ("73 \\neq \\\\boxed{72}", "72", 0.0),  # halved, every rule still holds
    ("\\\\boxed{72} \\\\text{ or } 73", "72", 0.0),
    ("\\\\begin{pmatrix}3\\\\\\\\2\\\\\\\\1\\\\end{pmatrix}", _pm("1 \\\\ 2 \\\\ 3"), 0.0),
    ("\\\\begin{pmatrix}1\\\\\\\\2\\\\\\\\3\\\\end{pmatrix}", _pm("1 \\\\ 2 \\\\ 3"), 1.0),
    ("\\boxed{28\\%}", "Loss: $100 - 72 = 28$. Final Answer: The final answer is $28 \\%$. I hope it is correct. "
     "Note: another approach follows:", 1.0),  # a gold that is a whole solution: its final answer
    ("\\boxed{72\\%}", "Loss: $100 - 72 = 28$. Final Answer: The final answer is $28 \\%$. I hope it is correct.", 0.0),
    ("0", "$1 = a = x = 0$", 1.0),  # a gold chain ending in a variable's value
    ("0", "$2x + 4y - 3 = 0$", 0.0),
    ("She earns $0.04 \\cdot 100 = \\boxed{4}$ dollars. So she has $104$. Final Answer: The final answer is $104$.",
     "104", 1.0),  # a box ending a step of working, then the final answer
    ("The answer is \\boxed{73}. Final Answer: The final answer is 72.", "72", 0.0),  # a box stated as the answer
    ("\\boxed{73}\n\nFinal Answer: The final answer is 72.", "72", 0.0),
    ("$x = \\boxed{73}$. Final Answer: The final answer is 72.", "72", 0.0),
    ("\\boxed{(3, 3)} \\text{ for part (a) and } \\boxed{(1, 1)}", "(3, 3), (1, 1)", 1.0),  # boxes forming a list
    ("\\boxed{(3, 3)} \\text{ (or) } \\boxed{(1, 1)}", "(3, 3), (1, 1)", 0.0),
    ("\\boxed{72} \\text{ for part (a) and } \\boxed{73}", "72", 0.0),
    ("$y_1 = \\boxed{2x + 1}$ and $y_2 = \\boxed{x - 3}$", "y_1 = 2x + 1, y_2 = x - 3", 1.0),  # named boxes
    ("$y_1 = \\boxed{x - 3}$ and $y_2 = \\boxed{2x + 1}$", "y_1 = 2x + 1, y_2 = x - 3", 0.0),
    ("$x = \\boxed{72}$ and $x = \\boxed{73}$", "72", 0.0),  # two values for one name
    ("$y_1 = \\boxed{72}$ and $y_2 = \\boxed{73}$", "72", 0.0),
    ("$x = \\boxed{2x + 1}$ and $x = \\boxed{x - 3}$", "2x + 1", 0.0),
    ('The final answer is "$12$ and $13$".', "12 \\text{ and } 13", 1.0),  # a quoted answer
    ('"72" or "73"', "72", 0.0),
    ("Its value becomes $.72x$, making for a total loss of $\\boxed{28\\%}$.", "28\\%", 1.0),  # a closing phrase
    ("It is $\\boxed{73}$, making for a total of $\\boxed{72}$.", "72", 0.0),
    ("It is $73$, or making $\\boxed{72}$.", "72", 0.0),
    ("Rounded to the nearest cent, it is worth $\\boxed{\\$16386.17}$ after 5 years.", "16386.17", 1.0),
    ("Rounded to the nearest cent, it is worth $\\boxed{\\$16386.17}$ after 5 years.", "16386.1694", 0.0),
    ("Rounded to the nearest cent, it is worth about $\\boxed{\\$16386.17}$.", "16386.17", 0.0),
    ("Rounded to the nearest tenth, it is $\\boxed{0.3}$.", "\\frac{1}{3}", 0.0),
    ("Rounded to the nearest whole number, it is $\\boxed{72}$.", "72", 0.0),
    ("It is about $\\boxed{72}$.", "72", 0.0),  # words around a math span that hedge or change it
    ("It is twice $\\boxed{72}$.", "72", 0.0),
    ("It is $\\boxed{72}$.", "72", 1.0),
    ("Here is a zero matrix: $ \\begin{pmatrix}0 & 0 \\\\0 & 0\\end{pmatrix} $", _pm("0 & 0 \\\\ 0 & 0"), 1.0),
    ("Rounded to the nearest tenth, it is $\\boxed{16386.17}$.", "16386.17", 0.0),
    ("4, 5", "AB=4, CD=5", 1.0),  # named values given in the gold's order
    ("\\boxed{-5, \\frac{14}{3}}", "\\boxed{x = -5,\\ p = \\frac{14}{3}}", 1.0),
    ("(5,2),(7,2)", "p=5,q=2;p=7,q=2", 1.0),
    ("5, 4", "AB=4, CD=5", 0.0),
    ("(2,5),(2,7)", "p=5,q=2;p=7,q=2", 0.0),
    ("4, 5, 6", "AB=4, CD=5", 0.0),
    ("\\{4, 5\\}", "AB=4, CD=5", 0.0),
    ("4 or 5", "AB=4, CD=5", 0.0),
    ("W(x)=1orW(x)=-1", "W(n) = 1 \\text{ and } W(n) = -1", 1.0),  # a definition's argument is a dummy
    ("f(t) = t^2", "f(x) = x^2", 1.0),
    ("W(x)=1", "W(n) = 1 \\text{ and } W(n) = -1", 0.0),
    ("f(t) = x^2", "f(x) = x^2", 0.0),  # the gold's letter is already in the answer: no renaming
    ("g(t) = t^2", "f(x) = x^2", 0.0),  # another function
    ("f(y)", "f(x)", 0.0),  # no definition: another variable
    ("72or73", "72", 0.0),
]


def test_more_forms_both_ways_in_one_call() -> None:
    got = correctness(completions=[wrap(pred) for pred, _, _ in MORE_FORMS], answer=[g for _, g, _ in MORE_FORMS])
    wrong = [(pred, gold, want, score) for (pred, gold, want), score in zip(MORE_FORMS, got, strict=True)
             if score != want]
    assert not wrong
