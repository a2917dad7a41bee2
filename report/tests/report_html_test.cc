// The HTML timeline: self-contained, escaped, deterministic, and drawn by a real browser.
//
// The browser test opens a gc-pause violation in Debian's headless chromium, dumps the DOM its
// script built, and takes a screenshot. Without chromium it is skipped outside CI and fails in CI
// (tests/real_support.h); LOCKSTEP_CHROMIUM=PATH picks another binary. Chromium runs in a process
// group of its own, killed by its id afterwards, so no browser process outlives the test.
// LOCKSTEP_KEEP_TEST_FILES=1 keeps the page, the dumped DOM and the screenshot.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "report/report.h"
#include "report/report_html.h"
#include "run/runner.h"
#include "services/known_bad.h"
#include "tests/real_support.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh temp dir, removed at the end unless LOCKSTEP_KEEP_TEST_FILES is set.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    if (std::getenv("LOCKSTEP_KEEP_TEST_FILES") != nullptr) {
      std::cout << "kept test files in " << path.string() << std::endl;
    } else {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  }
};

lockstep::RunReport gc_pause_memory() {
  return lockstep::run_scenario(lockstep::RunConfig{.scenario = "gc-pause", .adapter = "memory"});
}

// --- a little DOM reading: the attributes of every <name ...> tag, as chromium serializes them ---

using Attributes = std::map<std::string, std::string>;

std::vector<Attributes> tags(const std::string& dom, const std::string& name) {
  std::vector<Attributes> out;
  const std::string open = "<" + name + " ";
  for (size_t at = dom.find(open); at != std::string::npos; at = dom.find(open, at + 1)) {
    const size_t end = dom.find('>', at);
    if (end == std::string::npos) break;
    Attributes attrs;
    size_t p = at + open.size();
    while (true) {
      const size_t eq = dom.find("=\"", p);
      if (eq == std::string::npos || eq > end) break;
      const size_t close = dom.find('"', eq + 2);
      const size_t name_start = dom.rfind(' ', eq) + 1;
      attrs[dom.substr(name_start, eq - name_start)] = dom.substr(eq + 2, close - eq - 2);
      p = close + 1;
    }
    out.push_back(std::move(attrs));
  }
  return out;
}

bool has_class(const Attributes& a, const std::string& cls) {
  const auto it = a.find("class");
  if (it == a.end()) return false;
  std::istringstream words(it->second);
  std::string w;
  while (words >> w) {
    if (w == cls) return true;
  }
  return false;
}

int64_t number(const Attributes& a, const std::string& key) { return std::stoll(a.at(key)); }

// Text as a serialized DOM shows it (quotes stay as they are in text nodes).
std::string as_dom_text(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += ch;
    }
  }
  return out;
}

// --- running chromium ---

std::optional<std::string> find_chromium() {
  if (const char* env = std::getenv("LOCKSTEP_CHROMIUM")) {  // a chosen browser, or none ("" skips)
    if (::access(env, X_OK) == 0) return std::string(env);
    return std::nullopt;
  }
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/snap/bin"}) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      const fs::path p = fs::path(dir) / name;
      if (::access(p.c_str(), X_OK) == 0) return p.string();
    }
  }
  return std::nullopt;
}

// Runs chromium headless with args (stdout to out_file) in a process group of its own, waits up to
// timeout, then kills the whole group by its id so no renderer or helper is left behind.
// Returns the exit code, or -1 when it timed out or died of a signal.
int run_chromium(const std::string& binary, const fs::path& work, std::vector<std::string> args,
                 const fs::path& out_file, std::chrono::seconds timeout) {
  std::vector<std::string> argv = {binary,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-quic",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-crash-reporter",
                                   "--user-data-dir=" + (work / "profile").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out_file.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, (work / "chromium.log").c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, binary.c_str(), &files, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  REQUIRE(spawned == 0);

  int status = 0;
  bool exited = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exited && std::chrono::steady_clock::now() < deadline) {
    exited = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);  // the group we made: whatever chromium left running
  if (!exited) ::waitpid(pid, &status, 0);
  return exited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("the timeline is one self-contained file with the run embedded", "[report][html]") {
  const lockstep::RunReport report = gc_pause_memory();
  const std::string page = lockstep::timeline_html(report);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("id=\"lockstep-data\"") != std::string::npos);
  CHECK(page.find(report.trace_hash) != std::string::npos);
  // No fetches: nothing loaded from anywhere (the SVG namespace is a name, not a fetch).
  for (const char* fetch : {"src=", "href=", "@import", "url(", "fetch(", "XMLHttpRequest"}) {
    INFO(fetch);
    CHECK(page.find(fetch) == std::string::npos);
  }
  // A pure function of the run: the same seed gives the same bytes (no wall time in it).
  CHECK(lockstep::timeline_html(gc_pause_memory()) == page);
}

TEST_CASE("the timeline carries stuck clients and draws their operation as stuck",
          "[report][html][stuck]") {
  lockstep::register_known_bad_adapters();
  const lockstep::RunReport report = lockstep::run_scenario(
      lockstep::RunConfig{.scenario = "writer-starvation", .adapter = "bad-rw-lost-wakeup"});
  REQUIRE_FALSE(report.violations.empty());
  const std::string page = lockstep::timeline_html(report);
  CHECK(page.find("\"kind\":\"stuck\"") != std::string::npos);
  CHECK(page.find("e.kind === \"stuck\"") != std::string::npos);  // the script marks the op
  CHECK(page.find(".outcome-stuck") != std::string::npos);
  CHECK(page.find("nothing will ever wake it") != std::string::npos);
}

