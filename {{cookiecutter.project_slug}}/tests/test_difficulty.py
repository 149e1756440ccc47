"""The online difficulty pool: one entry per distinct prompt, retirement and revisits (seeded), the sampler (rows of
admitted prompts, one group per prompt in a batch), state round trip, and smoke runs with the pool on: logged counts,
kill-and-resume with the state restored, two processes."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from types import SimpleNamespace

import pytest
import yaml
from _pkg import free_port, mod
from _smoke_run import ROOT

difficulty = mod("training.difficulty")
task = mod("task")

RIGHT, WRONG, MIXED = [1.0] * 4, [0.0] * 4, [1.0, 0.0, 0.0, 1.0]


def make_pool(size=4, retire_after=2, revisit_prob=0.1, seed=0, prompts_digest=None):
    return difficulty.DifficultyPool(size, difficulty.PoolSettings(retire_after, revisit_prob, seed), prompts_digest)


def chat(question, system="S"):
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def test_duplicate_prompts_share_one_pool_entry():
    same_a = [{"content": "S", "role": "system"}, {"content": "a", "role": "user"}]  # chat("a"), keys reordered
    ids, digest = difficulty.prompt_keys([chat("a"), chat("b"), chat("a"), same_a, chat("a", "T"), chat("b")])
    assert ids == [0, 1, 0, 0, 2, 1]  # dense ids in order of first appearance; another system prompt is another
    assert difficulty.prompt_keys(["x", "y", "x"])[0] == [0, 1, 0]  # plain-text prompts too
    digest_ab = difficulty.prompt_keys([chat("a"), chat("b")])[1]
    assert difficulty.prompt_keys([chat("a"), chat("b"), chat("b")])[1] == digest_ab  # the same distinct prompts
    assert difficulty.prompt_keys([chat("b"), chat("a")])[1] != digest_ab  # other ids for the same prompts
    assert difficulty.prompt_keys([chat("a"), chat("c")])[1] != digest_ab
    pool = make_pool(size=max(ids) + 1, retire_after=2)
    for row in (0, 2):  # two rows of one prompt: two visits of one entry, enough to retire it
        pool.observe_group(ids[row], RIGHT)
    assert pool.retired == [True, False, False] and pool.visits == [2, 0, 0]


def test_prompt_ids_are_the_same_in_every_process():
    code = (f"from {difficulty.__name__} import prompt_keys; "
            "print(prompt_keys(['q', [{'role': 'user', 'content': 'q'}], 'r', 'q']))")
    outputs = {
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1, outputs  # no per-process salted hash in the ids or the digest
    assert outputs.pop().startswith("([0, 1, 2, 0], '")


def test_retires_after_n_consecutive_identical_all_same_visits():
    pool = make_pool(retire_after=2)
    pool.observe_group(0, RIGHT)
    assert not pool.retired[0]
    pool.observe_group(0, RIGHT)
    assert pool.retired[0]
    pool.observe_group(1, WRONG)
    pool.observe_group(1, MIXED)  # a mixed group breaks the streak
    pool.observe_group(1, WRONG)
    assert not pool.retired[1]
    pool.observe_group(1, [None, float("nan"), 0.0, 0.0])  # unscored counts as wrong
    assert pool.retired[1]
    pool.observe_group(2, WRONG)
    pool.observe_group(2, RIGHT)  # all-wrong then all-right is progress, not a streak
    assert not pool.retired[2] and pool.streak[2] == 1
    assert pool.counts() == {"active": 2, "retired": 2, "revived": 0, "skipped": 0}


def test_a_revisited_prompt_with_a_mixed_group_comes_back():
    pool = make_pool(retire_after=1)
    pool.observe_group(3, WRONG)
    assert pool.retired[3]
    pool.observe_group(3, WRONG)  # still uniform: stays retired
    assert pool.retired[3] and pool.revived == 0
    pool.observe_group(3, MIXED)
    assert not pool.retired[3] and pool.revived == 1 and pool.visits[3] == 3


def test_observe_reads_prompt_major_groups_and_rejects_ragged_input():
    pool = make_pool(size=3, retire_after=1)
    pool.observe([2, 2, 0, 0, 1, 1], [1.0, 1.0, 0.0, 1.0, 0.0, 0.0], group_size=2)
    assert pool.retired == [False, True, True] and pool.visits == [1, 1, 1]
    with pytest.raises(ValueError, match="groups of 4"):
        pool.observe([0, 0, 0], [1.0, 1.0, 1.0], group_size=4)


def test_revisit_probability_is_seeded_and_close_to_the_setting():
    def draws(seed, p):
        pool = make_pool(size=1, retire_after=1, revisit_prob=p, seed=seed)
        pool.observe_group(0, RIGHT)
        return [pool.admits(0) for _ in range(4000)]

    assert draws(7, 0.1) == draws(7, 0.1)
    assert draws(7, 0.1) != draws(8, 0.1)
    assert 0.08 < sum(draws(7, 0.1)) / 4000 < 0.12
    assert not any(draws(1, 0.0)) and all(draws(1, 1.0))
    pool = make_pool(size=1, retire_after=1, revisit_prob=0.25)
    pool.observe_group(0, RIGHT)
    admitted = sum(pool.admits(0) for _ in range(1000))
    assert pool.skipped == 1000 - admitted


def test_sampler_keeps_trl_layout_and_skips_retired_prompts():
    pool = make_pool(size=10, retire_after=1, revisit_prob=0.0)
    for index in (0, 1, 2, 3):
        pool.observe_group(index, RIGHT)
    sampler = difficulty.PoolSampler(pool, mini_repeat_count=2, batch_size=3, repeat_count=2, seed=0)
    indexes = list(sampler)
    assert len(indexes) == len(sampler) == 3 * 3 * 2 * 2  # 3 chunks of 3 prompts, x2 generations, x2 repeats
    for start in range(0, len(indexes), 12):
        block = indexes[start : start + 12]
        assert block[:6] == block[6:]  # the chunk repeats
        assert block[0::2] == block[1::2]  # each prompt twice in a row
        assert len(set(block)) == 3
    assert not {0, 1, 2, 3} & set(indexes)
    assert set(indexes) <= set(range(4, 10))


def test_sampler_draws_rows_of_admitted_prompts_and_one_group_per_prompt_in_a_batch():
    from trl.trainer.utils import RepeatSampler

    row_ids = [0, 1, 2, 0, 3, 4, 0, 5, 1, 2, 6, 0]  # 12 rows, 7 distinct prompts; prompt 0 fills four rows
    pool = make_pool(size=7, retire_after=1, revisit_prob=0.0)
    pool.observe_group(6, RIGHT)  # retired and never revisited: its only row (10) is never drawn
    sampler = difficulty.PoolSampler(pool, mini_repeat_count=2, batch_size=3, repeat_count=2, seed=0,
                                     row_ids=row_ids)
    trl_sampler = RepeatSampler(range(12), mini_repeat_count=2, batch_size=3, repeat_count=2, seed=0)
    assert len(sampler) == len(trl_sampler) == len(list(trl_sampler)) == 4 * 3 * 2 * 2  # an epoch over the rows
    drawn = []
    for _ in range(40):
        indexes = list(sampler)
        assert len(indexes) == len(sampler)
        for start in range(0, len(indexes), 12):
            block = indexes[start : start + 12]
            assert block[:6] == block[6:]  # the chunk repeats
            assert block[0::2] == block[1::2]  # each row twice in a row
            assert len({row_ids[row] for row in block[:6:2]}) == 3  # three distinct prompts, not just rows
            drawn += block[:6:2]
    assert set(drawn) == set(range(12)) - {10}  # every row of an admitted prompt gets its turn
    per_prompt = Counter(row_ids[row] for row in drawn)
    assert max(per_prompt.values()) - min(per_prompt.values()) <= 3  # uniform over prompts, not over rows
    rows_of_0 = Counter(row for row in drawn if row_ids[row] == 0)
    assert max(rows_of_0.values()) - min(rows_of_0.values()) <= 1  # a prompt's rows take turns


def test_sampler_repeats_prompts_only_when_a_batch_needs_more_than_there_are():
    row_ids = [0, 1, 0, 1, 0, 1, 0, 1]
    sampler = difficulty.PoolSampler(make_pool(size=2), mini_repeat_count=1, batch_size=4, repeat_count=1, seed=1,
                                     row_ids=row_ids)
    indexes = list(sampler)
    assert len(indexes) == len(sampler) == 8
    for chunk in (indexes[:4], indexes[4:]):
        assert sorted(row_ids[row] for row in chunk) == [0, 0, 1, 1]
        assert len(set(chunk)) == 4  # a repeated prompt comes with another of its rows
    with pytest.raises(ValueError, match="outside the pool"):
        difficulty.PoolSampler(make_pool(size=2), 1, 1, 1, row_ids=[0, 2])
    with pytest.raises(ValueError, match="at least one row"):
        difficulty.PoolSampler(make_pool(size=3), 1, 1, 1, row_ids=[0, 1])


def zero_std_share(pass_rates, pool_on, seed, steps=150, prompts_per_step=4, group=8):
    """Share of all-same groups over ``steps`` when a fixed policy (a pass rate per prompt, nothing learns) is
    sampled uniformly at random, or through the pool with the default settings."""
    rng = random.Random(seed)
    pool = make_pool(size=len(pass_rates), seed=seed)
    sampler = difficulty.PoolSampler(pool, group, prompts_per_step, 1, seed=seed)
    tied = 0
    for _ in range(steps):
        prompts = sampler.chunk() if pool_on else rng.sample(range(len(pass_rates)), prompts_per_step)
        ids, scores = [], []
        for prompt in prompts:
            got = [float(rng.random() < pass_rates[prompt]) for _ in range(group)]
            tied += max(got) == min(got)
            ids += [prompt] * group
            scores += got
        if pool_on:
            pool.observe(ids, scores, group)
    return tied / (steps * prompts_per_step)


@pytest.mark.parametrize("population", ["solved, unsolved and open", "mostly easy"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pool_cuts_zero_std_groups_of_a_fixed_policy(population, seed):
    """With the policy held fixed (so that faster learning cannot change the picture), the pool spends fewer groups on
    prompts that tie than uniform sampling does."""
    rng = random.Random(seed)
    if population == "mostly easy":  # most prompts right ~90% of the time, a third always right
        rates = [1.0 if rng.random() < 0.3 else rng.betavariate(9, 1) for _ in range(132)]
    else:  # 24 prompts: always right, never right, or a coin flip
        rates = [rng.choice([1.0, 0.0, 0.5]) for _ in range(24)]
    without, with_pool = zero_std_share(rates, False, seed), zero_std_share(rates, True, seed)
    assert with_pool < without - 0.05, (without, with_pool)


def test_sampler_never_stalls_when_everything_is_retired():
    pool = make_pool(size=6, retire_after=1, revisit_prob=0.0)
    for index in range(6):
        pool.observe_group(index, WRONG)
    sampler = difficulty.PoolSampler(pool, mini_repeat_count=1, batch_size=4, repeat_count=1, seed=3)
    chunk = list(sampler)
    assert len(chunk) == 4 and len(set(chunk)) == 4


def test_state_round_trip_restores_decisions():
    _, digest = difficulty.prompt_keys(["a", "b", "c", "d", "e", "a"])
    pool = make_pool(size=5, retire_after=1, revisit_prob=0.5, seed=11, prompts_digest=digest)
    pool.observe([0, 0, 1, 1, 2, 2], [1.0, 1.0, 0.0, 1.0, 0.0, 0.0], group_size=2)
    [pool.admits(0) for _ in range(7)]
    restored = make_pool(size=5, retire_after=1, revisit_prob=0.5, seed=99, prompts_digest=digest)
    restored.load_state_dict(json.loads(json.dumps(pool.state_dict())))
    assert restored.digest() == pool.digest()
    assert restored.retired == pool.retired == [True, False, True, False, False]
    assert [restored.admits(0) for _ in range(50)] == [pool.admits(0) for _ in range(50)]
    with pytest.raises(ValueError, match="for 5 distinct prompts"):
        make_pool(size=6).load_state_dict(pool.state_dict())
    _, other = difficulty.prompt_keys(["a", "b", "c", "d", "f"])  # as many prompts, not the same ones
    with pytest.raises(ValueError, match="other prompts"):
        make_pool(size=5, prompts_digest=other).load_state_dict(pool.state_dict())
    older = {k: v for k, v in pool.state_dict().items() if k != "prompts_digest"}  # a state without the digest
    make_pool(size=5, prompts_digest=digest).load_state_dict(older)
    assert make_pool(size=5, prompts_digest=other).digest() != make_pool(size=5, prompts_digest=digest).digest()


def test_settings_are_checked_and_off_means_trl_trainer():
    args = SimpleNamespace(difficulty_pool=False, pool_retire_after=2, pool_revisit_prob=0.1)
    cls, kwargs = difficulty.trainer_class(args)
    assert cls.__name__ == "GRPOTrainer" and kwargs == {}
    cls, kwargs = difficulty.trainer_class(SimpleNamespace(**{**vars(args), "difficulty_pool": True}), seed=5)
    assert cls is difficulty.DifficultyPoolTrainer and kwargs["pool_settings"].seed == 5
    with pytest.raises(ValueError, match="pool_retire_after"):
        difficulty.pool_settings(SimpleNamespace(**{**vars(args), "pool_retire_after": 0}))
    with pytest.raises(ValueError, match="pool_revisit_prob"):
        difficulty.pool_settings(SimpleNamespace(**{**vars(args), "pool_revisit_prob": 1.5}))


# ------------------------------------------------------------------------------------------------ smoke runs

POOL_ARGS = ["--difficulty_pool", "true", "--pool_retire_after", "1", "--pool_revisit_prob", "0.1",
             "--format_priming_steps", "5", "--logging_steps", "1"]


SMOKE = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
PROMPTS_PER_STEP = SMOKE["per_device_train_batch_size"] // SMOKE["num_generations"]  # one process's prompts per step
# The smoke curriculum repeats its questions over many rows: the pool has an entry per distinct one at most.
DISTINCT_QUESTIONS = len({task.user_message(row)
                          for row in task.generate_curriculum(int(SMOKE["dataset_name"].split(":")[1]))})


def train_command(out, steps, save_steps, *extra):
    return [*extra, "train.py", "--config", "configs/smoke.yaml", "--output_dir", str(out),
            "--max_steps", str(steps), "--save_steps", str(save_steps), "--save_total_limit", "10", *POOL_ARGS]


def pool_state(out, step):
    return json.loads((out / f"checkpoint-{step}" / difficulty.STATE_FILE).read_text())


@pytest.mark.slow
def test_smoke_run_with_the_pool_logs_counts_and_resumes_after_a_kill(tmp_path):
    out, steps = tmp_path / "run", 8
    command = [sys.executable, *train_command(out, steps, 2)]
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.monotonic() + 300
    while not (out / "checkpoint-2" / difficulty.STATE_FILE).is_file():
        assert first.poll() is None, "the first run ended before its first checkpoint"
        assert time.monotonic() < deadline, "no checkpoint within 300 s"
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert not (out / f"checkpoint-{steps}").exists(), "the run finished before the kill; nothing to resume"
    saved = max(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*")
                if (p / "trainer_state.json").is_file() and (p / difficulty.STATE_FILE).is_file())
    before = pool_state(out, saved)
    prompts_per_step = PROMPTS_PER_STEP
    assert sum(before["visits"]) == saved * prompts_per_step

    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"difficulty pool restored from {out / f'checkpoint-{saved}' / difficulty.STATE_FILE}" in second.stdout
    after = pool_state(out, steps)
    assert before["size"] == after["size"] == len(after["visits"]) <= DISTINCT_QUESTIONS  # prompts, not rows
    # Continuity: the restored visits plus the new ones, not a fresh pool (which would count only the new steps).
    assert sum(after["visits"]) == steps * prompts_per_step
    assert all(a >= b for a, b in zip(after["visits"], before["visits"], strict=True))
    state = json.loads((out / f"checkpoint-{steps}" / "trainer_state.json").read_text())
    logged = [e for e in state["log_history"] if "pool/active" in e and "reward" in e]
    assert [e["step"] for e in logged] == list(range(1, steps + 1))
    assert all(e["pool/active"] + e["pool/retired"] == after["size"] for e in logged)
    assert logged[-1]["pool/retired"] == len(after["retired"])
    # The tiny model is wrong on nearly everything, so with retire_after 1 prompts retire from the first steps.
    assert logged[-1]["pool/retired"] > 0


@pytest.mark.slow
def test_two_processes_keep_one_pool(tmp_path):
    out, steps = tmp_path / "ddp", 4
    done = subprocess.run(
        train_command(out, steps, steps, sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                      "--master_port", str(free_port()))
        + ["--num_processes", "2", "--format_priming_steps", "0"],  # priming runs in one process (priming CLI)
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    state = pool_state(out, steps)
    assert state["ranks_agreed"] == 2  # both ranks' digests were gathered and equal at the checkpoint
    assert sum(state["visits"]) == steps * 2 * PROMPTS_PER_STEP  # 2 processes, each its own prompts per step
    log = json.loads((out / f"checkpoint-{steps}" / "trainer_state.json").read_text())["log_history"]
    assert Counter("pool/retired" in e for e in log if "reward" in e)[True] == steps
