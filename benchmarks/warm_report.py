"""The warm start's figures and what is made of them: each start's measures
(`Start`), their medians over the rounds (`Figures`), the targets as ratios to
baselines of the same run (`Target`, `targets`; issues 16 and 25), the long
reply against its floor (`floor_ratios`) and the printed table. Measured by
`benchmarks.warm_start`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

MEASURES = ("initialize", "session", "to_model", "first_chunk", "long_reply", "exit")
LONG = 2000  # chunks of the long reply


@dataclass(slots=True)
class Start:
    """One start's figures, in seconds (`peak_rss` in bytes)."""

    initialize: float
    session: float
    to_model: float  # prompt to its model request at the fake (nan: none is made)
    first_chunk: float
    long_reply: float  # the long prompt to its answer (nan: no model was asked)
    long_cpu: float  # CPU the agent's tree (and daemon) used meanwhile
    exit: float
    peak_rss: int


@dataclass(slots=True)
class Figures:
    starts: dict[str, list[Start]] = field(default_factory=dict)
    lsp: dict[str, list[float]] = field(default_factory=dict)
    floor: list[float] = field(default_factory=list)  # the long reply, bare httpx-sse
    floor_cpu: list[float] = field(default_factory=list)  # and its CPU

    def median(self, name: str, measure: str) -> float:
        return float(statistics.median(getattr(s, measure) for s in self.starts[name]))

    def lsp_median(self, mode: str) -> float:
        return statistics.median(self.lsp[mode])


@dataclass(frozen=True, slots=True)
class Target:
    """`subject <= limit * baseline`, each a (row, measure) median."""

    title: str
    subject: tuple[str, str]
    baseline: tuple[str, str]
    limit: float

    def figures(self, f: Figures) -> dict[str, float]:
        s, b = _value(f, *self.subject), _value(f, *self.baseline)
        return {"subject": s, "baseline": b, "ratio": s / b, "limit": self.limit}


def targets(daemon: bool) -> list[Target]:
    warm, nod, node, echo = "loopd warm", "loopd --no-daemon", "claude-agent-acp", "echo agent"
    cold = "loopd cold"
    lsp_rows = (cold, warm, nod) if daemon else (nod,)
    return [
        Target("warm: spawn -> session ready vs the Node adapter's", (warm, "session"),
               (node, "session"), 0.1),
        Target("warm: spawn -> session ready vs the echo agent's initialize", (warm, "session"),
               (echo, "initialize"), 0.1),
        Target("cold: spawn -> initialize vs the Node adapter's", (cold, "initialize"),
               (node, "initialize"), 1.0),
        Target("cold: spawn -> session ready vs the Node adapter's", (cold, "session"),
               (node, "session"), 1.0),
        Target("warm: spawn -> initialize vs the Node adapter's", (warm, "initialize"),
               (node, "initialize"), 1.0),
        Target("cold: spawn -> session ready vs --no-daemon", (cold, "session"),
               (nod, "session"), 1.0),
        Target("warm: prompt -> first chunk vs the Node adapter's", (warm, "first_chunk"),
               (node, "first_chunk"), 0.1),
        Target("--no-daemon: prompt -> first chunk vs the Node adapter's", (nod, "first_chunk"),
               (node, "first_chunk"), 0.1),
        *(Target(f"{mode}: {LONG}-chunk reply -> end vs the Node adapter's",
                 (f"loopd {mode}", "long_reply"), (node, "long_reply"), 0.1)
          for mode in ("warm", "cold")),
        Target("warm: peak memory (daemon + forwarder) vs the Node adapter's tree",
               (warm, "peak_rss"), (node, "peak_rss"), 0.25),
        *(Target(f"loopd lsp initialize vs loopd acp initialize ({mode.removeprefix('loopd ')})",
                 ("lsp", mode), (mode, "initialize"), 1.0)
          for mode in lsp_rows),
    ]  # fmt: skip


def _value(f: Figures, row: str, measure: str) -> float:
    if row == "floor":
        return statistics.median(f.floor)
    return f.lsp_median(measure) if row == "lsp" else f.median(row, measure)


def floor_ratios(f: Figures) -> dict[str, tuple[float, float]]:
    """Each contender's long reply against the bare consumer's, in wall time and in
    CPU (no target: the floor is what any Python client of this fake pays; on a
    loaded machine the CPU is the steadier of the two)."""
    wall, cpu = statistics.median(f.floor), statistics.median(f.floor_cpu)
    ratios = {
        name: (f.median(name, "long_reply") / wall, f.median(name, "long_cpu") / cpu)
        for name in f.starts
    }
    return {name: r for name, r in ratios.items() if not math.isnan(r[0])}


def table(f: Figures, daemon: bool) -> str:
    note = "" if daemon else "  (no daemon in this build: cold and warm run in-process)"
    head = (
        f"{'':22}{'initialize':>12}{'session':>10}{'to model':>10}{'1st chunk':>11}"
        f"{'long reply':>12}{'exit':>8}{'peak MB':>9}"
    )
    lines = [f"warm start, medians in ms{note}", head]
    for name in f.starts:
        ms = [f.median(name, m) * 1000 for m in MEASURES]
        mb = f.median(name, "peak_rss") / 2**20
        model, long = ("-" if math.isnan(v) else f"{v:.1f}" for v in (ms[2], ms[4]))
        lines.append(
            f"{name:22}{ms[0]:12.0f}{ms[1]:10.0f}{model:>10}{ms[3]:11.1f}{long:>12}"
            f"{ms[5]:8.0f}{mb:9.0f}"
        )
    floor_ms = statistics.median(f.floor) * 1000
    lines.append(f"{'bare httpx-sse':22}{'':54}{floor_ms:12.1f}")
    for mode in f.lsp:
        lines.append(f"{'loopd lsp (' + mode.removeprefix('loopd ') + ')':22}"
                     f"{f.lsp_median(mode) * 1000:12.0f}")  # fmt: skip
    lines += ["", "targets (issues 16 and 25)"]
    for t in targets(daemon):
        r = t.figures(f)
        met = "met" if r["ratio"] <= t.limit else "NOT met"
        lines.append(f"  {t.title}: {r['ratio']:.2f}x (target <= {t.limit:g}x) {met}")
    lines += ["", f"{LONG}-chunk reply against the floor (bare httpx-sse, same fake, same run)"]
    lines.append(f"  bare httpx-sse: {floor_ms:.0f} ms, {statistics.median(f.floor_cpu) * 1e3:.0f}"
                 " ms of CPU")  # fmt: skip
    for name, (wall, cpu) in floor_ratios(f).items():
        cpu_ms = f.median(name, "long_cpu") * 1000
        lines.append(f"  {name}: {wall:.2f}x wall, {cpu:.2f}x CPU ({cpu_ms:.0f} ms)")
    return "\n".join(lines)
