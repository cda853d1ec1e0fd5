// Options that several commands take with the same meaning: one specification each, so
// that their names, choices and help read the same in every command that has them.
#pragma once

#include "cli/options.hpp"

#include "uq/backend.hpp"

#include <string>

namespace uq {
namespace cli {

// --backend auto|generic|native (default auto), and the Backend its value names.
OptionSpec backend_option();
Backend parse_backend(const std::string& value);

// --cache CACHE.npy: an existing UltraQuant cache, read (decode, gather-kv).
OptionSpec kv_cache_input_option();

// --block-tables BT.npy [B, max_blocks], one row per sequence (decode, gather-kv).
OptionSpec sequence_block_tables_option();

// --out-dtype float32|bf16 (default float32) for bf16 results; `what` names them in the help.
OptionSpec bf16_out_dtype_option(const std::string& what);

}  // namespace cli
}  // namespace uq
