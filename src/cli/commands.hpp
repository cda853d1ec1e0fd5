// The table of subcommands: each entry has its name, its help texts, its options and
// the function that runs it. Adding a subcommand is adding one entry.
#pragma once

#include "cli/options.hpp"

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace uq {
namespace cli {

// Where a command writes: results and summaries to `out`, progress and warnings to
// `err`. `interactive` is true when `err` is a terminal (progress lines are redrawn).
struct CommandIo {
  std::ostream& out;
  std::ostream& err;
  bool interactive = false;
};

struct Command {
  // Returning is success (exit status 0); every failure is thrown (failure.hpp, uq::Error)
  // and run_cli turns it into its exit status.
  using Runner = void (*)(const ParsedOptions& options, CommandIo& io);

  // Every command has a name, a line for `uq --help` and a function that runs it; its
  // usage, description and options are filled in after.
  Command(std::string name_, std::string summary_, Runner run_)
      : name(std::move(name_)), summary(std::move(summary_)), run(run_) {}

  std::string name;
  std::string summary;      // one line, for `uq --help`
  std::string usage;        // the synopsis after "usage: uq "
  std::string description;  // paragraphs, for `uq <cmd> --help`
  std::vector<OptionSpec> options;
  Runner run;
};

Command write_kv_command();
Command rotate_q_command();
Command decode_command();
Command gather_kv_command();
Command demo_command();
Command write_index_command();
Command score_command();
Command select_command();

// Every subcommand, in the order `uq --help` lists them.
const std::vector<Command>& command_table();

// The help text of one command.
std::string command_help(const Command& c);

}  // namespace cli
}  // namespace uq
