#pragma once
// `lockstep check HISTORY.jsonl [--json]`: judges a recorded history (history/
// history_jsonl.h; docs/history.schema.json) with every checker, as a run judges its own. The
// history may come from a lockstep run (`run --report` writes NAME.history.jsonl) or from any
// other system. Exit 0: no violation; 1: violations; 2: the file is not a history, or holds no
// event to judge (the message names the line and the field).
#include <string>

namespace lockstep {

int cmd_check(const std::string& path, bool json);

}  // namespace lockstep
