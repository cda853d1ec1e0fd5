// The uq program's command line: the option parser (src/cli/options.*), the
// dispatcher (src/cli/cli.cpp) and the help texts, which must document every option.
#include "cli/cli_test_support.hpp"

#include "cli/commands.hpp"
#include "cli/failure.hpp"
#include "cli/options.hpp"

#include <gtest/gtest.h>

using namespace cli_test;
using uq::cli::OptionSpec;
using uq::cli::ParsedOptions;
using uq::cli::UsageError;

namespace {

std::vector<OptionSpec> sample_specs() {
  return {uq::cli::text_option("--in", "IN.npy", "Input.", true),
          uq::cli::int_option("--count", "N", "How many.", -3, 300, "7"),
          uq::cli::number_option("--scale", "S", "Scale.", "0.0625"),
          uq::cli::flag_option("--fast", "Go fast."),
          uq::cli::choice_option("--mode", {"auto", "generic", "native"}, "Mode.", "auto")};
}

std::string usage_error(const std::vector<std::string>& args) {
  try {
    uq::cli::parse_options(sample_specs(), args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CliOptions, ParsesValuesDefaultsAndFlags) {
  const ParsedOptions p = uq::cli::parse_options(sample_specs(), {"--in", "a.npy", "--count=-3", "--fast"});
  EXPECT_EQ(p.text("--in"), "a.npy");
  EXPECT_EQ(p.integer("--count"), -3);
  EXPECT_TRUE(p.given("--count"));
  EXPECT_DOUBLE_EQ(p.number("--scale"), 0.0625);
  EXPECT_FALSE(p.given("--scale"));
  EXPECT_TRUE(p.flag("--fast"));
  EXPECT_EQ(p.text("--mode"), "auto");
  const ParsedOptions q = uq::cli::parse_options(sample_specs(), {"--mode", "native", "--scale", "-1e-3", "--in=b"});
  EXPECT_FALSE(q.flag("--fast"));
  EXPECT_EQ(q.text("--mode"), "native");
  EXPECT_DOUBLE_EQ(q.number("--scale"), -1e-3);
  EXPECT_EQ(q.integer("--count"), 7);
}

TEST(CliOptions, RejectsBadCommandLines) {
  EXPECT_NE(usage_error({}).find("missing required option --in IN.npy"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "--bogus", "1"}).find("unknown option '--bogus'"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "--in", "b"}).find("given twice"), std::string::npos);
  EXPECT_NE(usage_error({"--in"}).find("needs a value (IN.npy)"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "--fast"}).find("needs a value"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "extra"}).find("unexpected argument 'extra'"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "--count", "301"}).find("[-3, 300], found '301'"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "--count", "1.5"}).find("found '1.5'"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "--count", "99999999999999999999999"}).find("expected an integer"),
            std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "--scale", "nan"}).find("finite number"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "--scale", "1e999"}).find("finite number"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "--mode", "fast"}).find("one of auto, generic, native"), std::string::npos);
  EXPECT_NE(usage_error({"--in", "a", "--fast=1"}).find("takes no value"), std::string::npos);
  EXPECT_NE(usage_error({"--in="}).find("found ''"), std::string::npos);
}

// Every option of every command appears in its --help, with its metavar, and the
// required ones are marked; the program help lists every command.
TEST(CliOptions, HelpDocumentsEveryOption) {
  const CliResult top = run({"--help"});
  EXPECT_EQ(top.status, 0);
  for (const uq::cli::Command& c : uq::cli::command_table()) {
    EXPECT_NE(top.out.find("  " + c.name + " "), std::string::npos) << c.name;
    const CliResult help = run({c.name, "--help"});
    EXPECT_EQ(help.status, 0);
    EXPECT_TRUE(help.err.empty());
    EXPECT_EQ(help.out, uq::cli::command_help(c));
    EXPECT_NE(help.out.find("usage: uq " + c.name), std::string::npos);
    for (const OptionSpec& o : c.options) {
      const std::string entry = o.metavar.empty() ? o.name : o.name + " " + o.metavar;
      const std::size_t at = help.out.find("\n  " + entry, help.out.find("\noptions:\n"));
      ASSERT_NE(at, std::string::npos) << c.name << " help lacks " << entry;
      const std::size_t next = help.out.find("\n  --", at + 1);
      const std::string block = help.out.substr(at, next - at);
      EXPECT_FALSE(o.help.empty());
      if (o.required) {
        EXPECT_NE(block.find("(required)"), std::string::npos) << entry;
      }
      if (!o.default_value.empty()) {
        EXPECT_NE(block.find("(default " + o.default_value + ")"), std::string::npos) << entry;
      }
      // The option is mentioned in the synopsis too (optional ones in brackets).
      EXPECT_NE(c.usage.find(o.name), std::string::npos) << c.name << " usage lacks " << o.name;
    }
    EXPECT_EQ(help.out.find('\t'), std::string::npos);
  }
  EXPECT_EQ(run({"help", "decode"}).out, run({"decode", "-h"}).out);
}

TEST(CliOptions, HelpLinesFitEightyColumns) {
  std::vector<std::string> texts = {uq::cli::program_help()};
  for (const uq::cli::Command& c : uq::cli::command_table()) texts.push_back(uq::cli::command_help(c));
  for (const std::string& t : texts) {
    std::size_t start = 0;
    while (start < t.size()) {
      const std::size_t end = t.find('\n', start);
      const std::string line = t.substr(start, end - start);
      EXPECT_LE(line.size(), 80u) << line;
      start = end == std::string::npos ? t.size() : end + 1;
    }
  }
}

TEST(CliOptions, DispatcherStatusesAndMessages) {
  const CliResult none = run({});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("usage: uq <command>"), std::string::npos);
  const CliResult unknown = run({"frobnicate"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("unknown command 'frobnicate' (commands: write-kv, rotate-q, decode, gather-kv, demo"),
            std::string::npos);
  const CliResult version = run({"--version"});
  EXPECT_EQ(version.status, 0);
  EXPECT_EQ(version.out.rfind("uq ", 0), 0u);
  // A usage error: one line naming the command, pointing at its help.
  const CliResult bad = run({"decode", "--q", "q.npy"});
  expect_one_line_error(bad, "decode", 2);
  EXPECT_NE(bad.err.find("missing required option --cache CACHE.npy (see 'uq decode --help')"), std::string::npos);
  const CliResult bad_value = run({"demo", "--qg", "7"});
  expect_one_line_error(bad_value, "demo", 2);
  EXPECT_NE(bad_value.err.find("expected 6, 8 or 16, found 7"), std::string::npos);
}

TEST(CliOptions, WrapKeepsWordsAndIndents) {
  const std::string w = uq::cli::wrap("alpha beta gamma delta epsilon", 4, 20, 2);
  EXPECT_EQ(w, "    alpha beta gamma\n      delta epsilon\n");
  EXPECT_EQ(uq::cli::wrap("a\n\nb", 0), "a\n\nb\n");
  EXPECT_EQ(uq::cli::wrap("   ", 0), "\n");
}
