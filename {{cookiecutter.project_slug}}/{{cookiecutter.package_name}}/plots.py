"""Training curves from a run's ``trainer_state.json``, as one PNG.

    python plot.py outputs/smoke                                   # writes outputs/smoke/training.png
    python plot.py outputs/24gb/checkpoint-500 --output run.png

The log is ``trainer_state.json`` in the given directory, else in its latest ``checkpoint-*/`` (by step), or the
file itself when a path to it is given. Panels, each only when its metrics were logged:

* reward: the total (weighted) reward and each ``rewards/<name>/mean`` (eval values as markers, if any);
* reward spread: ``reward_std`` and ``frac_reward_zero_std`` (groups whose completions all scored the same give
  no gradient: a rising fraction means the task is too easy or too hard for the model);
* completion length: ``completions/mean_length`` and, on the right axis, ``completions/clipped_ratio``;
* KL to the reference model (``kl``, logged when ``beta`` > 0);
* the in-training verifier check's disagreement rate (``recheck/disagreement``, training/recheck.py: full-credit
  completions re-judged wrong and catalogue wrong completions credited; a sustained rise is suspected reward
  hacking, marked like the other health warnings);
* learning rate (a constant one is a note under the title instead of a panel).

Steps where the health monitor warned (``health.json`` next to the log, see training/health.py) are dashed vertical
lines, named in the legend. The title is the run directory; legends sit outside the curves.

Matplotlib with the Agg backend: no display needed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from .files import atomic_file


class PlotError(ValueError):
    """Bad plot input; its message is one line that says what to fix."""


def find_state(path: str | Path) -> Path:
    """The trainer_state.json of a run dir (or of its latest checkpoint), or the given file itself."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise PlotError(f"{str(path)!r} is neither a run directory nor a trainer_state.json")
    if (path / "trainer_state.json").is_file():
        return path / "trainer_state.json"
    checkpoints = [
        (int(m.group(1)), p)
        for p in path.glob("checkpoint-*")
        if (m := re.fullmatch(r"checkpoint-(\d+)", p.name)) and (p / "trainer_state.json").is_file()
    ]
    if not checkpoints:
        raise PlotError(f"no trainer_state.json in {str(path)!r} or its checkpoint-*/ (has the run saved one?)")
    return max(checkpoints)[1] / "trainer_state.json"


def load_history(state_file: Path) -> list[dict]:
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PlotError(f"{state_file} is not readable JSON: {str(error).splitlines()[0]}") from error
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list) or not any(isinstance(e, dict) and "reward" in e for e in history):
        raise PlotError(f"{state_file} has no logged training reward (log_history is empty; check logging_steps)")
    return [e for e in history if isinstance(e, dict)]


def series(history: list[dict], key: str) -> tuple[list[float], list[float]]:
    """(steps, values) of one logged metric; entries without it, or with a non-finite value, are skipped."""
    steps, values = [], []
    for entry in history:
        value = entry.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
            steps.append(entry.get("step", len(steps)))
            values.append(float(value))
    return steps, values


def health_warnings(run_dir: str | Path) -> list[tuple[int, str]]:
    """(step, condition) of each warning in the run's health.json (in ``run_dir`` or, for a checkpoint, its parent);
    [] when there is none or it is unreadable."""
    for candidate in (Path(run_dir) / "health.json", Path(run_dir).parent / "health.json"):
        try:
            warnings = json.loads(candidate.read_text(encoding="utf-8")).get("warnings", {})
            return sorted((int(w["step"]), str(name)) for name, w in warnings.items())
        except (OSError, ValueError, AttributeError, KeyError, TypeError):
            continue
    return []


def constant_lr(history: list[dict]) -> float | None:
    """The learning rate when every logged value is the same, else None."""
    values = set(series(history, "learning_rate")[1])
    return values.pop() if len(values) == 1 else None


def reward_names(history: list[dict]) -> list[str]:
    names = []
    for entry in history:
        for key in entry:
            m = re.fullmatch(r"rewards/(.+)/mean", key)
            if m and m.group(1) not in names:
                names.append(m.group(1))
    return names


