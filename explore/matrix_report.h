#pragma once
// The matrix for people and CI, built on the report stage's page and XML.
//
// matrix.html opens with the counts and filters (status, fencing, a name), then the grids of
// matrix_grids() (explore/matrix.h): each position a mark per fencing cell (as expected, documented
// finding, differs, not applicable), linking to the timeline of the cell's run when the matrix wrote
// it (MatrixConfig::runs_dir, `runs/` beside the page), with a finding's summary and a difference
// written in the position, where a reader sees them without hovering or scrolling sideways. Then
// the cells that differ and the findings with their replay lines, and every cell in a table that
// opens on demand. Self-contained like the timeline (report/report_html.h): no fetches.
#include <string>
#include <vector>

#include "explore/matrix.h"
#include "report/junit.h"

namespace lockstep {

std::string matrix_html(const MatrixResult& result);
// classname = adapter, name = scenario/fencing-X; fails when the cell differed from its
// expectation, with the replay command of the first seed that differed.
std::vector<JUnitCase> junit_cases(const MatrixResult& result);

}  // namespace lockstep
