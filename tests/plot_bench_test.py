#!/usr/bin/env python3
"""scripts/plot_bench.py on a fixed lockstep_bench JSON: the SVG has every adapter's series and
the dashed baseline. Usage: plot_bench_test.py PLOT_SCRIPT FIXTURE_JSON OUT_DIR"""
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
                "keyed-rw", "keyed-rw (many keys)", "fifo", "fifo (many keys)"}
    failures = [f"missing series: {name}" for name in sorted(expected - series)]
    if not re.search(r'<line class="baseline"[^>]*stroke-dasharray', svg):
        failures.append("missing the dashed baseline")
    if "baseline: PING pairs" not in svg:
        failures.append("missing the baseline's legend entry")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
