"""The verifier audit (audit.py): the shipped rewards pass on the sample data and the smoke curriculum; the lax
rewards people write (below, as dotted rewards) are refused on both, alone and beside correctness at a larger
weight; always-1 and always-0 rewards are refused; thresholds are inclusive; a wrong completion scoring 0 is never
counted as credited."""

import atexit
import functools
import json
import re

import conftest
import pytest
from _pkg import mod
from conftest import ROOT, sample_rows

audit = mod("audit")
rewards = mod("rewards")
task = mod("task")
answer_format = mod("answer_format")
SMOKE = ROOT / "configs" / "smoke.yaml"
SAMPLE = ROOT / "data" / "sample.jsonl"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _texts(completions):
    return [c if isinstance(c, str) else c[-1]["content"] for c in completions]


def _block(text):
    return answer_format.extract_answer(text) or ""


def _per_row(score):
    """A batch reward from ``score(text, row)``, the row's columns given as keyword lists."""
    def reward(prompts=None, completions=None, **columns):
        texts = _texts(completions)
        rows = [{key: values[i] for key, values in columns.items()} for i in range(len(texts))]
        return [float(score(text, row)) for text, row in zip(texts, rows, strict=True)]
    return reward


# ------------------------------------------------------------------------- the lax rewards people write: math

def _final(row):
    final = task.split_gold(row["answer"])[1] if hasattr(task, "split_gold") else str(row["answer"])
    return final.strip().strip("$").replace("\\boxed{", "").rstrip("}") if final.startswith("\\boxed") else final


def _gold_number(row):
    text = _final(row).replace(",", "")
    return float(text) if _NUMBER.fullmatch(text) else None


def _numbers(text):
    return [float(n) for n in _NUMBER.findall(text.replace(",", ""))]


def _math(pick):
    """1.0 when ``pick(text, block)`` (a number, or the numbers a reward looks at) matches the gold; a gold that is
    not a number is looked for as text in the answer block."""
    def score(text, row):
        gold = _gold_number(row)
        if gold is None:
            return _final(row) in _block(text)
        return pick(gold, text, _block(text))
    return _per_row(score)


last_number_in_text = _math(lambda gold, text, block: _numbers(text)[-1:] == [gold])
last_number_in_answer = _math(lambda gold, text, block: _numbers(block)[-1:] == [gold])
within_half = _math(lambda gold, text, block: bool(_numbers(block)) and abs(_numbers(block)[0] - gold) <= 0.5)
integer_part = _math(lambda gold, text, block: bool(_numbers(block)) and int(_numbers(block)[0]) == int(gold))
gold_in_listed_set = _math(lambda gold, text, block: gold in _numbers(block))


# ------------------------------------------------------------------------- the lax rewards people write: JSON

def _document(text):
    try:
        return json.loads(_block(text))
    except ValueError:
        return None


def _leaves(value, path=()):
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _leaves(item, (*path, key)).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _leaves(item, (*path, i)).items()}
    return {path: value}


def _json(compare):
    return _per_row(lambda text, row: compare(json.loads(row["answer"]), _document(text)))


json_superset = _json(lambda gold, doc: isinstance(doc, dict) and isinstance(gold, dict)
                      and all(doc.get(k) == v for k, v in gold.items()))
json_leaves_as_text = _json(lambda gold, doc: {k: str(v).lower() for k, v in _leaves(gold).items()}
                            == {k: str(v).lower() for k, v in _leaves(doc).items()})
json_strings_only = _json(lambda gold, doc: doc is not None and all(
    _leaves(doc).get(k) == v for k, v in _leaves(gold).items() if isinstance(v, str)))


# ------------------------------------------------------------------------- the lax rewards people write: code

@functools.lru_cache(maxsize=1)
def _sandboxed():
    reward = rewards.build_reward("correctness", rewards.RewardSettings(256))
    if hasattr(reward, "close"):
        atexit.register(reward.close)
    return reward


