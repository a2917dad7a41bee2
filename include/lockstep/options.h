#pragma once
// Scenario and adapter options: named values with defaults, overridden by `--set KEY=VALUE`.
//
// Each option is declared once with its default and a one-line help; its kind (integer, one of
// a fixed set of words, or free text of bounded length) follows from the declaration. Overrides are checked when applied: an
// unknown key or a malformed value is an OptionError whose message names the key and lists the
// valid choices, so the CLI can exit 2 with it. Iteration is in name order (std::map).
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

// A strict decimal integer: an optional '-' then digits only, in int64_t's range ("-0" refused: a
// sign on zero). Leading zeros
// are decimal ("010" is ten, never octal); no '+', spaces, hex or exponent. nullopt otherwise.
std::optional<int64_t> parse_decimal(std::string_view text);
// The same without a sign, in uint64_t's range (seeds).
std::optional<uint64_t> parse_decimal_unsigned(std::string_view text);
// text for a one-line message: quoted, with control characters (a newline) escaped.
std::string quote_value(std::string_view text);

class OptionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct OptionSpec {
  std::string name{};
  std::string default_value{};
  std::string help{};
  std::vector<std::string> choices{};  // empty: an integer in [min, max] (or text, below)
  int64_t min = 0;
  int64_t max = INT64_MAX;
  // > 0: free text of at most this many bytes, without control characters (one line, printable
  // in a message), such as a driver's command line. "" is allowed: the user of it says what an
  // absent value means.
  size_t text_bytes_max = 0;

  bool is_integer() const { return choices.empty() && text_bytes_max == 0; }
};

// The options of a backend with a promotable replica, under the names sweeps draw by
// (explore/swarm.cc: replicas=1 for a failover, a lag that can lose acknowledged writes).
std::vector<OptionSpec> replica_options(const std::string& replicas_help);

class Options {
 public:
  Options() = default;
  explicit Options(const std::vector<OptionSpec>& specs);

  // Adds more declarations (an adapter's after a scenario's). The first declaration of a name
  // wins, so a scenario can give an adapter option the default its story needs (failover: one
  // replica); both must agree on the option's kind.
  void declare(const OptionSpec& spec);
  // Applies "KEY=VALUE". Throws OptionError for an unknown key or a bad value.
  void set(const std::string& assignment);
  void set(const std::string& name, const std::string& value);

  bool has(const std::string& name) const { return specs_.count(name) != 0; }
  int64_t get_int(const std::string& name) const;
  const std::string& get(const std::string& name) const;
  // Every option and its current value, in name order.
  const std::map<std::string, std::string>& values() const { return values_; }
  const std::map<std::string, OptionSpec>& specs() const { return specs_; }
  // Options whose value differs from the default, as KEY=VALUE, in name order.
  std::vector<std::string> overrides() const;

 private:
  void check_value(const OptionSpec& spec, const std::string& value) const;
  std::string known_names() const;

  std::map<std::string, OptionSpec> specs_;
  std::map<std::string, std::string> values_;
};

}  // namespace lockstep
