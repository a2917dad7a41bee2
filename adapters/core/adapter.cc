#include "lockstep/adapter.h"

namespace lockstep {

std::string_view to_string(FencingSupport support) {
  switch (support) {
    case FencingSupport::monotonic: return "monotonic";
    case FencingSupport::none: return "none";
  }
  return "unknown";
}

std::string_view to_string(AdapterStatus status) {
  switch (status) {
    case AdapterStatus::ok: return "ok";
    case AdapterStatus::contended: return "contended";
    case AdapterStatus::not_owner: return "not_owner";
    case AdapterStatus::backend_error: return "backend_error";
    case AdapterStatus::outcome_unknown: return "outcome_unknown";
  }
  return "unknown";
}

}  // namespace lockstep