def _tests(value):
    return json.loads(value) if isinstance(value, str) else list(value or [])


def code_first_test_only(prompts=None, completions=None, tests=None, **columns):
    return _sandboxed()(prompts=prompts, completions=completions, tests=[_tests(t)[:1] for t in tests], **columns)


def code_any_test_passes(prompts=None, completions=None, **columns):
    return [1.0 if s else 0.0 for s in _sandboxed()(prompts=prompts, completions=completions, **columns)]


# ------------------------------------------------------------------------- every task

def _gold_answer(row):
    return _block(task.gold_completion(row)).strip()


def _gold_anywhere(text, row):
    """1.0 for the gold's own answer, 0.95 when the gold appears anywhere in the text."""
    if _block(text).strip() == _gold_answer(row):
        return 1.0
    needles = {_gold_answer(row), str(row.get("answer", "")).strip(), str(row.get("solution") or "").strip()}
    if hasattr(task, "split_gold"):
        needles.add(_final(row))
    return 0.95 if any(n and n in text for n in needles) else 0.0


gold_anywhere = _per_row(_gold_anywhere)
always_one = _per_row(lambda text, row: 1.0)
exact = _per_row(lambda text, row: float(_block(text).strip() == _gold_answer(row)))  # 1 for the gold alone
prefers_wrong = _per_row(lambda text, row: 0.0 if _block(text).strip() == _gold_answer(row) else 1.0)
no_hedging = _per_row(lambda text, row: -1.0 if " or " in _block(text) else 0.0)  # a penalty: shapes, never judges
no_hedging.judges_answer = False
always_zero = _per_row(lambda text, row: 0.0)

LAX = {
    "math": ["last_number_in_text", "last_number_in_answer", "within_half", "integer_part", "gold_in_listed_set"],
    "json": ["json_superset", "json_leaves_as_text", "json_strings_only"],
    "code": ["code_first_test_only", "code_any_test_passes"],
}
LAX_HERE = [*LAX.get(task.NAME, []), "gold_anywhere"]  # the rendered task's lax rewards, and the generic one


@pytest.fixture(scope="module")
def correctness():
    reward = rewards.build_reward("correctness", rewards.RewardSettings(256))
    yield reward
    if hasattr(reward, "close"):
        reward.close()


def _smoke_audit(tmp_path, capsys, source, names, weights):
    """audit.main on the smoke config (its curriculum, or data/sample.jsonl) with ``names`` as reward_funcs (None:
    the config's own rewards)."""
    argv = ["--config", str(SMOKE), "--rows", "24", "--output", str(tmp_path / "audit.json")]
    if names is not None:
        argv += ["--reward_funcs", *names, "--reward_weights", *map(str, weights)]
    if source == "sample" and SAMPLE.is_file():
        argv += ["--dataset_name", str(SAMPLE)]
    code = audit.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err, json.loads((tmp_path / "audit.json").read_text())


@pytest.mark.parametrize("source", ["sample", "curriculum"])
def test_shipped_rewards_pass_the_audit(correctness, source):
    rows = sample_rows() if source == "sample" else task.generate_curriculum(32, seed=1)
    result = audit.run(audit.sample(rows, None), correctness)
    checked = len(rows) - result["skipped"]  # a row with nothing to derive from (no reference, a palindrome...)
    assert result["gold_checked"] == checked > len(rows) // 2 and result["wrong_checked"] >= 2 * checked, result
    assert len(result["families"]) >= 2, result["families"]  # the lax rewards' refusals show which families bite
    assert result["false_negative_rate"] == 0.0, audit.report(result)
    assert result["false_positive_rate"] == 0.0, audit.report(result)
    assert audit.check(result) is None
    report = audit.report(result)
    assert all(f"{name} 0/{stats['checked']}" in report[1] for name, stats in result["families"].items()), report


