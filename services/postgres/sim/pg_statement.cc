#include "services/postgres/sim/pg_statement.h"

#include <array>
#include <cctype>
#include <charconv>
#include <utility>

#include <fmt/format.h>

namespace lockstep::sim {

namespace {

constexpr size_t kTokensMax = 64;  // the longest statement understood has about 20

struct Token {
  enum class Type { word, number, string, punct, end };
  Type type = Type::end;
  std::string text;  // word: lower-cased
  int64_t number = 0;
};

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Splits sql into tokens; nullopt on a character no statement here has, or an unterminated string.
std::optional<std::vector<Token>> tokenize(const std::string& sql, std::string& bad) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < sql.size()) {
    if (out.size() > kTokensMax) {
      bad = "statement too long";
      return std::nullopt;
    }
    const char c = sql[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_') {
      size_t j = i;
      while (j < sql.size() &&
             (std::isalnum(static_cast<unsigned char>(sql[j])) != 0 || sql[j] == '_')) {
        ++j;
      }
      out.push_back({.type = Token::Type::word, .text = lower(sql.substr(i, j - i))});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
               (c == '-' && i + 1 < sql.size() &&
                std::isdigit(static_cast<unsigned char>(sql[i + 1])) != 0)) {
      size_t j = i + 1;
      while (j < sql.size() && std::isdigit(static_cast<unsigned char>(sql[j])) != 0) ++j;
      Token t{.type = Token::Type::number, .text = sql.substr(i, j - i)};
      const auto [end, error] = std::from_chars(sql.data() + i, sql.data() + j, t.number);
      if (error != std::errc() || end != sql.data() + j) {
        bad = t.text;
        return std::nullopt;
      }
      out.push_back(std::move(t));
      i = j;
    } else if (c == '\'') {
      const size_t close = sql.find('\'', i + 1);
      if (close == std::string::npos) {
        bad = sql.substr(i);
        return std::nullopt;
      }
      out.push_back({.type = Token::Type::string, .text = sql.substr(i + 1, close - i - 1)});
      i = close + 1;
    } else if (c == '(' || c == ')' || c == ',' || c == ';' || c == '=') {
      out.push_back({.type = Token::Type::punct, .text = std::string(1, c)});
      ++i;
    } else {
      bad = std::string(1, c);
      return std::nullopt;
    }
  }
  if (!out.empty() && out.back().type == Token::Type::punct && out.back().text == ";") {
    out.pop_back();
  }
  out.push_back({.type = Token::Type::end});
  return out;
}

struct FunctionSpec {
  PgFunction function;
  std::string_view name;
  size_t args_min;
  size_t args_max;
  bool string_arg;  // nextval('name')
};

