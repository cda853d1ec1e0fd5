#include "cli/commands.hpp"

namespace uq {
namespace cli {

const std::vector<Command>& command_table() {
  // The index scorer's write-index, score and select join this list when they land.
  static const std::vector<Command> table = {write_kv_command(), rotate_q_command(), decode_command(),
                                             demo_command()};
  return table;
}

}  // namespace cli
}  // namespace uq
