#!/usr/bin/env python3
"""Plots lockstep_bench's JSON: lock throughput against contenders, one series per adapter.

Reads Google Benchmark JSON (reports/bench/bench.json by default) and writes an SVG
(reports/bench/throughput.svg by default): items_per_second of BM_Lock_AcquireRelease/ADAPTER/
contenders:N on a log y axis, one-key and many-keys cases as separate series, with the Redis
baseline (BM_Baseline_RedisPing items_per_second / 2: PING pairs per second) as a dashed line.
Standard library only.
"""
import argparse
import json
import math
import re
import sys
from pathlib import Path
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 760, 480
LEFT, RIGHT, TOP, BOTTOM = 80, 250, 40, 60
MANY_KEYS = " (many keys)"
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]
LOCK_NAME = re.compile(r"^BM_Lock_AcquireRelease/(?P<adapter>[^/]+)(?P<rest>/.*)$")
CONTENDERS = re.compile(r"/contenders:(\d+)")


def parse_lock_name(name):
    """(series, contenders) for a BM_Lock_AcquireRelease name, or None."""
    match = LOCK_NAME.match(name)
    contenders = CONTENDERS.search(name)
    if not match or not contenders:
        return None
    many = "/many-keys" in match["rest"] or "/keys:many" in match["rest"]
    hold = re.search(r"/hold:([^/]+)", match["rest"])  # held cases: a series of their own
    series = match["adapter"] + (MANY_KEYS if many else "") + (f" (hold {hold[1]})" if hold else "")
    return series, int(contenders.group(1))


def load(path):
    """{series: {contenders: items/s}} and the baseline (PING pairs/s, or None)."""
    with open(path, encoding="utf-8") as f:
        benchmarks = json.load(f).get("benchmarks", [])
    series, baseline = {}, None
    for b in benchmarks:
        rate = b.get("items_per_second")
        if b.get("error_occurred") or not rate or b.get("run_type") == "aggregate":
            continue
        if b["name"].startswith("BM_Baseline_RedisPing"):
            baseline = rate / 2
            continue
        parsed = parse_lock_name(b["name"])
        if parsed:
            series.setdefault(parsed[0], {})[parsed[1]] = rate
    return series, baseline


def log_ticks(lo, hi):
    """Powers of ten spanning [lo, hi]."""
    return [10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


def si(value):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:.3g}"


class Axes:
    """Maps contenders (log2 x) and items/s (log10 y) to SVG coordinates."""

    def __init__(self, xs, ys):
        self.x_lo, self.x_hi = math.log2(min(xs)), math.log2(max(xs))
        if self.x_hi == self.x_lo:
            self.x_hi += 1
        ticks = log_ticks(min(ys), max(ys))
        self.y_lo, self.y_hi = math.log10(ticks[0]), math.log10(ticks[-1])
        if self.y_hi == self.y_lo:
            self.y_hi += 1
        self.y_ticks = [t for t in ticks if self.y_lo <= math.log10(t) <= self.y_hi]

    def x(self, contenders):
        span = WIDTH - LEFT - RIGHT
        return LEFT + (math.log2(contenders) - self.x_lo) / (self.x_hi - self.x_lo) * span

    def y(self, rate):
        span = HEIGHT - TOP - BOTTOM
        return HEIGHT - BOTTOM - (math.log10(rate) - self.y_lo) / (self.y_hi - self.y_lo) * span


def text(x, y, content, anchor="middle", extra=""):
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>{escape(content)}</text>'


def frame(axes, xs):
    """Axes, ticks, grid lines and titles."""
    out = [f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{HEIGHT - TOP - BOTTOM}" '
           'fill="none" stroke="#000"/>']
    for t in axes.y_ticks:
        y = axes.y(t)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(text(LEFT - 6, y + 4, si(t), "end"))
    for c in sorted(set(xs)):
        x = axes.x(c)
        out.append(f'<line x1="{x:.1f}" y1="{HEIGHT - BOTTOM}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM + 5}" stroke="#000"/>')
        out.append(text(x, HEIGHT - BOTTOM + 18, str(c)))
    out.append(text((LEFT + WIDTH - RIGHT) / 2, HEIGHT - 15, "contenders"))
    out.append(text(18, (TOP + HEIGHT - BOTTOM) / 2, "acquire+release pairs per second", "middle",
                    f'transform="rotate(-90 18 {(TOP + HEIGHT - BOTTOM) / 2:.1f})"'))
    out.append(text(WIDTH / 2, 22, "lockstep_bench: lock throughput by contenders", "middle",
                    'font-weight="bold"'))
    return out


def legend_entry(index, label, color, dash=""):
    y = TOP + 10 + index * 18
    x = WIDTH - RIGHT + 12
    dash = f' stroke-dasharray="{dash}"' if dash else ""
    return [f'<line x1="{x}" y1="{y}" x2="{x + 24}" y2="{y}" stroke="{color}" stroke-width="2"{dash}/>',
            text(x + 30, y + 4, label, "start")]


def render(series, baseline):
    """The SVG document as a string."""
    xs = [c for points in series.values() for c in points]
    ys = [r for points in series.values() for r in points.values()] + ([baseline] if baseline else [])
    if not xs:
        raise SystemExit("plot_bench: no BM_Lock_AcquireRelease results with items_per_second")
    axes = Axes(xs, ys)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>'] + frame(axes, xs)
    adapters = sorted({name.removesuffix(MANY_KEYS) for name in series})
    for i, (name, points) in enumerate(sorted(series.items())):
        # One colour per adapter; its many-keys series dotted, with hollow markers.
        color = COLORS[adapters.index(name.removesuffix(MANY_KEYS)) % len(COLORS)]
        many = MANY_KEYS in name
        dash, fill = ("2,3", "#fff") if many else ("", color)
        coords = " ".join(f"{axes.x(c):.1f},{axes.y(r):.1f}" for c, r in sorted(points.items()))
        out.append(f'<polyline class="series" data-series="{escape(name)}" points="{coords}" fill="none" '
                   f'stroke="{color}" stroke-width="2"' + (f' stroke-dasharray="{dash}"/>' if many else "/>"))
        out += [f'<circle cx="{axes.x(c):.1f}" cy="{axes.y(r):.1f}" r="3" fill="{fill}" stroke="{color}"/>'
                for c, r in points.items()]
        out += legend_entry(i, name, color, dash)
    if baseline:
        y = axes.y(baseline)
        out.append(f'<line class="baseline" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                   'stroke="#000" stroke-width="1.5" stroke-dasharray="6,4"/>')
        out += legend_entry(len(series), f"baseline: PING pairs ({si(baseline)}/s)", "#000", "6,4")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="?", default="reports/bench/bench.json")
    parser.add_argument("--out", default="reports/bench/throughput.svg")
    args = parser.parse_args(argv)
    series, baseline = load(args.json)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(series, baseline), encoding="utf-8")
    print(f"plot: {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
