#include "cli/bf16_output.hpp"

#include "cli/npy.hpp"

#include <cstddef>

namespace uq {
namespace cli {

void write_bf16(const std::string& file, const std::string& dtype, const std::vector<std::int64_t>& shape,
                const std::vector<bf16>& values) {
  if (dtype == "bf16") {
    std::vector<std::uint16_t> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) bits[i] = values[i].bits;
    npy::write(file, npy::uint16(), shape, bits.data());
  } else {
    std::vector<float> floats(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) floats[i] = codec::bf16_to_float(values[i]);
    npy::write(file, npy::float32(), shape, floats.data());
  }
}

const char* bf16_output_type_name(const std::string& dtype) {
  return dtype == "bf16" ? "uint16 (bf16 bits)" : "float32";
}

}  // namespace cli
}  // namespace uq
