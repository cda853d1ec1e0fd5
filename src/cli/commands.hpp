// The table of subcommands: each entry has its name, its help texts, its options and
// the function that runs it. Adding a subcommand is adding one entry.
#pragma once

#include "cli/options.hpp"

#include <iosfwd>
#include <string>
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
  std::string name;
  std::string summary;      // one line, for `uq --help`
  std::string usage;        // the synopsis after "usage: uq "
  std::string description;  // paragraphs, for `uq <cmd> --help`
  std::vector<OptionSpec> options;
  // Returns the exit status; failures are thrown (failure.hpp, uq::Error).
  int (*run)(const ParsedOptions& options, CommandIo& io) = nullptr;
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
