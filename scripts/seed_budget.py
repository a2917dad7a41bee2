#!/usr/bin/env python3
"""Where a simulated sweep's seed spends its instructions, by stage, per adapter.

Runs `lockstep sweep --adapter A --seeds N --jobs 1` under valgrind's callgrind (a deterministic
count: the figures do not drift with the machine's load, as wall time does) and prints a Markdown
table: thousands of instructions per seed, and each stage's share of the seed, for drawing the fault
schedule, building the clients and servers, the simulated run (and in it the server model, the
recording of the history, unwinding the fibers of killed processes), judging, and tearing the run
down. Shares come from callgrind's inclusive costs of the functions that run each stage, so they
are approximate where stages nest (a grant recorded from inside a server command counts in both).

  scripts/seed_budget.py                      # memory:500 redis:200 redlock:100 mongo:100
  scripts/seed_budget.py redis:50 --binary build/cli/lockstep

The binary defaults to build-bench/cli/lockstep (Release: scripts/bench.sh builds it). Exit 2 on bad
arguments, 3 when valgrind or the binary is missing. Standard library only.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

DEFAULT_CASES = ["memory:500", "redis:200", "redlock:100", "mongo:100"]
SEEDS_MAX = 100_000

# (label, a substring of the function whose inclusive cost is the stage); the first is the seed.
STAGES = [
    ("seed, in all", "run_sweep(lockstep::SweepConfig const&, std::function<void (lockstep::SweepProgress const&)> const&)::{lambda(unsigned long)#1}::operator()"),
    ("draw the fault schedule", "lockstep::draw_swarm_spec("),
    ("build clients and servers", "make_swarm_scenario(lockstep::SwarmSpec)::{lambda(lockstep::ScenarioEnv&)#2}"),
    ("simulate (`World::run`)", "lockstep::sim::World::run()"),
    ("- the Redis server model", "lockstep::sim::RedisNode::execute("),
    ("- the Mongo server model", "lockstep::sim::MongoReplicaSet::handle_command("),
    ("- record the history", "lockstep::Recorder::record(lockstep::HistoryEvent)"),
    ("- unwind killed processes' fibers", "lockstep::sim::World::unwind(lockstep::sim::World::FiberSlot&)"),
    ("judge (checkers, excuses)", "RunAssembly::judge("),
    ("tear down", "RunAssembly::~RunAssembly()"),
    ("- reset the Lua engines for reuse", "lockstep::sim::LuaEngine::reset_for_reuse("),
]
COST_LINE = re.compile(r"\s*([\d,]+) \(\s*[\d.]+%\)  (.*)")


def fail(code, message):
    print(f"seed_budget: {message}", file=sys.stderr)
    sys.exit(code)


def parse_case(text):
    adapter, sep, seeds = text.partition(":")
    if not sep or not adapter or not seeds.isdigit() or not 1 <= int(seeds) <= SEEDS_MAX:
        fail(2, f"case '{text}' is not ADAPTER:SEEDS with SEEDS in 1..{SEEDS_MAX}")
    return adapter, int(seeds)


def inclusive_costs(binary, adapter, seeds, scratch):
    out_file = os.path.join(scratch, f"callgrind.{adapter}")
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
         f"--log-file={out_file}.log", binary, "sweep", "--adapter", adapter, "--seeds",
         str(seeds), "--jobs", "1", "--keep-going"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=scratch)
    if run.returncode == 2:  # the CLI's own bad-input exit: an unknown adapter, say
        fail(2, f"lockstep refused '{adapter}': {run.stderr.strip()}")
    if not os.path.exists(out_file):
        fail(1, f"callgrind wrote nothing for {adapter} (exit {run.returncode}): {run.stderr.strip()}")
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_file],
                          capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in text.splitlines():
        m = COST_LINE.match(line)
        if m:
            name, cost = m.group(2), int(m.group(1).replace(",", ""))
            costs[name] = max(costs.get(name, 0), cost)  # a function listed twice: its larger line
    return costs


def stage_cost(costs, pattern):
    return max((cost for name, cost in costs.items() if pattern in name), default=0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", default=DEFAULT_CASES, help="ADAPTER:SEEDS ...")
    parser.add_argument("--binary", default="build-bench/cli/lockstep")
    args = parser.parse_args()
    cases = [parse_case(c) for c in args.cases]
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            fail(3, f"{tool} not found: apt-get install valgrind")
    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        fail(3, f"no lockstep binary at {args.binary}: build it (scripts/bench.sh) or pass --binary")
    with tempfile.TemporaryDirectory(prefix="lockstep-budget-") as scratch:
        columns = []
        for adapter, seeds in cases:
            print(f"callgrind: {adapter}, {seeds} seeds ...", file=sys.stderr)
            columns.append((adapter, seeds, inclusive_costs(binary, adapter, seeds, scratch)))
    print("| k instructions a seed (share) | " + " | ".join(a for a, _, _ in columns) + " |")
    print("| --- |" + " --- |" * len(columns))
    for label, pattern in STAGES:
        cells = []
        for _, seeds, costs in columns:
            total = stage_cost(costs, STAGES[0][1])
            cost = stage_cost(costs, pattern)
            if total == 0:
                fail(1, "no seed cost found: is the binary built with symbols?")
            cells.append(f"{cost / seeds / 1000:.0f} ({100 * cost / total:.0f}%)" if cost else "-")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
