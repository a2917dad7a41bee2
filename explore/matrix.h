#pragma once
// The safety matrix: every adapter against every scenario that applies to it, with fencing off and
// on, over a range of seeds. A cell matches when every seed violated exactly the invariants the
// scenario expects of that adapter (none: safe), or ended exactly as one of the adapter's
// documented findings says (charted as that finding, with its replay line).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/runner.h"

namespace lockstep {

// Which cells of each (scenario, adapter) pair run: fencing off, on, or both (off then on).
enum class FencingChoice { off, on, both };

struct MatrixConfig {
  WorldKind world = WorldKind::sim;
  int seeds = 1;
  uint64_t first_seed = 1;
  std::vector<std::string> adapters;   // empty: every adapter that runs in `world`
  std::vector<std::string> scenarios;  // empty: every scenario of the catalogue
  // Worker processes for the cells (worker_pool.h); the result does not depend on it. The real
  // world runs one cell at a time whatever it says: real servers' timing is what a cell judges.
  int jobs = 1;
  // KEY=VALUE for the named adapters' own options (a user's driver command), in every cell.
  std::vector<std::string> sets;
  FencingChoice fencing = FencingChoice::both;
  // When set, each cell's run is written here as `run --report` writes it (JSON, trace, history,
  // HTML timeline): the first seed that differed, else the first that ended as a finding, else
  // the first seed. The matrix's pages link each cell to it. Runs written are the same runs (a
  // kept trace changes nothing a run does).
  std::string runs_dir;
};

struct MatrixCell {
  std::string scenario;
  std::string adapter;
  bool fencing_on = false;
  Expectation expected;
  Expectation observed;  // union over seeds
  bool matches = true;   // every seed matched, or ended as a documented finding (a cell that does
                         // not apply matches)
  std::string finding;   // the documented finding (AdapterEntry::findings) a seed ended as, if any
  std::string first_finding;  // replay command of the first seed that ended as the finding
  int seeds_run = 0;
  std::string first_mismatch;  // replay command of the first seed that differed
  int error_runs = 0;          // seeds whose verdict was error (a bound hit, or not judged)
  int64_t wall_time_us = 0;    // summed over seeds (for JUnit; never part of a verdict)
  std::string
      not_applicable;      // why the world cannot produce this scenario's faults here ("" if run)
  std::string run_report;  // the JSON of the run written to MatrixConfig::runs_dir, or ""
  std::string run_report_error;  // why that run could not be written, or ""
};

struct MatrixResult {
  std::vector<MatrixCell> cells;
  bool all_match() const;
  // Every differing cell had a seed whose verdict was error (exit 4, not 1).
  bool only_errors_differ() const;
};

// Cells run on config.jobs workers and are taken in plan order (scenario, adapter, fencing off then
// on), so the result is one process's. progress(done, total) is called after each cell. An unknown adapter or scenario name in the config
// throws UsageError naming the valid ones.
MatrixResult run_matrix(const MatrixConfig& config,
                        const std::function<void(size_t, size_t)>& progress = {});

nlohmann::json to_json(const MatrixResult& result);
std::string to_text(const MatrixResult& result);
// Opens with the counts (as expected, documented findings, differ, not applicable), then a
// scenario x adapter grid, the cells that differ and the findings with their replay lines, then
// every cell.
std::string to_markdown(const MatrixResult& result);

// The counts of a matrix's cells by how they ended.
struct MatrixCounts {
  size_t cells = 0;
  size_t as_expected = 0;  // matched, not as a finding
  size_t findings = 0;     // matched as a documented finding
  size_t differ = 0;
  size_t not_applicable = 0;
};
MatrixCounts count_cells(const MatrixResult& result);
// "446 cells: 420 as expected, 12 documented findings, 2 differ, 12 not applicable"
std::string counts_line(const MatrixCounts& counts);
// How a cell ended: "expected", "finding", "differs" or "na".
std::string cell_status(const MatrixCell& cell);

// The matrix as grids people read. The lock adapters': a row per scenario, a column per adapter.
// The known-bad adapters' (each judged in a few scenarios): a row per adapter, a column per
// scenario one of them is judged in. Each position holds its cells in the matrix's order (fencing
// off, then on); positions without cells are not in the matrix (the scenario does not apply).
struct MatrixGrid {
  std::string title;
  std::string corner;  // what the rows are: "scenario" or "known-bad adapter"
  std::vector<std::string> rows;
  std::vector<std::string> columns;
  std::map<std::pair<size_t, size_t>, std::vector<const MatrixCell*>> at;  // (row, column)
  // The scenario and adapter of a position.
  std::pair<std::string, std::string> names(size_t row, size_t column) const;
};
std::vector<MatrixGrid> matrix_grids(const MatrixResult& result);
std::string describe(const Expectation& e);  // "safe" or "violation: a, b"

}  // namespace lockstep
