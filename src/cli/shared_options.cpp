#include "cli/shared_options.hpp"

namespace uq {
namespace cli {

OptionSpec backend_option() {
  return choice_option("--backend", {"auto", "generic", "native"},
                       "auto: the device's tuned kernel where one exists, else generic; native: the tuned kernel or "
                       "an error.",
                       "auto");
}

Backend parse_backend(const std::string& value) {
  if (value == "generic") return Backend::Generic;
  if (value == "native") return Backend::Native;
  return Backend::Auto;
}

OptionSpec kv_cache_input_option() {
  return text_option("--cache", "CACHE.npy", "The cache [num_blocks, block_size, Hk, slot_bytes] uint8 (uq write-kv).",
                     true);
}

OptionSpec sequence_block_tables_option() {
  return text_option("--block-tables", "BT.npy", "Block table [B, max_blocks]: int32 or int64.", true);
}

OptionSpec bf16_out_dtype_option(const std::string& what) {
  return choice_option("--out-dtype", {"float32", "bf16"},
                       "float32: the bf16 " + what + " as float32; bf16: their uint16 bits.", "float32");
}

}  // namespace cli
}  // namespace uq
