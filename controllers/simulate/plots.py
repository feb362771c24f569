"""Plots of trace runs, one or more scheduler confs side by side (each result is labelled by its conf).

- ``utilization.png``: the allocation rate of the key resource (GPUs when any node has them, else CPU) over
  time, one solid line per conf, and its fragmentation rate (the free key resource stranded on nodes that
  cannot fit the smallest pending pod) dashed in the same color;
- ``shares.png``: one panel per conf: each queue's share of the key resource over time (solid) and its
  deserved share (dashed, same color). Queues that never held nor deserved any of it are left out;
- ``waits.png``: the empirical CDF of job wait times in minutes (symlog axis), one line per conf, and one per
  queue as well when there is a single conf. The fraction is of all jobs, so jobs that never started keep
  a line below 100%;
- ``gpu.png`` (only when the trace has GPU cards): card-level GPU allocation over time, one solid line
  per conf, and GPU fragmentation (free memory on partly used cards) dashed in the same color;
- ``arrivals.png`` (the openb replay): the GPU allocation ratio against the share of the cluster's GPUs
  arrived (the paper's Fig. 9 curve), one solid line per conf, and the paper's fragmentation measure
  (fragmented idle GPU, of all GPU) dashed in the same color.

Series hold their value until the next event, so they are drawn as steps. matplotlib is optional
(``pumice[plot]``): it is imported only when plotting.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from controllers.simulate.metrics import JobResult, TraceResult

NAMES = {"nvidia.com/gpu": "GPU", "cpu": "CPU", "memory": "memory"}


def _name(resource: str) -> str:
    return NAMES.get(resource, resource)


def _values(series: dict[str, Any], key: str) -> list[float]:
    """A series with its padding (None) as NaN, so that nothing is drawn there."""
    return [float("nan") if v is None else float(v) for v in series.get(key, [])]


def _hours(series: dict[str, Any]) -> list[float]:
    return [t / 3600 for t in series.get("time", [])]


def _step(ax: Any, hours: list[float], values: list[float], **style: Any) -> None:
    """A held-until-the-next-event series; one the run did not record is left out."""
    if values and len(values) == len(hours):
        ax.step(hours, values, where="post", **style)


def _queues(series: dict[str, Any]) -> list[str]:
    """The queues that held or deserved some of the key resource at some point."""
    names = sorted({k.split(":", 1)[1] for k in series if k.startswith(("share:", "deserved:"))})
    return [
        q
        for q in names
        if any(v > 0 for v in _values(series, f"share:{q}"))
        or any(v > 0 for v in _values(series, f"deserved:{q}"))
    ]


def _cdf(ax: Any, jobs: Sequence[JobResult], label: str, right: float, **style: Any) -> None:
    """Draw the CDF of these jobs' waits (minutes), held flat up to ``right``."""
    if not jobs:
        return
    waits = sorted(j.wait / 60 for j in jobs if j.wait is not None)
    xs = [0.0, *waits, right]
    ys = [0.0, *(i / len(jobs) for i in range(1, len(waits) + 1)), len(waits) / len(jobs)]
    ax.step(xs, ys, where="post", label=f"{label} ({len(waits)}/{len(jobs)} started)", **style)


def _share_axes(ax: Any, title: str, resource: str, percent: Any) -> None:
    """Labels and limits of a plot of shares of the cluster over time."""
    ax.set_title(title)
    ax.set_xlabel("time (hours)")
    ax.set_ylabel(f"share of the cluster's {resource}")
    ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(percent(1.0))
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small")


def require_matplotlib() -> None:
    """Fail with what to install when matplotlib is missing (called before a long run, not after it)."""
    try:
        import matplotlib  # noqa: F401  # only whether it imports
    except ImportError as e:
        raise RuntimeError("--plot needs matplotlib: pip install 'pumice[plot]'") from e


