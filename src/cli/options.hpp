// Command-line options of a subcommand: their specification (which also drives the
// help text), parsing ("--name value" or "--name=value") and typed access. Values are
// checked when parsed, so a command reads them without further validation.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace uq {
namespace cli {

struct OptionSpec {
  enum class Kind { Text, Int, Number, Flag, Choice };

  std::string name;     // "--num-blocks"
  std::string metavar;  // "N" (empty for flags)
  std::string help;     // one or more sentences
  Kind kind = Kind::Text;
  bool required = false;
  std::string default_value;         // parsed like a given value; shown in the help
  std::int64_t min = 0, max = 0;     // Int: the accepted range
  std::vector<std::string> choices;  // Choice: the accepted words
};

// Builders that keep the command tables short.
OptionSpec text_option(std::string name, std::string metavar, std::string help, bool required);
OptionSpec int_option(std::string name, std::string metavar, std::string help, std::int64_t min,
                      std::int64_t max, std::string default_value = "");
OptionSpec number_option(std::string name, std::string metavar, std::string help, std::string default_value);
OptionSpec flag_option(std::string name, std::string help);
OptionSpec choice_option(std::string name, std::vector<std::string> choices, std::string help,
                         std::string default_value);

class ParsedOptions {
 public:
  // Whether the option was given on the command line (defaults do not count).
  bool given(const std::string& name) const;
  // Whether it has a value, given or default.
  bool has(const std::string& name) const;
  const std::string& text(const std::string& name) const;
  std::int64_t integer(const std::string& name) const;
  double number(const std::string& name) const;
  bool flag(const std::string& name) const;

 private:
  friend ParsedOptions parse_options(const std::vector<OptionSpec>&, const std::vector<std::string>&);
  const std::string& value(const std::string& name) const;
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> given_;
};

// Throws UsageError for an unknown or repeated option, a missing or malformed value,
// a missing required option, or a positional argument.
ParsedOptions parse_options(const std::vector<OptionSpec>& specs, const std::vector<std::string>& args);

// The "options:" block of a help text: one entry per option, wrapped to 80 columns.
std::string format_options(const std::vector<OptionSpec>& specs);

// Wraps text (line breaks kept) to `width` columns, each line prefixed by `indent`
// spaces and continuation lines by `hang` more.
std::string wrap(const std::string& text, int indent, int width = 80, int hang = 0);

}  // namespace cli
}  // namespace uq
