#!/usr/bin/env python3
"""Records what a lockstep binary does, to compare two builds: a refactoring must not change a run.

  scripts/trace_hashes.py record BINARY OUT.json [--sweep-seeds N] [--jobs N] [--ext]
  scripts/trace_hashes.py compare BEFORE.json AFTER.json

`record` runs every simulated scenario with every adapter it applies to, fencing off and on (the
trace hash, verdict, end and violations of each), and a `--keep-going` sweep of every adapter that
runs in the simulator (its JSON less wall-time fields). ext adapters (a Node process per client)
only with --ext. `compare` prints every run that differs and exits 1 if any does.

Exit codes: 0 same (or recorded), 1 a difference, 2 bad usage, 3 a binary or file missing.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

WALL_FIELDS = {"wall_time_us", "shrink_wall_time_us", "median_time_to_first_us"}


def strip_wall(value):
    if isinstance(value, dict):
        return {k: strip_wall(v) for k, v in value.items() if k not in WALL_FIELDS}
    if isinstance(value, list):
        return [strip_wall(v) for v in value]
    return value


def run_json(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    try:
        body = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        body = {"unparsed": proc.stdout[:400]}
    return {"exit": proc.returncode, "json": body, "stderr": proc.stderr.strip()[:400]}


def run_summary(result):
    body = result["json"] or {}
    return {
        "exit": result["exit"],
        "trace_hash": body.get("trace_hash"),
        "verdict": body.get("verdict"),
        "end": body.get("end"),
        "violations": sorted((v.get("invariant"), v.get("time_us"), v.get("excused_by", ""))
                             for v in body.get("violations", [])),
        "stderr": result["stderr"] if result["exit"] not in (0, 1) else "",
    }


def record(args):
    if not os.access(args.binary, os.X_OK):
        print(f"trace_hashes: {args.binary} is not an executable", file=sys.stderr)
        return 3
    listing = json.loads(subprocess.run([args.binary, "list", "--json"], capture_output=True,
                                        text=True, check=True).stdout)
    sim_adapters = [a["name"] for a in listing["adapters"]
                    if "sim" in a["worlds"] and a["name"] != "ext"
                    and (args.ext or not a["name"].startswith("ext:"))]
    runs = []
    for scenario in listing["scenarios"]:
        if "sim" not in scenario["worlds"]:
            continue
        for adapter in scenario["adapters"]:
            if adapter not in sim_adapters:
                continue
            for fencing in ("off", "on"):
                runs.append((f"run {scenario['name']} {adapter} fencing-{fencing}",
                             [args.binary, "run", scenario["name"], "--adapter", adapter,
                              "--fencing", fencing, "--json"]))
    sweeps = [(f"sweep {adapter}",
               [args.binary, "sweep", "--adapter", adapter, "--seeds", str(args.sweep_seeds),
                "--keep-going", "--shrink", "0", "--jobs", "1", "--json"])
              for adapter in sim_adapters]
    out = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_json, argv): (name, "run") for name, argv in runs}
        futures.update({pool.submit(run_json, argv): (name, "sweep") for name, argv in sweeps})
        for future in concurrent.futures.as_completed(futures):
            name, kind = futures[future]
            result = future.result()
            out[name] = run_summary(result) if kind == "run" else {
                "exit": result["exit"], "json": strip_wall(result["json"]),
                "stderr": result["stderr"] if result["exit"] not in (0, 1) else ""}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(dict(sorted(out.items())), f, indent=1, sort_keys=True)
    print(f"trace_hashes: {len(runs)} runs, {len(sweeps)} sweeps -> {args.out}")
    return 0


def compare(args):
    try:
        with open(args.before, encoding="utf-8") as f:
            before = json.load(f)
        with open(args.after, encoding="utf-8") as f:
            after = json.load(f)
    except OSError as e:
        print(f"trace_hashes: {e}", file=sys.stderr)
        return 3
    differ = 0
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            differ += 1
            print(f"differs: {name}")
            if args.verbose:
                print(f"  before: {json.dumps(before.get(name))[:600]}")
                print(f"  after:  {json.dumps(after.get(name))[:600]}")
    print(f"trace_hashes: {len(set(before) | set(after))} compared, {differ} differ")
    return 1 if differ else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("binary")
    rec.add_argument("out")
    rec.add_argument("--sweep-seeds", type=int, default=150)
    rec.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    rec.add_argument("--ext", action="store_true")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before")
    cmp_.add_argument("after")
    cmp_.add_argument("--verbose", "-v", action="store_true")
    try:
        args = parser.parse_args()
    except SystemExit as e:
        return 2 if e.code else 0
    if args.command == "record" and (args.sweep_seeds < 1 or args.jobs < 1):
        print("trace_hashes: --sweep-seeds and --jobs are at least 1", file=sys.stderr)
        return 2
    return record(args) if args.command == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
