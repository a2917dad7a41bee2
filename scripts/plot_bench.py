#!/usr/bin/env python3
"""Plots lockstep_bench's JSON: lock throughput against contenders, one series per adapter.

Reads Google Benchmark JSON (reports/bench/bench.json by default) and writes an SVG
(reports/bench/throughput.svg by default): items_per_second of BM_Lock_AcquireRelease/ADAPTER/
contenders:N on a log y axis, one-key and many-keys cases as separate series, with the Redis
baseline (BM_Baseline_RedisPing items_per_second / 2: PING pairs per second) as a dashed line.
Colours are per adapter; many-keys series are dotted, held (/hold:1ms) series dash-dotted, and the
ext libraries (ext:LIB, the npm libraries through services/ext/PROTOCOL.md, counted in their drivers) have
square markers, their legend entries giving the protocol's overhead per operation measured in the
same run (BM_Ext_ProtocolRoundTrip/LIB, overhead_us) when present. The plot grows to fit its legend.
Standard library only.
"""
import argparse
import json
import math
import re
import sys
from pathlib import Path
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 860, 480
LEFT, RIGHT, TOP, BOTTOM = 80, 330, 40, 60
MANY_KEYS = " (many keys)"
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#7b4173", "#e7969c",
          "#3182bd"]
LEGEND_ROW = 18
EXT_PREFIX = "ext:"
HOLD = re.compile(r" \(hold [^)]+\)")
ROUND_TRIP_NAME = re.compile(r"^BM_Ext_ProtocolRoundTrip/(?P<lib>[^/]+)")
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


def base_adapter(series_name):
    """The adapter of a series: its name without the many-keys and hold qualifiers."""
    return HOLD.sub("", series_name.removesuffix(MANY_KEYS)).removesuffix(MANY_KEYS)


def load_all(path):
    """{series: {contenders: items/s}}, the baseline (PING pairs/s, or None) and the ext protocol
    overhead per library ({lib: overhead_us})."""
    with open(path, encoding="utf-8") as f:
        benchmarks = json.load(f).get("benchmarks", [])
    series, baseline, overhead = {}, None, {}
    for b in benchmarks:
        if b.get("error_occurred") or b.get("run_type") == "aggregate":
            continue
        round_trip = ROUND_TRIP_NAME.match(b["name"])
        if round_trip and b.get("overhead_us") is not None:
            overhead[round_trip["lib"]] = b["overhead_us"]
            continue
        rate = b.get("items_per_second")
        if not rate:
            continue
        if b["name"].startswith("BM_Baseline_RedisPing"):
            baseline = rate / 2
            continue
        parsed = parse_lock_name(b["name"])
        if parsed:
            series.setdefault(parsed[0], {})[parsed[1]] = rate
    return series, baseline, overhead


def load(path):
    """{series: {contenders: items/s}} and the baseline (PING pairs/s, or None)."""
    series, baseline, _ = load_all(path)
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

    def __init__(self, xs, ys, height=HEIGHT):
        self.height = height
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
        span = self.height - TOP - BOTTOM
        return self.height - BOTTOM - (math.log10(rate) - self.y_lo) / (self.y_hi - self.y_lo) * span


def text(x, y, content, anchor="middle", extra=""):
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>{escape(content)}</text>'


def frame(axes, xs):
    """Axes, ticks, grid lines and titles."""
    out = [f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{axes.height - TOP - BOTTOM}" '
           'fill="none" stroke="#000"/>']
    for t in axes.y_ticks:
        y = axes.y(t)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(text(LEFT - 6, y + 4, si(t), "end"))
    for c in sorted(set(xs)):
        x = axes.x(c)
        out.append(f'<line x1="{x:.1f}" y1="{axes.height - BOTTOM}" x2="{x:.1f}" y2="{axes.height - BOTTOM + 5}" stroke="#000"/>')
        out.append(text(x, axes.height - BOTTOM + 18, str(c)))
    out.append(text((LEFT + WIDTH - RIGHT) / 2, axes.height - 15, "contenders"))
    out.append(text(18, (TOP + axes.height - BOTTOM) / 2, "acquire+release pairs per second", "middle",
                    f'transform="rotate(-90 18 {(TOP + axes.height - BOTTOM) / 2:.1f})"'))
    out.append(text(WIDTH / 2, 22, "lockstep_bench: lock throughput by contenders", "middle",
                    'font-weight="bold"'))
    return out