constexpr std::array kFunctions = {
    FunctionSpec{PgFunction::try_advisory_lock, "pg_try_advisory_lock", 1, 2, false},
    FunctionSpec{PgFunction::advisory_lock, "pg_advisory_lock", 1, 2, false},
    FunctionSpec{PgFunction::advisory_unlock, "pg_advisory_unlock", 1, 2, false},
    FunctionSpec{PgFunction::advisory_unlock_all, "pg_advisory_unlock_all", 0, 0, false},
    FunctionSpec{PgFunction::try_advisory_xact_lock, "pg_try_advisory_xact_lock", 1, 2, false},
    FunctionSpec{PgFunction::advisory_xact_lock, "pg_advisory_xact_lock", 1, 2, false},
    FunctionSpec{PgFunction::backend_pid, "pg_backend_pid", 0, 0, false},
    FunctionSpec{PgFunction::terminate_backend, "pg_terminate_backend", 1, 2, false},
    FunctionSpec{PgFunction::nextval, "nextval", 1, 1, true},
};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  PgParse statement() {
    PgStatement s;
    if (take_word("begin")) {
      s.kind = PgStatement::Kind::begin;
    } else if (take_word("commit")) {
      s.kind = PgStatement::Kind::commit;
    } else if (take_word("rollback")) {
      s.kind = PgStatement::Kind::rollback;
    } else if (take_word("set")) {
      s.kind = PgStatement::Kind::set;
      if (peek().type != Token::Type::word) return syntax();
      s.name = next().text;
      if (!take_punct("=") && !take_word("to")) return syntax();
      const Token& value = peek();
      if (value.type == Token::Type::end || value.type == Token::Type::punct) return syntax();
      s.value = next().text;
    } else if (take_word("create")) {
      if (!take_word("sequence")) return unsupported();
      s.kind = PgStatement::Kind::create_sequence;
      if (take_word("if")) {
        if (!take_word("not") || !take_word("exists")) return syntax();
        s.if_not_exists = true;
      }
      if (peek().type != Token::Type::word) return syntax();
      s.name = next().text;
    } else if (take_word("select")) {
      s.kind = PgStatement::Kind::select;
      if (!select(s)) return failure_;
    } else {
      return peek().type == Token::Type::word ? unsupported() : syntax();
    }
    if (peek().type != Token::Type::end) return syntax();
    return PgParse{.statement = std::move(s)};
  }

 private:
  bool select(PgStatement& s) {
    if (take_word("case")) {
      s.shape = PgStatement::Shape::case_when;
      if (!take_word("when") || !call(s.first) || !take_word("then") || !call(s.second) ||
          !take_word("end")) {
        return fail(syntax());
      }
      return true;
    }
    if (!call(s.first)) return false;
    if (take_word("from")) {
      s.shape = PgStatement::Shape::from;
      s.second = std::move(s.first);
      if (!call(s.first)) return false;
    }
    return true;
  }

  // name ( args ): fails with the parse's error (kept in failure_).
  bool call(PgCall& out) {
    if (peek().type != Token::Type::word) return fail(syntax());
    const std::string name = next().text;
    if (!take_punct("(")) return fail(syntax());
    std::vector<PgArg> args;
    if (!take_punct(")")) {
      while (true) {
        const Token& t = peek();
        if (t.type == Token::Type::number) {
          args.push_back({.number = t.number});
        } else if (t.type == Token::Type::string) {
          args.push_back({.is_string = true, .text = t.text});
        } else {
          return fail(syntax());
        }
        next();
        if (take_punct(")")) break;
        if (!take_punct(",")) return fail(syntax());
      }
    }
    for (const FunctionSpec& spec : kFunctions) {
      if (spec.name != name) continue;
      bool fits = args.size() >= spec.args_min && args.size() <= spec.args_max;
      for (const PgArg& arg : args) fits = fits && arg.is_string == spec.string_arg;
      // A lock function's two-key form takes two integers (int4).
      if (spec.args_max == 2 && spec.function != PgFunction::terminate_backend &&
          args.size() == 2) {
        for (const PgArg& arg : args) {
          fits = fits && arg.number >= INT32_MIN && arg.number <= INT32_MAX;
        }
      }
      if (!fits) {
        return fail(PgParse{.sqlstate = "0A000",
                            .error = fmt::format("the simulated server has no {} of these "
                                                 "arguments",
                                                 name)});
      }
      out = PgCall{.function = spec.function, .args = std::move(args)};
      return true;
    }
    return fail(PgParse{.sqlstate = "0A000",
                        .error = fmt::format("the simulated server has no function {}", name)});
  }

  const Token& peek() const { return tokens_[at_]; }
  const Token& next() { return tokens_[at_ < tokens_.size() - 1 ? at_++ : at_]; }
  bool take_word(std::string_view word) {
    if (peek().type != Token::Type::word || peek().text != word) return false;
    next();
    return true;
  }
  bool take_punct(std::string_view punct) {
    if (peek().type != Token::Type::punct || peek().text != punct) return false;
    next();
    return true;
  }
  PgParse syntax() const {
    const Token& t = peek();
    return PgParse{.sqlstate = "42601",
                   .error = t.type == Token::Type::end
                                ? std::string("syntax error at end of input")
                                : fmt::format("syntax error at or near \"{}\"", t.text)};
  }
  PgParse unsupported() const {
    return PgParse{
        .sqlstate = "0A000",
        .error = fmt::format("the simulated server does not run {} statements", peek().text)};
  }
  bool fail(PgParse parse) {
    failure_ = std::move(parse);
    return false;
  }

  std::vector<Token> tokens_;
  size_t at_ = 0;
  PgParse failure_;
};

}  // namespace

std::string_view sql_name(PgFunction function) {
  for (const FunctionSpec& spec : kFunctions) {
    if (spec.function == function) return spec.name;
  }
  return "?";
}

PgParse parse_statement(const std::string& sql) {
  std::string bad;
  std::optional<std::vector<Token>> tokens = tokenize(sql, bad);
  if (!tokens) {
    return PgParse{.sqlstate = "42601",
                   .error = fmt::format("syntax error at or near \"{}\"", bad)};
  }
  if (tokens->size() == 1) return PgParse{.sqlstate = "", .error = ""};  // empty: nothing to run
  return Parser(std::move(*tokens)).statement();
}

}  // namespace lockstep::sim
