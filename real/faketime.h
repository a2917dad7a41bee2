#pragma once
// Server clock faults through libfaketime, set up the one way that works with Debian's
// redis-server (measured on Debian 12, redis-server 7.0):
// - LD_PRELOAD is libfaketime.so.1 followed by libc.so.6 (libfaketime alone deadlocks jemalloc's
//   first clock_gettime: its dlsym mallocs);
// - the fake time spec ("+OFFSET xRATE") lives in a timestamp file, read on every call
//   (FAKETIME_NO_CACHE=1), so a rewrite jumps the clock at once;
// - the monotonic clock is left real (FAKETIME_DONT_FAKE_MONOTONIC=1): only wall-clock readers
//   (Redis key expiry) see the fault.
// Measured: with "+0 x2" keys expire twice as fast; rewriting the file with the same rate and a
// new offset keeps the rate's time base, so jumps and rates compose.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::real {

// The preload library, if installed. LOCKSTEP_LIBFAKETIME, when set, is the only place looked at.
std::optional<std::string> find_libfaketime();

// The libfaketime spec for a total offset and a rate: faketime_spec(120, "x2") == "+120 x2".
// rate is "" (real rate) or "x" followed by a positive decimal number; checked.
std::string faketime_spec(int64_t offset_s, const std::string& rate);

// Environment entries that make a child fake its wall clock from `timestamp_file`.
// Throws ServerUnavailable (naming the packages to install) when libfaketime is missing.
std::vector<std::string> faketime_environment(const std::string& timestamp_file);

// Replaces the file's content atomically (write, then rename), so a reader never sees half a spec.
void write_faketime_file(const std::string& timestamp_file, const std::string& spec);

}  // namespace lockstep::real
