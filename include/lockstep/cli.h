#pragma once
// The `lockstep` command line as a library, so a lock's own test binary is the whole command line
// for its adapters: register them with register_adapter (include/lockstep/registry.h), then
// return cli_main(argc, argv) from main. The stock `lockstep` registers the known-bad adapters
// (services/known_bad.h) and does just that.
//
// Flags, JSON fields and exit codes are a contract (docs/DESIGN.md, "Command line"):
//   0 every invariant held (matrix: every cell matched its expectation)
//   1 a violation (matrix: a cell differed; replay: the trace differed)
//   2 bad usage or input, with one line naming what was wrong and the valid choices
//   3 the environment lacks something, with what and how to get it (memory included)
//   4 a run ended as error: stopped by a bound before it completed, or not judged
//   70 an internal error
namespace lockstep {

// Parses argv, runs the subcommand (list, run, matrix, replay, sweep, sweep-merge, calibrate) and
// returns the exit code; never throws. Replay lines it prints name the running program: argv[0]'s
// basename (see program_name in run/runner.h). First it makes the process-wide settings of
// cli/process_guards.h: threads started from then on (a real-world run's clients, with the
// adapter's code on them) have 1 MiB of stack, and memory that runs out on any thread is exit 3.
int cli_main(int argc, char** argv);

}  // namespace lockstep
