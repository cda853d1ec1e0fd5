#include "cli/commands.hpp"

namespace uq {
namespace cli {

const std::vector<Command>& command_table() {
  // The UltraQuant commands, the demo, then the NVFP4 index commands.
  static const std::vector<Command> table = {write_kv_command(), rotate_q_command(), decode_command(),
                                             gather_kv_command(), demo_command(), write_index_command(),
                                             score_command(), select_command()};
  return table;
}

}  // namespace cli
}  // namespace uq