def write_plots(results: Sequence[tuple[str, TraceResult]], directory: Path) -> list[Path]:
    """Write utilization.png, shares.png and waits.png into ``directory``; returns their paths."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    directory.mkdir(parents=True, exist_ok=True)
    keys = sorted({r.key_resource for _, r in results})
    key = "/".join(_name(k) for k in keys) or "key resource"
    paths: list[Path] = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        path = directory / name
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)

    # 1. Allocation and fragmentation of the key resource over time.
    fig, ax = plt.subplots(figsize=(10, 5))
    for i, (label, r) in enumerate(results):
        hours = _hours(r.series)
        alloc = _values(r.series, f"allocation:{r.key_resource}")
        _step(ax, hours, alloc, color=f"C{i}", label=f"{label}: allocation")
        frag = _values(r.series, "fragmentation")
        _step(ax, hours, frag, color=f"C{i}", linestyle="--", label=f"{label}: fragmentation")
    _share_axes(ax, f"{key} allocation and fragmentation over time", key, PercentFormatter)
    save(fig, "utilization.png")

    # 2. Each queue's share against its deserved share, one panel per conf.
    queues = sorted({q for _, r in results for q in _queues(r.series)})
    color = {q: f"C{i % 10}" for i, q in enumerate(queues)}
    fig, axes = plt.subplots(1, max(len(results), 1), figsize=(6 * max(len(results), 1), 4.5), squeeze=False)
    for ax, (label, r) in zip(axes[0], results, strict=False):
        hours = _hours(r.series)
        for q in _queues(r.series):
            _step(ax, hours, _values(r.series, f"share:{q}"), color=color[q], label=q)
            deserved = _values(r.series, f"deserved:{q}")
            _step(ax, hours, deserved, color=color[q], linestyle="--", label=f"{q} deserved")
        name = _name(r.key_resource)
        _share_axes(ax, f"{label}: queue share of {name} (dashed: deserved)", name, PercentFormatter)
    save(fig, "shares.png")

    # 3. Wait-time CDFs: per conf, and per queue when there is only one conf.
    fig, ax = plt.subplots(figsize=(10, 5))
    longest = max((j.wait / 60 for _, r in results for j in r.jobs if j.wait is not None), default=0.0)
    right = max(longest * 1.2, 2.0)
    for i, (label, r) in enumerate(results):
        _cdf(ax, r.jobs, label, right, color=f"C{i}", linewidth=2)
    if len(results) == 1:
        r = results[0][1]
        for i, q in enumerate(sorted({j.queue for j in r.jobs}), start=1):
            mine = [j for j in r.jobs if j.queue == q]
            _cdf(ax, mine, f"queue {q}", right, color=f"C{i % 10}", linestyle="--")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(0, right)
    ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_title("Job wait times: fraction of jobs started within a wait")
    ax.set_xlabel("wait from submission to a whole gang (minutes, symlog)")
    ax.set_ylabel("fraction of jobs")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize="small")
    save(fig, "waits.png")

    # 4. Card-level GPU allocation and fragmentation, when the trace has GPU cards.
    if any(r.gpu is not None for _, r in results):
        fig, ax = plt.subplots(figsize=(10, 5))
        for i, (label, r) in enumerate(results):
            hours = _hours(r.series)
            _step(ax, hours, _values(r.series, "gpu:allocation"), color=f"C{i}", label=f"{label}: allocation")
            frag = _values(r.series, "gpu:fragmentation")
            _step(ax, hours, frag, color=f"C{i}", linestyle="--", label=f"{label}: fragmentation")
        _share_axes(ax, "GPU card allocation and fragmentation over time", "GPU memory", PercentFormatter)
        save(fig, "gpu.png")

    # 5. The openb replay's curve: allocation against the GPU arrived.
    if any(r.arrivals is not None for _, r in results):
        fig, ax = plt.subplots(figsize=(10, 5))
        for i, (label, r) in enumerate(results):
            if r.arrivals is None:
                continue
            arrived = [p.percent / 100 for p in r.arrivals.curve]
            ax.plot(
                arrived, [p.allocation for p in r.arrivals.curve], color=f"C{i}", label=f"{label}: allocated"
            )
            frag = [p.fragmentation for p in r.arrivals.curve]
            ax.plot(arrived, frag, color=f"C{i}", linestyle="--", label=f"{label}: fragmented (paper)")
        ax.set_title("GPU allocation ratio as pods arrive")
        ax.set_xlabel("GPU asked by the pods arrived, of the cluster's GPUs")
        ax.set_ylabel("share of the cluster's GPUs")
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
        save(fig, "arrivals.png")
    return paths