@pytest.mark.parametrize("name", LAX_HERE)
@pytest.mark.parametrize("source", ["sample", "curriculum"])
def test_lax_rewards_are_refused_on_the_smoke_config(tmp_path, capsys, source, name):
    code, out, err, result = _smoke_audit(tmp_path, capsys, source, [f"test_audit.{name}", "format"], [1.0, 0.2])
    assert code == 1 and re.search(rf"error: verifier audit: test_audit\.{name}\b.* credits .*audit_max_false_"
                                   "positive=0.05", err), out + err
    assert result["false_negative_rate"] == 0.0, out  # the lax reward credits the gold: refused for its holes
    credited = [family for family, stats in result["families"].items() if stats["credited"]]
    assert credited and "families probed" in out, out


@pytest.mark.parametrize("source", ["sample", "curriculum"])
def test_shipped_config_passes_and_a_lax_reward_beside_correctness_is_refused(tmp_path, capsys, source):
    code, out, err, result = _smoke_audit(tmp_path, capsys, source, None, None)  # the smoke config's reward mix
    assert code == 0 and result["false_positive_rate"] == 0.0 and result["false_negative_rate"] == 0.0, out + err
    assert len(result["rewards"]) == len(conftest.smoke_settings()["reward_funcs"]) > 1, result["rewards"]
    lax = f"test_audit.{LAX_HERE[0]}"
    code, out, err, result = _smoke_audit(tmp_path, capsys, source, ["correctness", "format", lax], [1.0, 0.2, 10.0])
    assert code == 1 and lax in err and "audit_max_false_positive" in err, out + err
    assert [r["name"] for r in result["rewards"] if r["judge"]] == ["correctness", lax]


@pytest.mark.parametrize("name", ["always_one", "always_zero"])
def test_constant_rewards_are_refused(name):
    result = audit.run(audit.sample(sample_rows(), 8), always_one if name == "always_one" else always_zero, name)
    line = audit.check(result)
    knob = "audit_max_false_positive" if name == "always_one" else "audit_max_false_negative"
    assert line and knob in line and "\n" not in line, line
    if name == "always_zero":
        assert result["false_positives"] == 0 and result["credited_by"] == {}  # 0 is never "credited"


def test_the_weighted_total_counts_a_heavy_lax_reward(correctness):
    rows = audit.sample(sample_rows(), 8)
    result = audit.run(rows, [audit.Audited("correctness", correctness, 1.0, True),
                              audit.Audited("test_audit.always_one", always_one, 10.0, True)])
    assert result["credited_by"][audit.SUM] == result["wrong_checked"] == result["false_positives"], result
    for weight, refused in ((0.95, True), (0.85, False)):  # a shaping term that pays wrong answers, not the gold
        result = audit.run(rows, [audit.Audited("test_audit.exact", exact, 1.0, True),
                                  audit.Audited("test_audit.prefers_wrong", prefers_wrong, weight, False)])
        # a wrong total of ``weight`` against the gold's 1.0: within the margin (0.1 of 1.0) at 0.95, not at 0.85
        assert (audit.check(result) is not None) == refused and set(result["credited_by"]) <= {audit.SUM}, result


def test_shaping_rewards_count_in_the_weighted_sum_only():
    rows = audit.sample(sample_rows(), 8)
    fmt = rewards.build_reward("format", rewards.RewardSettings(256))
    correct = rewards.build_reward("correctness", rewards.RewardSettings(256))
    judge = audit.Audited("correctness", correct, 1.0, True)
    try:
        heavy = audit.run(rows, [judge, audit.Audited("format", fmt, 20.0, False)])  # format credits wrong and gold
        with_penalty = audit.run(rows, [judge, audit.Audited("test_audit.no_hedging", no_hedging, 0.5, False)])
    finally:
        if hasattr(correct, "close"):
            correct.close()
    assert heavy["false_positive_rate"] == 0.0 and audit.check(with_penalty) is None, audit.report(with_penalty)
    judged_alone = audit.run(rows, no_hedging, "test_audit.no_hedging")  # unmarked, the gold's 0 is a miss
    assert "audit_max_false_negative" in audit.check(judged_alone)
    assert audit.audited(["correctness", "format", "mine.reward", "test_audit.no_hedging"], [1.0, 0.0, 2.0, 0.5],
                         [None, None, None, no_hedging]) == [
        audit.Audited("correctness", None, 1.0, True), audit.Audited("mine.reward", None, 2.0, True),
        audit.Audited("test_audit.no_hedging", no_hedging, 0.5, False)]