TEST_CASE("the timeline carries renewals and draws each with the validity it gave",
          "[report][html][renewal]") {
  const lockstep::RunReport report =
      lockstep::run_scenario(lockstep::RunConfig{.scenario = "lost-extension", .adapter = "redis"});
  const lockstep::HistoryEvent* renewal = nullptr;
  for (const lockstep::HistoryEvent& e : report.history.events()) {
    if (e.kind == lockstep::EventKind::renewal && renewal == nullptr) renewal = &e;
  }
  REQUIRE(renewal != nullptr);
  const std::string page = lockstep::timeline_html(report);
  CHECK(page.find("\"end_us\":" + std::to_string(renewal->end_us) +
                  ",\"index\":" + std::to_string(renewal->index)) != std::string::npos);
  CHECK(page.find("e.kind === \"renewal\"") != std::string::npos);  // the script draws it
  CHECK(page.find(".renewal-validity") != std::string::npos);
  CHECK(page.find("renewal in the background") != std::string::npos);  // the legend says so
}

TEST_CASE("embedded text cannot break out of the page", "[report][html]") {
  CHECK(lockstep::html_escape("<a href=\"x\">'&'</a>") ==
        "&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;");
  const nlohmann::json nasty = {{"detail", "</script><script>alert(1)</script><!--"}};
  const std::string safe = lockstep::script_safe_json(nasty);
  CHECK(safe.find('<') == std::string::npos);
  CHECK(nlohmann::json::parse(safe) == nasty);
}

TEST_CASE("write_report writes the timeline beside the JSON and trace", "[report][html]") {
  TempDir dir("lockstep-html-report");
  const fs::path json = lockstep::write_report(gc_pause_memory(), dir.path);
  const fs::path html = lockstep::timeline_path_for(json);
  CHECK(html == dir.path / "gc-pause.memory.seed1.fencing-off.html");
  REQUIRE(fs::exists(html));
  CHECK(file_bytes(html).find("mutual_exclusion") != std::string::npos);
}

TEST_CASE("report file names stay portable: no ':' from an ext adapter's name", "[report]") {
  TempDir dir("lockstep-portable-report");
  lockstep::RunReport report = gc_pause_memory();
  report.config.adapter = "ext:node-redlock";
  const fs::path json = lockstep::write_report(report, dir.path);
  CHECK(json.filename() == "gc-pause.ext-node-redlock.seed1.fencing-off.json");
  for (const auto& entry : fs::directory_iterator(dir.path))
    CHECK(entry.path().filename().string().find(':') == std::string::npos);
}

TEST_CASE("chromium renders a gc-pause timeline with both holders and the violation",
          "[report][html][browser]") {
  const std::optional<std::string> chromium = find_chromium();
  if (!chromium) lockstep::testing::skip_or_fail("chromium not found (apt-get install chromium)");
  TempDir dir("lockstep-html-browser");
  const lockstep::RunReport report = gc_pause_memory();
  REQUIRE_FALSE(report.violations.empty());
  const fs::path html = lockstep::timeline_path_for(lockstep::write_report(report, dir.path));
  const std::string url = "file://" + html.string();

  const fs::path dom_file = dir.path / "dom.html";
  REQUIRE(run_chromium(*chromium, dir.path, {"--dump-dom", url}, dom_file,
                       std::chrono::seconds(20)) == 0);
  const std::string dom = file_bytes(dom_file);
  INFO(file_bytes(dir.path / "chromium.log").substr(0, 2000));

  // One lane per client, built by the page's script.
  std::map<std::string, int> lanes;
  for (const Attributes& g : tags(dom, "g")) {
    if (has_class(g, "lane")) ++lanes[g.at("data-client")];
  }
  CHECK(lanes["0"] == 1);
  CHECK(lanes["1"] == 1);

  // Both clients believed they held the lock at once, and each had a lease from the server.
  std::vector<Attributes> beliefs;
  std::map<std::string, int> leases;
  for (const Attributes& r : tags(dom, "rect")) {
    if (has_class(r, "belief")) beliefs.push_back(r);
    if (has_class(r, "lease")) ++leases[r.at("data-client")];
  }
  CHECK(leases["0"] >= 1);
  CHECK(leases["1"] >= 1);
  const auto overlap = [](const Attributes& a, const Attributes& b) {
    return a.at("data-client") != b.at("data-client") &&
           number(a, "data-start-us") < number(b, "data-end-us") &&
           number(b, "data-start-us") < number(a, "data-end-us");
  };
  bool overlapping = false;
  for (const Attributes& a : beliefs) {
    for (const Attributes& b : beliefs) overlapping = overlapping || overlap(a, b);
  }
  CHECK(overlapping);

  // The violation: a marker at its time, its sentence, and the events that show it outlined.
  bool marker = false;
  for (const Attributes& l : tags(dom, "line")) {
    marker = marker || (has_class(l, "violation-marker") &&
                        number(l, "data-time-us") == report.violations.front().violation.time_us);
  }
  CHECK(marker);
  CHECK(dom.find("mutual_exclusion") != std::string::npos);
  CHECK(dom.find(as_dom_text(report.violations.front().violation.detail)) != std::string::npos);
  CHECK(dom.find("Excused by: " + as_dom_text(report.violations.front().violation.excuse)) !=
        std::string::npos);
  CHECK(dom.find("involved") != std::string::npos);

  // And it paints: a real PNG with more in it than a blank page.
  const fs::path png = dir.path / "timeline.png";
  REQUIRE(run_chromium(*chromium, dir.path,
                       {"--window-size=1400,700", "--screenshot=" + png.string(), url},
                       dir.path / "screenshot.out", std::chrono::seconds(20)) == 0);
  REQUIRE(fs::exists(png));
  const std::string bytes = file_bytes(png);
  CHECK(bytes.rfind("\x89PNG\r\n\x1a\n", 0) == 0);
  CHECK(bytes.size() > 20 * 1024);
}
