#pragma once
// The matrix for people and CI: an HTML table (green where a cell matched its expectation, red
// where it differed) and one JUnit case per cell, built on the report stage's page and XML.
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
