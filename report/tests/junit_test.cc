// JUnit XML: well-formed whatever the names and messages hold, with counts that match its cases.
// A small strict XML reader (elements, quoted attributes, the five entities and character
// references, no DTD) parses what we write, so a CI server's parser will too.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "explore/matrix.h"
#include "explore/matrix_report.h"
#include "report/junit.h"
#include "run/runner.h"

namespace {

namespace fs = std::filesystem;

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<std::unique_ptr<Element>> children;
  std::string text;

  std::vector<const Element*> all(const std::string& child) const {
    std::vector<const Element*> out;
    for (const auto& c : children) {
      if (c->name == child) out.push_back(c.get());
    }
    return out;
  }
};

class XmlReader {
 public:
  explicit XmlReader(std::string text) : s_(std::move(text)) {}

  std::unique_ptr<Element> document() {
    if (s_.rfind("<?xml", 0) == 0) p_ = s_.find("?>") + 2;
    skip_space();
    auto root = element();
    skip_space();
    if (p_ != s_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("not well-formed at " + std::to_string(p_) + ": " + why);
  }
  void skip_space() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  void expect(char ch) {
    if (p_ >= s_.size() || s_[p_] != ch) fail(std::string("expected '") + ch + "'");
    ++p_;
  }
  std::string name() {
    const size_t start = p_;
    while (p_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '_' || s_[p_] == '-'))
      ++p_;
    if (p_ == start) fail("expected a name");
    return s_.substr(start, p_ - start);
  }
  // One character of text or attribute value, with entities resolved.
  std::string character() {
    const char ch = s_[p_];
    if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
      fail("control character");
    if (ch == '<') fail("'<' in text");
    if (ch != '&') return std::string(1, s_[p_++]);
    const size_t semi = s_.find(';', p_);
    if (semi == std::string::npos) fail("unterminated entity");
    const std::string entity = s_.substr(p_ + 1, semi - p_ - 1);
    p_ = semi + 1;
    static const std::map<std::string, std::string> named = {
        {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
    if (named.count(entity)) return named.at(entity);
    if (entity.size() > 1 && entity[0] == '#' &&
        entity.find_first_not_of("0123456789", 1) == std::string::npos) {
      const long code = std::stol(entity.substr(1));
      if (code < 0x20 && code != 9 && code != 10 && code != 13)
        fail("forbidden character reference");
      if (code < 0x80) return std::string(1, static_cast<char>(code));
      return "?";  // our writer never needs one; enough to accept it
    }
    fail("unknown entity &" + entity + ";");
  }
  std::string attribute_value() {
    expect('"');
    std::string out;
    while (p_ < s_.size() && s_[p_] != '"') out += character();
    expect('"');
    return out;
  }
  std::unique_ptr<Element> element() {
    expect('<');
    auto e = std::make_unique<Element>();
    e->name = name();
    while (true) {
      skip_space();
      if (p_ >= s_.size()) fail("unterminated tag");
      if (s_[p_] == '/' || s_[p_] == '>') break;
      const std::string key = name();
      expect('=');
      if (!e->attrs.emplace(key, attribute_value()).second) fail("duplicate attribute " + key);
    }
    if (s_[p_] == '/') {
      ++p_;
      expect('>');
      return e;
    }
    expect('>');
    while (true) {
      if (p_ >= s_.size()) fail("unclosed <" + e->name + ">");
      if (s_.compare(p_, 2, "</") == 0) break;
      if (s_[p_] == '<') {
        e->children.push_back(element());
      } else {
        e->text += character();
      }
    }
    p_ += 2;
    if (name() != e->name) fail("mismatched end tag for <" + e->name + ">");
    skip_space();
    expect('>');
    return e;
  }

  std::string s_;
  size_t p_ = 0;
};

// Parses JUnit XML and checks its shape: testsuites > testsuite > testcase (> failure), with the
// suite's tests and failures attributes equal to what it holds. Returns the suite.
std::unique_ptr<Element> parse_junit(const std::string& xml) {
  std::unique_ptr<Element> root = XmlReader(xml).document();
  REQUIRE(root->name == "testsuites");
  REQUIRE(root->all("testsuite").size() == 1);
  const Element& suite = *root->all("testsuite").front();
  const auto cases = suite.all("testcase");
  size_t failures = 0;
  for (const Element* c : cases) {
    CHECK(c->attrs.count("classname") == 1);
    CHECK(c->attrs.count("name") == 1);
    CHECK(c->attrs.count("time") == 1);
    failures += c->all("failure").size();
    for (const Element* f : c->all("failure")) CHECK(f->attrs.count("message") == 1);
  }
  CHECK(suite.attrs.at("tests") == std::to_string(cases.size()));
  CHECK(suite.attrs.at("failures") == std::to_string(failures));
  CHECK(root->attrs.at("tests") == std::to_string(cases.size()));
  return std::move(root->children.front());
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_lockstep(const std::string& args) {
  const int status =
      std::system((std::string(LOCKSTEP_BINARY) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("JUnit XML escapes names and messages and counts its cases", "[junit]") {
  const std::string nasty = "a<b>&\"c\" 'd' ]]> \x01\x1f\tend\n";
  const std::vector<lockstep::JUnitCase> cases = {
      {.name = "ok/one", .classname = "memory", .time_s = 0.25},
      {.name = nasty,
       .classname = nasty,
       .passed = false,
       .failure_message = nasty,
       .failure_text = nasty + "\nline 2"},
  };
  const auto suite = parse_junit(lockstep::to_junit_xml("lockstep <suite>", cases));
  CHECK(suite->attrs.at("name") == "lockstep <suite>");
  const auto parsed = suite->all("testcase");
  REQUIRE(parsed.size() == 2);
  CHECK(parsed[0]->all("failure").empty());
  const std::string shown =
      "a<b>&\"c\" 'd' ]]> ??\tend\n";  // control characters XML cannot carry become '?'
  CHECK(parsed[1]->attrs.at("name") == shown);
  CHECK(parsed[1]->attrs.at("classname") == shown);
  CHECK(parsed[1]->all("failure").at(0)->attrs.at("message") == shown);
  CHECK(parsed[1]->all("failure").at(0)->text == shown + "\nline 2");
}

TEST_CASE("a matrix gives one testcase per cell and fails the cells that differ",
          "[junit][matrix]") {
  lockstep::MatrixResult result = lockstep::run_matrix({.adapters = {"memory"}});
  REQUIRE(result.cells.size() >= 4);
  auto suite =
      parse_junit(lockstep::to_junit_xml("lockstep matrix", lockstep::junit_cases(result)));
  auto cases = suite->all("testcase");
  REQUIRE(cases.size() == result.cells.size());
  CHECK(suite->attrs.at("failures") == "0");
  CHECK(cases[0]->attrs.at("classname") == "memory");
  CHECK(cases[0]->attrs.at("name") == result.cells[0].scenario + "/fencing-off");
  CHECK(cases[1]->attrs.at("name") == result.cells[1].scenario + "/fencing-on");

  result.cells[1].matches = false;  // as if the cell had differed
  result.cells[1].first_mismatch = "lockstep run x --adapter memory --seed 7";
  suite = parse_junit(lockstep::to_junit_xml("lockstep matrix", lockstep::junit_cases(result)));
  cases = suite->all("testcase");
  CHECK(suite->attrs.at("failures") == "1");
  REQUIRE(cases[1]->all("failure").size() == 1);
  CHECK(cases[1]->all("failure")[0]->text.find(
            "replay: lockstep run x --adapter memory --seed 7") != std::string::npos);
}

TEST_CASE("run --junit and matrix --junit write JUnit XML for CI", "[junit][cli]") {
  const fs::path dir = fs::temp_directory_path() / ("lockstep-junit-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // Removed however the test ends: a failed REQUIRE leaves the function early.
  struct RemoveOnExit {
    fs::path path;
    ~RemoveOnExit() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } const cleanup{dir};
  CHECK(run_lockstep("run gc-pause --adapter memory --junit " + (dir / "run.xml").string()) == 1);
  const auto run = parse_junit(slurp(dir / "run.xml"));
  REQUIRE(run->all("testcase").size() == 1);
  const Element& c = *run->all("testcase")[0];
  CHECK(c.attrs.at("classname") == "memory");
  CHECK(c.attrs.at("name") == "gc-pause/fencing-on/seed1");
  REQUIRE(c.all("failure").size() == 1);
  CHECK(c.all("failure")[0]->attrs.at("message").find("mutual_exclusion") != std::string::npos);
  CHECK(c.all("failure")[0]->text.find("replay: lockstep run gc-pause --adapter memory") !=
        std::string::npos);

  // Two adapters' cells are enough to see the file; the whole default matrix is cli_test's.
  CHECK(run_lockstep("matrix --adapter memory --adapter redis --junit " +
                     (dir / "matrix.xml").string()) == 0);
  const auto matrix = parse_junit(slurp(dir / "matrix.xml"));
  CHECK(matrix->all("testcase").size() >= 12);
  CHECK(matrix->attrs.at("failures") == "0");
}
