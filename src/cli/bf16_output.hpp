// Writing bf16 results in the form --out-dtype names (shared_options.hpp): float32, which
// holds every bf16 exactly, or the raw uint16 bits.
#pragma once

#include "uq/types.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace uq {
namespace cli {

// Writes `values` to `file` as .npy of `shape`: uint16 bits when dtype is "bf16", else float32.
void write_bf16(const std::string& file, const std::string& dtype, const std::vector<std::int64_t>& shape,
                const std::vector<bf16>& values);

// How a summary line names what write_bf16 wrote for dtype.
const char* bf16_output_type_name(const std::string& dtype);

}  // namespace cli
}  // namespace uq
