#pragma once
// Replaying a report: the catalogue scenario it names, or the generated workload it carries.
#include "report/report.h"

namespace lockstep {

// Reruns what a ReplaySpec (report/report.h) describes.
RunReport replay_run(const ReplaySpec& spec);

}  // namespace lockstep
