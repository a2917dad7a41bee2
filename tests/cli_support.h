#pragma once
// Runs the real `lockstep` binary (LOCKSTEP_BINARY, set by CMake) for command-line tests: stdout
// on a pipe and stderr in a file, so neither is a terminal (no progress lines).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

namespace lockstep::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Removes the stderr files (lockstep-cli-PID-N) of test processes that died before removing
// their own: a test killed by ctest's timeout leaves the one of the command it was running.
// Bounded by what the temp dir holds; a live process's files are left alone.
inline void remove_dead_processes_stderr_files() {
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "lockstep-cli-";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos ||
        rest.find_first_not_of("0123456789-") != std::string::npos) {
      continue;  // not ours (lockstep-cli-replay-PID and the like are directories of other tests)
    }
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (::kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(entry.path(), ec);
  }
}

// stderr without the sanitizers' own notes: an ASan build prints "==PID==WARNING: ASan doesn't
// fully support makecontext/swapcontext ..." at the first fiber switch. It is not the command's
// output, and the one-line rule of exit 2, 3 and 4 is about the command's output.
inline bool is_sanitizer_note(const std::string& line) {
  if (line.rfind("==", 0) != 0) return false;
  const size_t pid_end = line.find_first_not_of("0123456789", 2);
  return pid_end > 2 && pid_end != std::string::npos &&
         line.compare(pid_end, 11, "==WARNING: ") == 0;
}

inline std::string without_sanitizer_notes(const std::string& err) {
  std::string kept;
  std::istringstream lines(err);
  std::string line;
  while (std::getline(lines, line)) {
    if (!is_sanitizer_note(line)) kept += line + (lines.eof() ? "" : "\n");
  }
  return kept;
}

// Runs `binary args`. environment: assignments placed before the command with env(1), e.g.
// "PATH=/nonexistent".
inline CommandResult run_binary(const std::string& binary, const std::string& args,
                                const std::string& environment = "") {
  static const bool swept = (remove_dead_processes_stderr_files(), true);
  (void)swept;
  static int counter = 0;
  const auto err_path =
      std::filesystem::temp_directory_path() /
      ("lockstep-cli-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
  // libmongoc's load-time init warns on stderr ("Falling back to malloc for counters") when a
  // killed process with the same pid left its /dev/shm counters file: a line not ours, which would
  // break the one-line rule these tests hold. Tests start thousands of short processes, so pids
  // repeat; lockstep clears dead processes' files at start (cli_main), which narrows, not closes,
  // that window.
  const std::string command = "export MONGOC_DISABLE_SHM=1; " +
                              (environment.empty() ? "" : "env " + environment + " ") + binary +
                              " " + args + " 2>" + err_path.string();
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream ss;
  ss << err.rdbuf();
  result.err = without_sanitizer_notes(ss.str());
  std::filesystem::remove(err_path);
  return result;
}

// A temp dir of this process (lockstep-NAME-PID), removed however the test ends.
struct TempDir {
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("lockstep-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path;
};

// The `lockstep` binary with args.
inline CommandResult run_lockstep(const std::string& args, const std::string& environment = "");

// A sweep of a lock with a bug of its own finds `invariant` (exit 1), shrinks it, and the replay
// file it names reproduces it with the same binary (`binary_name`, as the replay line prints it).
inline void sweep_catches_and_replays(const std::string& adapter, const std::string& invariant,
                                      const std::string& binary_name) {
  const TempDir dir("sweep-replay");
  const CommandResult sweep =
      run_lockstep("sweep --adapter " + adapter + " --seeds 300 --report " + dir.path.string());
  INFO(sweep.out << sweep.err);
  REQUIRE(sweep.exit_code == 1);
  CHECK(sweep.out.find(invariant) != std::string::npos);
  const std::string marker = "replay: " + binary_name + " replay ";
  const size_t at = sweep.out.find(marker);
  REQUIRE(at != std::string::npos);
  const size_t from = at + marker.size();
  const std::string file = sweep.out.substr(from, sweep.out.find('\n', from) - from);
  REQUIRE(std::filesystem::exists(file));
  const CommandResult replay = run_lockstep("replay " + file);
  INFO(replay.out << replay.err);
  CHECK(replay.exit_code == 0);
  CHECK(replay.err.find("reproduced") != std::string::npos);
}

inline CommandResult run_lockstep(const std::string& args, const std::string& environment) {
  return run_binary(LOCKSTEP_BINARY, args, environment);
}

}  // namespace lockstep::testing
