#include "real/faketime.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "base/check.h"
#include "real/server_errors.h"

namespace lockstep::real {
namespace {

bool rate_is_valid(const std::string& rate) {
  if (rate.empty()) return true;
  if (rate.size() < 2 || rate.front() != 'x') return false;
  char* end = nullptr;
  const double factor = std::strtod(rate.c_str() + 1, &end);
  return end != nullptr && *end == '\0' && factor > 0;
}

// The libc this process runs on; a libc-only symbol that sanitizers do not intercept locates it.
std::string libc_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&gnu_get_libc_version), &info) != 0 &&
      info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "libc.so.6";
}

}  // namespace

std::optional<std::string> find_libfaketime() {
  std::vector<std::string> candidates = {"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                                         "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                                         "/usr/lib/faketime/libfaketime.so.1",
                                         "/usr/local/lib/faketime/libfaketime.so.1"};
  if (const char* configured = std::getenv("LOCKSTEP_LIBFAKETIME")) candidates = {configured};
  for (const auto& candidate : candidates) {
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string faketime_spec(int64_t offset_s, const std::string& rate) {
  LOCKSTEP_CHECK(rate_is_valid(rate),
                 "a clock rate is \"\" or \"x<positive number>\", e.g. \"x2\"");
  std::string spec = (offset_s >= 0 ? "+" : "") + std::to_string(offset_s);
  return rate.empty() ? spec : spec + " " + rate;
}

std::vector<std::string> faketime_environment(const std::string& timestamp_file) {
  const auto library = find_libfaketime();
  if (!library) {
    throw ServerUnavailable(
        "libfaketime not found (needed for server clock faults): apt-get install faketime "
        "libfaketime, or set LOCKSTEP_LIBFAKETIME to libfaketime.so.1");
  }
  return {"LD_PRELOAD=" + *library + ":" + libc_path(), "FAKETIME_TIMESTAMP_FILE=" + timestamp_file,
          "FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1"};
}

void write_faketime_file(const std::string& timestamp_file, const std::string& spec) {
  const std::string staging = timestamp_file + ".new";
  {
    std::ofstream out(staging, std::ios::trunc);
    out << spec << "\n";
    if (!out.flush()) throw std::system_error(errno, std::generic_category(), "write " + staging);
  }
  std::filesystem::rename(staging, timestamp_file);
}

}  // namespace lockstep::real
