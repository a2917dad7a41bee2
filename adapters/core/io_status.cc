#include "lockstep/io_status.h"

namespace lockstep {

std::string_view to_string(IoStatus status) {
  switch (status) {
    case IoStatus::ok: return "ok";
    case IoStatus::timeout: return "timeout";
    case IoStatus::connection_error: return "connection_error";
    case IoStatus::connection_lost: return "connection_lost";
  }
  return "?";
}

}  // namespace lockstep
