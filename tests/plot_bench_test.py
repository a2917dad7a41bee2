#!/usr/bin/env python3
"""scripts/plot_bench.py on a fixed lockstep_bench JSON: the SVG has every adapter's series (the
ext libraries' with square markers and their protocol overhead in the legend, held series of their
own) and the dashed baseline; a skipped case (mongo, no mongod) draws nothing. Usage: plot_bench_test.py PLOT_SCRIPT FIXTURE_JSON OUT_DIR"""
import re
import subprocess
import sys
from pathlib import Path


def main(script, fixture, out_dir):
    out = Path(out_dir) / "throughput.svg"
    subprocess.run([sys.executable, script, fixture, "--out", str(out)], check=True)
    svg = out.read_text(encoding="utf-8")
    series = set(re.findall(r'class="series" data-series="([^"]+)"', svg))
    expected = {"memory", "memory (many keys)", "redis", "redis (many keys)", "redlock",
                "keyed-rw", "keyed-rw (many keys)", "fifo", "fifo (many keys)", "redlock (hold 1ms)",
                "ext:locco-memory"}
    for lib in ("locco-redis", "redis-semaphore", "node-redlock", "redis-semaphore-redlock"):
        expected |= {f"ext:{lib}", f"ext:{lib} (hold 1ms)"}
    failures = [f"missing series: {name}" for name in sorted(expected - series)]
    if not re.search(r'<line class="baseline"[^>]*stroke-dasharray', svg):
        failures.append("missing the dashed baseline")
    if "baseline: PING pairs" not in svg:
        failures.append("missing the baseline's legend entry")
    if any(name.startswith("mongo") for name in series):
        failures.append("a skipped case (mongo) was drawn")
    if len(re.findall(r'class="ext-marker"', svg)) != 4 * 4 + 3:
        failures.append("ext libraries' points are not all square markers")
    if "ext:locco-redis (protocol +32us/op)" not in svg:
        failures.append("missing the protocol overhead in an ext library's legend entry")
    height = int(re.search(r'<svg[^>]* height="(\d+)"', svg)[1])
    rows = len(re.findall(r'<text[^>]*text-anchor="start"', svg))
    if height < 40 + 10 + rows * 18:
        failures.append(f"the legend's {rows} rows do not fit a {height}px plot")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
