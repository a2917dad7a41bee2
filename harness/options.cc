#include "lockstep/options.h"

#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace lockstep {

namespace {

bool parse_int(const std::string& text, int64_t& out) {
  const std::optional<int64_t> value = parse_decimal(text);
  if (value) out = *value;
  return value.has_value();
}

template <typename T>
std::optional<T> from_decimal(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// "-0" (and "-00") is refused: a sign on zero is no number a user means, and reading it as 0
// would let `hold_ms=-0` through where `hold_ms=-1` is refused.
bool negative_zero(std::string_view text) {
  return text.size() > 1 && text.front() == '-' &&
         text.find_first_not_of('0', 1) == std::string_view::npos;
}

// Digits only (after an optional '-'), so an out-of-range number can be told from a malformed one.
bool all_digits(std::string_view text) {
  if (negative_zero(text)) return false;
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  if (text.empty()) return false;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<int64_t> parse_decimal(std::string_view text) {
  if (negative_zero(text)) return std::nullopt;
  return from_decimal<int64_t>(text);
}

std::optional<uint64_t> parse_decimal_unsigned(std::string_view text) {
  return from_decimal<uint64_t>(text);  // from_chars takes no sign for an unsigned type
}

std::string quote_value(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

Options::Options(const std::vector<OptionSpec>& specs) {
  for (const OptionSpec& spec : specs) declare(spec);
}

void Options::declare(const OptionSpec& spec) {
  auto it = specs_.find(spec.name);
  if (it != specs_.end()) {
    if (it->second.choices != spec.choices || it->second.text_bytes_max != spec.text_bytes_max) {
      throw std::logic_error(
          fmt::format("option {} declared twice with different kinds", spec.name));
    }
    return;
  }
  check_value(spec, spec.default_value);  // a bad default is a programming error, caught early
  specs_.emplace(spec.name, spec);
  values_.emplace(spec.name, spec.default_value);
}

void Options::set(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw OptionError(fmt::format("--set expects KEY=VALUE, got {}; keys: {}",
                                  quote_value(assignment), known_names()));
  }
  set(assignment.substr(0, eq), assignment.substr(eq + 1));
}

void Options::set(const std::string& name, const std::string& value) {
  auto it = specs_.find(name);
  if (it == specs_.end()) {
    throw OptionError(
        fmt::format("unknown option {}; valid options: {}", quote_value(name), known_names()));
  }
  check_value(it->second, value);
  // An integer in its canonical form ("010" is stored as "10"), so overrides and traces agree.
  values_[name] = it->second.is_integer() ? std::to_string(*parse_decimal(value)) : value;
}

int64_t Options::get_int(const std::string& name) const {
  const std::string& text = get(name);
  int64_t value = 0;
  if (!parse_int(text, value))
    throw std::logic_error(fmt::format("option {} is not an integer", name));
  return value;
}

const std::string& Options::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    throw std::logic_error(fmt::format("option {} was never declared", name));
  return it->second;
}

std::vector<std::string> Options::overrides() const {
  std::vector<std::string> out;
  for (const auto& [name, value] : values_) {
    if (value != specs_.at(name).default_value) out.push_back(fmt::format("{}={}", name, value));
  }
  return out;
}

void Options::check_value(const OptionSpec& spec, const std::string& value) const {
  if (spec.text_bytes_max > 0) {
    if (value.size() > spec.text_bytes_max) {
      throw OptionError(fmt::format("option {}: {} bytes; valid: text of at most {} bytes",
                                    spec.name, value.size(), spec.text_bytes_max));
    }
    for (const char ch : value) {
      const auto byte = static_cast<unsigned char>(ch);
      if (byte < 0x20 || byte == 0x7f) {
        throw OptionError(
            fmt::format("option {}: {} holds a control character; valid: one line "
                        "of printable text",
                        spec.name, quote_value(value)));
      }
    }
    return;
  }
  if (!spec.choices.empty()) {
    for (const std::string& choice : spec.choices) {
      if (choice == value) return;
    }
    throw OptionError(fmt::format("option {}: {} is not one of: {}", spec.name, quote_value(value),
                                  fmt::join(spec.choices, ", ")));
  }
  int64_t number = 0;
  if (!parse_int(value, number)) {
    throw OptionError(fmt::format(
        "option {}: {} is {}; valid: a decimal integer in [{}, {}]", spec.name, quote_value(value),
        all_digits(value) ? "out of range" : "not a decimal integer", spec.min, spec.max));
  }
  if (number < spec.min || number > spec.max) {
    throw OptionError(
        fmt::format("option {}: {} is outside [{}, {}]", spec.name, number, spec.min, spec.max));
  }
}

std::string Options::known_names() const {
  if (specs_.empty()) return "(none)";
  std::vector<std::string> names;
  for (const auto& entry : specs_) names.push_back(entry.first);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::vector<OptionSpec> replica_options(const std::string& replicas_help) {
  return {{.name = "replicas", .default_value = "0", .help = replicas_help, .min = 0, .max = 1},
          {.name = "replication_delay_ms",
           .default_value = "1000",
           .help = "replica lag",
           .min = 0,
           .max = 600'000}};
}

}  // namespace lockstep
