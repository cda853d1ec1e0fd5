#include "cli/options.hpp"

#include "cli/failure.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace uq {
namespace cli {
namespace {

const OptionSpec* find_spec(const std::vector<OptionSpec>& specs, const std::string& name) {
  for (const OptionSpec& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

std::string describe(const OptionSpec& s) { return s.metavar.empty() ? s.name : s.name + " " + s.metavar; }

bool parse_int(const std::string& text, std::int64_t& out) {
  if (text.empty() || text.size() > 20) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  out = v;
  return true;
}

bool parse_number(const std::string& text, double& out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

// Throws UsageError when `value` is not acceptable for `s`.
void validate(const OptionSpec& s, const std::string& value) {
  switch (s.kind) {
    case OptionSpec::Kind::Int: {
      std::int64_t v = 0;
      if (!parse_int(value, v) || v < s.min || v > s.max)
        throw UsageError("option " + s.name + ": expected an integer in [" + std::to_string(s.min) + ", " +
                         std::to_string(s.max) + "], found '" + value + "'");
      break;
    }
    case OptionSpec::Kind::Number: {
      double v = 0;
      if (!parse_number(value, v))
        throw UsageError("option " + s.name + ": expected a finite number, found '" + value + "'");
      break;
    }
    case OptionSpec::Kind::Choice: {
      for (const std::string& c : s.choices)
        if (c == value) return;
      std::string list;
      for (const std::string& c : s.choices) list += (list.empty() ? "" : ", ") + c;
      throw UsageError("option " + s.name + ": expected one of " + list + ", found '" + value + "'");
    }
    case OptionSpec::Kind::Text:
      if (value.empty()) throw UsageError("option " + s.name + ": expected " + s.metavar + ", found ''");
      break;
    case OptionSpec::Kind::Flag: break;
  }
}

// What every builder sets: the option's name, its metavar (empty for flags), help and kind.
OptionSpec option_of_kind(std::string name, std::string metavar, std::string help, OptionSpec::Kind kind) {
  OptionSpec s;
  s.name = std::move(name);
  s.metavar = std::move(metavar);
  s.help = std::move(help);
  s.kind = kind;
  return s;
}

}  // namespace

OptionSpec text_option(std::string name, std::string metavar, std::string help, bool required) {
  OptionSpec s = option_of_kind(std::move(name), std::move(metavar), std::move(help), OptionSpec::Kind::Text);
  s.required = required;
  return s;
}

OptionSpec int_option(std::string name, std::string metavar, std::string help, std::int64_t min,
                      std::int64_t max, std::string default_value) {
  OptionSpec s = option_of_kind(std::move(name), std::move(metavar), std::move(help), OptionSpec::Kind::Int);
  s.min = min;
  s.max = max;
  s.default_value = std::move(default_value);
  return s;
}

OptionSpec number_option(std::string name, std::string metavar, std::string help, std::string default_value) {
  OptionSpec s = option_of_kind(std::move(name), std::move(metavar), std::move(help), OptionSpec::Kind::Number);
  s.default_value = std::move(default_value);
  return s;
}

OptionSpec flag_option(std::string name, std::string help) {
  return option_of_kind(std::move(name), "", std::move(help), OptionSpec::Kind::Flag);
}

OptionSpec choice_option(std::string name, std::vector<std::string> choices, std::string help,
                         std::string default_value) {
  std::string meta;
  for (const std::string& c : choices) meta += (meta.empty() ? "" : "|") + c;
  OptionSpec s = option_of_kind(std::move(name), meta, std::move(help), OptionSpec::Kind::Choice);
  s.choices = std::move(choices);
  s.default_value = std::move(default_value);
  return s;
}

bool ParsedOptions::given(const std::string& name) const { return given_.count(name) != 0; }

bool ParsedOptions::has(const std::string& name) const { return values_.count(name) != 0; }

const std::string& ParsedOptions::value(const std::string& name) const {
  const auto it = values_.find(name);
  // Commands only ask for options they declared with a default or as required; a
  // miss is a bug in the command table, not a user error.
  if (it == values_.end()) throw std::logic_error("uq cli: option " + name + " has no value");
  return it->second;
}

const std::string& ParsedOptions::text(const std::string& name) const { return value(name); }

std::int64_t ParsedOptions::integer(const std::string& name) const {
  std::int64_t v = 0;
  parse_int(value(name), v);
  return v;
}

double ParsedOptions::number(const std::string& name) const {
  double v = 0;
  parse_number(value(name), v);
  return v;
}

bool ParsedOptions::flag(const std::string& name) const { return given(name); }

ParsedOptions parse_options(const std::vector<OptionSpec>& specs, const std::vector<std::string>& args) {
  ParsedOptions p;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) throw UsageError("unexpected argument '" + arg + "'");
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const OptionSpec* s = find_spec(specs, name);
    if (!s) throw UsageError("unknown option '" + name + "'");
    if (p.given(name)) throw UsageError("option " + name + " given twice");
    std::string value;
    if (s->kind == OptionSpec::Kind::Flag) {
      if (eq != std::string::npos) throw UsageError("option " + name + " takes no value");
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= args.size() || args[i + 1].compare(0, 2, "--") == 0)
        throw UsageError("option " + name + " needs a value (" + s->metavar + ")");
      value = args[++i];
    }
    validate(*s, value);
    p.values_[name] = value;
    p.given_[name] = true;
  }
  for (const OptionSpec& s : specs) {
    if (p.has(s.name)) continue;
    if (s.required) throw UsageError("missing required option " + describe(s));
    if (!s.default_value.empty()) p.values_[s.name] = s.default_value;
  }
  return p;
}

std::string wrap(const std::string& text, int indent, int width, int hang) {
  std::ostringstream out;
  std::istringstream lines(text);
  std::string line;
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  while (std::getline(lines, line)) {
    if (line.empty()) {
      out << '\n';
      continue;
    }
    // Keep a line's own leading spaces (lists, examples) on its first output line.
    const std::size_t lead = line.find_first_not_of(' ');
    if (lead == std::string::npos) {
      out << '\n';
      continue;
    }
    std::string cur = pad + line.substr(0, lead);
    const std::size_t base = cur.size();
    std::istringstream words(line.substr(lead));
    std::string w;
    while (words >> w) {
      if (cur.size() > base && static_cast<int>(cur.size() + 1 + w.size()) > width) {
        out << cur << '\n';
        cur = pad + std::string(lead + static_cast<std::size_t>(hang), ' ');
      } else if (cur.size() > base && cur.back() != ' ') {
        cur += ' ';
      }
      cur += w;
    }
    out << cur << '\n';
  }
  return out.str();
}

std::string format_options(const std::vector<OptionSpec>& specs) {
  constexpr int kColumn = 26;
  std::ostringstream out;
  out << "options:\n";
  auto entry = [&](const std::string& left, const std::string& help) {
    std::string body = wrap(help, kColumn, 80, 2);
    std::string head = "  " + left;
    if (static_cast<int>(head.size()) <= kColumn - 2) {
      body.replace(0, head.size(), head);
    } else {
      out << head << '\n';
    }
    out << body;
  };
  for (const OptionSpec& s : specs) {
    std::string help = s.help;
    if (s.required) help += " (required)";
    else if (!s.default_value.empty()) help += " (default " + s.default_value + ")";
    entry(describe(s), help);
  }
  entry("-h, --help", "Show this help and exit.");
  return out.str();
}

}  // namespace cli
}  // namespace uq
