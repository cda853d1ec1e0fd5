// Loading the arrays of a subcommand from .npy files: dtype conversion (float32 or
// bf16 bits -> bf16, int32 or int64 -> the index type the library takes) and shape
// checks against a pattern such as [T, Hk, 256], where a named extent seen in an
// earlier file must agree ("expected ... with T = 100 (from K.npy)").
#pragma once

#include "cli/npy.hpp"

#include "uq/types.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace uq {
namespace cli {

// A shape pattern: each entry is a name (a free extent, bound on first sight) or a
// decimal number (a fixed extent).
class ShapePattern {
 public:
  ShapePattern(std::initializer_list<std::string> dims) : dims_(dims) {}
  const std::vector<std::string>& dims() const { return dims_; }
  std::string text() const;  // "[T, Hk, 256]"

 private:
  std::vector<std::string> dims_;
};

// The extents named so far, and which file named each.
class ShapeBindings {
 public:
  // Checks `a`'s shape (read from `file`) against `pattern`, binding new names.
  void match(const npy::Array& a, const std::string& file, const ShapePattern& pattern);
  // The same for a file known by its header only (npy::DataFile).
  void match(const std::vector<std::int64_t>& shape, const npy::DType& dtype, const std::string& file,
             const ShapePattern& pattern);
  std::int64_t operator[](const std::string& name) const;
  bool bound(const std::string& name) const { return extents_.count(name) != 0; }
  void bind(const std::string& name, std::int64_t value, const std::string& source);

 private:
  std::map<std::string, std::pair<std::int64_t, std::string>> extents_;
};

// A bf16 tensor from float32 (rounded to nearest even) or uint16 (raw bits).
struct Bf16Tensor {
  std::vector<std::int64_t> shape;
  std::vector<bf16> values;
};

// Reads `file`, checks its dtype and shape; throws InputError/IoError.
Bf16Tensor load_bf16(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes);
std::vector<std::int32_t> load_int32(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes);
std::vector<std::int64_t> load_int64(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes);
npy::Array load_uint8(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes);
// E4M3 bytes from uint8 (raw bits) or float32 (rounded to E4M3: nearest even, saturating).
std::vector<std::uint8_t> load_e4m3(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes);
// float32 values as they are (no rounding).
std::vector<float> load_float32(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes);

// Conversions of an array already read (exposed for tests).
std::vector<bf16> to_bf16(const npy::Array& a, const std::string& file);
std::vector<std::int32_t> to_int32(const npy::Array& a, const std::string& file);
std::vector<std::int64_t> to_int64(const npy::Array& a, const std::string& file);
std::vector<float> to_float32(const npy::Array& a, const std::string& file);
std::vector<std::uint8_t> to_e4m3(const npy::Array& a, const std::string& file);

// The cache geometry rules of spec ultraquant.md §2 (block size in {16, ..., 256},
// slot bytes >= 272 and a multiple of 4) and 1 <= Hk <= 2^31 - 1 (the library counts
// heads in int), checked with the file's name in the error.
void check_cache_geometry(const std::string& file, const std::vector<std::int64_t>& shape);
bool valid_block_size(std::int64_t bs);
bool valid_slot_bytes(std::int64_t sb);

bool file_exists(const std::string& path);

// a x b for extents (both >= 0): false when the product does not fit in 63 bits.
bool multiply_extents(std::int64_t a, std::int64_t b, std::int64_t& product);
// "a x b = c" for messages, with "more than 2^63 - 1" for c when it does not fit.
std::string product_text(std::int64_t a, std::int64_t b);

}  // namespace cli
}  // namespace uq