def panels(history: list[dict]) -> list[dict]:
    """The panels to draw: a title and the (label, key, axis) lines of each, only those with data."""
    out = [
        {
            "title": "reward",
            "lines": [("total reward", "reward", "left")]
            + [(name, f"rewards/{name}/mean", "left") for name in reward_names(history)],
            "eval": [("eval total", "eval_reward")]
            + [(f"eval {name}", f"eval_rewards/{name}/mean") for name in reward_names(history)],
        },
        {
            "title": "reward spread",
            "lines": [("reward_std", "reward_std", "left"), ("frac_reward_zero_std", "frac_reward_zero_std", "left")],
        },
        {
            "title": "completion length (tokens) / clipped ratio",
            "lines": [
                ("mean length", "completions/mean_length", "left"),
                ("clipped ratio", "completions/clipped_ratio", "right"),
            ],
        },
        {"title": "KL to reference", "lines": [("kl", "kl", "left")]},
        {"title": "verifier check: disagreement rate", "lines": [("disagreement", "recheck/disagreement", "left")]},
    ]
    if constant_lr(history) is None:
        out.append({"title": "learning rate", "lines": [("learning_rate", "learning_rate", "left")]})
    return [p for p in out if any(series(history, key)[0] for _, key, _ in p["lines"])]


def plot(history: list[dict], output: Path, title: str = "", warnings: list[tuple[int, str]] = ()) -> Path:
    """Draw the panels of ``history`` into ``output`` (PNG), with a dashed line at each health warning's step;
    returns the path written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = panels(history)
    columns = 2 if len(chosen) > 1 else 1
    rows = (len(chosen) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(6.5 * columns, 3.6 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, chosen, strict=False):
        right = None
        handles = []
        for index, (name, key, side) in enumerate(panel["lines"]):
            steps, values = series(history, key)
            if not steps:
                continue
            target = ax
            if side == "right":
                right = right or ax.twinx()
                target = right
            width = 2.0 if index == 0 and panel["title"] == "reward" else 1.2
            (line,) = target.plot(steps, values, label=name, color=f"C{index}", linewidth=width)
            handles.append(line)
            if side == "right":
                target.set_ylabel(name)
        for index, (name, key) in enumerate(panel.get("eval", [])):
            steps, values = series(history, key)
            if steps:
                handles.append(ax.scatter(steps, values, label=name, color=f"C{index}", marker="D", zorder=3))
        for index, (step, name) in enumerate(warnings):
            marker = ax.axvline(step, color=f"C{index + 3}", linestyle="--", linewidth=1, label=f"warning: {name}")
            handles.append(marker)
        ax.set_title(panel["title"])
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if panel["title"] == "learning rate":
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
        ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02 if right is None else 1.12, 1))
    for ax in list(axes.flat)[len(chosen) :]:
        ax.set_visible(False)
    lr = constant_lr(history)
    note = f"learning rate constant at {lr:.3g}" if lr is not None else ""
    if title or note:
        fig.suptitle("\n".join(t for t in (title, note) if t), fontsize=11)
    fig.tight_layout()
    with atomic_file(output, "wb") as handle:
        fig.savefig(handle, dpi=100, format="png", bbox_inches="tight")
    plt.close(fig)
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Plot a GRPO run's training curves to a PNG.", allow_abbrev=False
    )
    parser.add_argument("run", help="run dir (output_dir), a checkpoint dir, or a trainer_state.json")
    parser.add_argument("--output", help="PNG path (default: <run dir>/training.png)")
    parser.error = lambda message: parser.exit(2, f"error: {message} (see --help)\n")  # one line, no usage
    args = parser.parse_args(argv)
    try:
        state_file = find_state(args.run)
        history = load_history(state_file)
        run_dir = Path(args.run) if Path(args.run).is_dir() else state_file.parent
        output = Path(args.output) if args.output else run_dir / "training.png"
        plot(history, output, title=str(run_dir), warnings=health_warnings(state_file.parent))
    except PlotError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {output} ({len(panels(history))} panels, {len(series(history, 'reward')[0])} logged steps)")
    return 0
