#pragma once
// Reading a sweep's shard report back for `sweep-merge`: the file is whatever someone hands the
// command, so every field the merge and its summary read is checked here, at the reader, with the
// bounds the command line has for the same numbers (harness/option_bounds.h), before anything is
// sized from it. A shard's count of 30,000,000 once took 3.8 GB; a missing "adapter" was an
// internal error. Errors are UsageError naming the file and the field.
#include <string>

#include <nlohmann/json.hpp>

namespace lockstep {

// The shard report at `path` (a regular file, history/json_input.h), checked field by field.
nlohmann::json read_shard_report(const std::string& path);

// The same checks on a parsed report; `name` names it in messages.
void check_shard_report(const std::string& name, const nlohmann::json& shard);

}  // namespace lockstep
