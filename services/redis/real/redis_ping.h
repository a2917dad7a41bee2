#pragma once
// A readiness probe that needs no Redis client library: one PING over a fresh loopback connection.
#include <cstdint>

namespace lockstep::real {

// True when the server on 127.0.0.1:port answers "+PONG" within timeout_ms. False on anything
// else: refused, -LOADING (still reading its AOF), silence (paused).
bool redis_answers_ping(int port, int64_t timeout_ms);

}  // namespace lockstep::real