def legend_entry(index, label, color, dash=""):
    y = TOP + 10 + index * LEGEND_ROW
    x = WIDTH - RIGHT + 12
    dash = f' stroke-dasharray="{dash}"' if dash else ""
    return [f'<line x1="{x}" y1="{y}" x2="{x + 24}" y2="{y}" stroke="{color}" stroke-width="2"{dash}/>',
            text(x + 30, y + 4, label, "start")]


def dash_of(name):
    """Many keys: dotted; held: dash-dotted; both: dotted with long gaps; else solid."""
    many, held = MANY_KEYS in name, HOLD.search(name) is not None
    if many and held:
        return "2,6"
    return "2,3" if many else ("8,3,2,3" if held else "")


def label_of(name, overhead):
    """The legend text: an ext library's says what one protocol operation costs (not in its rate)."""
    adapter = base_adapter(name)
    if adapter.startswith(EXT_PREFIX) and name == adapter and adapter[len(EXT_PREFIX):] in overhead:
        return f"{name} (protocol +{overhead[adapter[len(EXT_PREFIX):]]:.0f}us/op)"
    return name


def render(series, baseline, overhead=None):
    """The SVG document as a string."""
    overhead = overhead or {}
    xs = [c for points in series.values() for c in points]
    ys = [r for points in series.values() for r in points.values()] + ([baseline] if baseline else [])
    if not xs:
        raise SystemExit("plot_bench: no BM_Lock_AcquireRelease results with items_per_second")
    legend_rows = len(series) + (1 if baseline else 0)
    height = max(HEIGHT, TOP + 10 + legend_rows * LEGEND_ROW + 20)
    axes = Axes(xs, ys, height)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>'] + frame(axes, xs)
    adapters = sorted({base_adapter(name) for name in series})
    # Lockstep's own adapters first, then the ext libraries, each group sorted.
    ordered = sorted(series.items(), key=lambda item: (base_adapter(item[0]).startswith(EXT_PREFIX), item[0]))
    for i, (name, points) in enumerate(ordered):
        # One colour per adapter; many-keys series dotted with hollow markers, held ones dash-dotted;
        # ext libraries with square markers.
        color = COLORS[adapters.index(base_adapter(name)) % len(COLORS)]
        dash = dash_of(name)
        fill = "#fff" if MANY_KEYS in name else color
        ext = base_adapter(name).startswith(EXT_PREFIX)
        coords = " ".join(f"{axes.x(c):.1f},{axes.y(r):.1f}" for c, r in sorted(points.items()))
        out.append(f'<polyline class="series" data-series="{escape(name)}" points="{coords}" fill="none" '
                   f'stroke="{color}" stroke-width="2"' + (f' stroke-dasharray="{dash}"/>' if dash else "/>"))
        if ext:
            out += [f'<rect class="ext-marker" x="{axes.x(c) - 3.5:.1f}" y="{axes.y(r) - 3.5:.1f}" width="7" '
                    f'height="7" fill="{fill}" stroke="{color}"/>' for c, r in points.items()]
        else:
            out += [f'<circle cx="{axes.x(c):.1f}" cy="{axes.y(r):.1f}" r="3" fill="{fill}" stroke="{color}"/>'
                    for c, r in points.items()]
        out += legend_entry(i, label_of(name, overhead), color, dash)
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
    series, baseline, overhead = load_all(args.json)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(series, baseline, overhead), encoding="utf-8")
    print(f"plot: {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