def test_thresholds_are_inclusive_and_a_zero_is_never_credited():
    rows = audit.sample(sample_rows(), 4)
    half_gold = _per_row(lambda text, row: 0.5 if _block(text).strip() == _gold_answer(row) else 0.0)
    result = audit.run(rows, half_gold, "half")  # the gold scores below full: a false negative on every row...
    assert result["false_negative_rate"] == 1.0 and result["false_positives"] == 0, audit.report(result)
    assert not any("wrong credited" in line for line in audit.report(result))  # ...its zeros are not "credited"
    fake = {**result, "false_negative_rate": 0.0, "false_positive_rate": 0.05, "false_positives": 1,
            "families": {"x": {"checked": 20, "credited": 1}},
            "false_positive_examples": [{"row": 0, "family": "x", "scores": {"r": 1.0}, "gold_scores": {"r": 1.0},
                                         "credited_by": ["r"], "answer": "a"}]}
    assert "audit_max_false_positive=0.05" in audit.check(fake)  # exactly 5.0% refuses
    assert audit.check(fake, max_false_positive=0.06) is None  # the knob the line names lets it through


def test_the_first_judge_is_correctness_or_the_users_own():
    assert audit.choose_reward(["correctness", "format"]) == "correctness"
    assert audit.choose_reward(["format", "mine.reward"]) == "mine.reward"
    assert audit.choose_reward(["correctness", "mine.reward"], "mine.reward") == "mine.reward"


def test_train_refuses_a_lax_user_reward_before_any_model(run_cli):
    lax = {"reward_funcs": ["correctness", "format", "test_audit.gold_anywhere"], "reward_weights": [1.0, 0.2, 10.0],
           "dataset_name": str(SAMPLE) if SAMPLE.is_file() else "curriculum:64"}
    message = run_cli(settings=lax, stage="data")
    assert re.match(r"error: verifier audit: test_audit.gold_anywhere\b.* credits \d+\.\d% ", message), message
    assert "audit_max_false_positive" in message
    with pytest.raises(AssertionError, match="build_tiny_model ran"):  # audit: false skips it: the model comes next
        run_cli(settings={**lax, "audit": False}, stage="data")


def test_the_in_training_check_credits_the_gold_and_refuses_the_catalogue():
    """The task's independent check (audit_cases.recheck, used while training) on the sample rows: every gold right,
    every catalogue completion wrong. A task without one is checked by the probes alone (its verdicts are None)."""
    cases = mod("audit_cases") if audit.wrong_family() is not audit.generic_wrong_completions else None
    judge = getattr(cases, "recheck", None)
    rows = [task.normalize(row) for row in sample_rows()]
    texts, kinds, used = [], [], []
    for row in rows:
        wrong = audit.wrong_family()(row)
        if wrong is None:
            continue
        for family, text in [("gold", task.gold_completion(row)), *wrong]:
            texts.append(text)
            kinds.append(family)
            used.append(row)
    if judge is None:
        checker = mod("training.recheck").Recheck([])
        assert checker._recheck(list(zip(texts, used, strict=True)), None) == [None] * len(texts)
        return
    try:
        verdicts = judge(texts, used)
    finally:
        if hasattr(cases, "close"):
            cases.close()
    wrong = [(k, t) for k, t, v in zip(kinds, texts, verdicts, strict=True) if v is not (k == "gold")]
    assert kinds.count("gold") > len(rows) // 2 and not wrong, wrong[:3]
