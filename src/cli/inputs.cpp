#include "cli/inputs.hpp"

#include "cli/failure.hpp"
#include "uq/core/ultraquant_format.hpp"

#include <sys/stat.h>

#include <cstring>
#include <limits>

namespace uq {
namespace cli {
namespace {

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

template <class T>
T load_le(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // .npy data is little-endian, as the host (npy.cpp checks)
  return v;
}

const char* kIndexDtypes = "int32 or int64";
const char* kE4m3Dtypes = "uint8 (E4M3 bits) or float32 (rounded to E4M3)";

}  // namespace

std::string ShapePattern::text() const {
  std::string s = "[";
  for (std::size_t i = 0; i < dims_.size(); ++i) s += (i ? ", " : "") + dims_[i];
  return s + "]";
}

void ShapeBindings::bind(const std::string& name, std::int64_t value, const std::string& source) {
  extents_[name] = {value, source};
}

std::int64_t ShapeBindings::operator[](const std::string& name) const { return extents_.at(name).first; }

void ShapeBindings::match(const npy::Array& a, const std::string& file, const ShapePattern& pattern) {
  match(a.shape, a.dtype, file, pattern);
}

void ShapeBindings::match(const std::vector<std::int64_t>& shape, const npy::DType& dtype, const std::string& file,
                          const ShapePattern& pattern) {
  const std::string found = npy::shape_string(shape) + " " + dtype.name();
  const std::vector<std::string>& dims = pattern.dims();
  if (shape.size() != dims.size())
    throw InputError(file, "a " + std::to_string(dims.size()) + "-d array " + pattern.text(),
                     "a " + std::to_string(shape.size()) + "-d array " + found);
  // Fixed extents first, then names already bound (agreement with earlier files),
  // binding the new names only when everything else holds.
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (is_number(dims[i]) && shape[i] != std::stoll(dims[i]))
      throw InputError(file, "shape " + pattern.text(), found);
  }
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (is_number(dims[i]) || !bound(dims[i])) continue;
    const auto& b = extents_.at(dims[i]);
    if (shape[i] != b.first)
      throw InputError(file,
                       "shape " + pattern.text() + " with " + dims[i] + " = " + std::to_string(b.first) +
                           " (from " + b.second + ")",
                       found);
  }
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (!is_number(dims[i]) && !bound(dims[i])) bind(dims[i], shape[i], file);
  }
}

std::vector<bf16> to_bf16(const npy::Array& a, const std::string& file) {
  const std::int64_t n = a.elements();
  std::vector<bf16> out(static_cast<std::size_t>(n));
  if (a.dtype.is('f', 4)) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = codec::float_to_bf16(load_le<float>(&a.data[4 * i]));
  } else if (a.dtype.is('u', 2)) {
    for (std::int64_t i = 0; i < n; ++i) out[i].bits = load_le<std::uint16_t>(&a.data[2 * i]);
  } else {
    throw InputError(file, "float32 (rounded to bf16) or uint16 (bf16 bits)", a.dtype.name());
  }
  return out;
}

std::vector<std::int64_t> to_int64(const npy::Array& a, const std::string& file) {
  const std::int64_t n = a.elements();
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  if (a.dtype.is('i', 8)) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = load_le<std::int64_t>(&a.data[8 * i]);
  } else if (a.dtype.is('i', 4)) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = load_le<std::int32_t>(&a.data[4 * i]);
  } else {
    throw InputError(file, kIndexDtypes, a.dtype.name());
  }
  return out;
}

std::vector<std::int32_t> to_int32(const npy::Array& a, const std::string& file) {
  const std::vector<std::int64_t> wide = to_int64(a, file);
  std::vector<std::int32_t> out(wide.size());
  for (std::size_t i = 0; i < wide.size(); ++i) {
    if (wide[i] < std::numeric_limits<std::int32_t>::min() || wide[i] > std::numeric_limits<std::int32_t>::max())
      throw InputError(file, "values in the int32 range",
                       std::to_string(wide[i]) + " at flat index " + std::to_string(i));
    out[i] = static_cast<std::int32_t>(wide[i]);
  }
  return out;
}

std::vector<float> to_float32(const npy::Array& a, const std::string& file) {
  if (!a.dtype.is('f', 4)) throw InputError(file, "float32", a.dtype.name());
  const std::int64_t n = a.elements();
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) out[i] = load_le<float>(&a.data[4 * i]);
  return out;
}

std::vector<std::uint8_t> to_e4m3(const npy::Array& a, const std::string& file) {
  const std::int64_t n = a.elements();
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n));
  if (a.dtype.is('u', 1)) {
    // An empty vector's data() may be null, and memcpy's pointers must never be.
    if (!out.empty()) std::memcpy(out.data(), a.data.data(), out.size());
  } else if (a.dtype.is('f', 4)) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = codec::float_to_e4m3(load_le<float>(&a.data[4 * i]));
  } else {
    throw InputError(file, kE4m3Dtypes, a.dtype.name());
  }
  return out;
}

Bf16Tensor load_bf16(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes) {
  const npy::Array a = npy::read(file);
  if (!a.dtype.is('f', 4) && !a.dtype.is('u', 2))
    throw InputError(file, "float32 (rounded to bf16) or uint16 (bf16 bits)", a.dtype.name());
  shapes.match(a, file, pattern);
  return Bf16Tensor{a.shape, to_bf16(a, file)};
}

std::vector<std::int32_t> load_int32(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes) {
  const npy::Array a = npy::read(file);
  if (!a.dtype.is('i', 4) && !a.dtype.is('i', 8)) throw InputError(file, kIndexDtypes, a.dtype.name());
  shapes.match(a, file, pattern);
  return to_int32(a, file);
}

std::vector<std::int64_t> load_int64(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes) {
  const npy::Array a = npy::read(file);
  if (!a.dtype.is('i', 4) && !a.dtype.is('i', 8)) throw InputError(file, kIndexDtypes, a.dtype.name());
  shapes.match(a, file, pattern);
  return to_int64(a, file);
}

npy::Array load_uint8(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes) {
  npy::Array a = npy::read(file);
  if (!a.dtype.is('u', 1)) throw InputError(file, "uint8", a.dtype.name());
  shapes.match(a, file, pattern);
  return a;
}

std::vector<std::uint8_t> load_e4m3(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes) {
  const npy::Array a = npy::read(file);
  if (!a.dtype.is('u', 1) && !a.dtype.is('f', 4)) throw InputError(file, kE4m3Dtypes, a.dtype.name());
  shapes.match(a, file, pattern);
  return to_e4m3(a, file);
}

std::vector<float> load_float32(const std::string& file, const ShapePattern& pattern, ShapeBindings& shapes) {
  const npy::Array a = npy::read(file);
  if (!a.dtype.is('f', 4)) throw InputError(file, "float32", a.dtype.name());
  shapes.match(a, file, pattern);
  return to_float32(a, file);
}

bool valid_block_size(std::int64_t bs) { return is_decode_block_size(bs); }

bool valid_slot_bytes(std::int64_t sb) { return sb >= ultraquant::kSlotContent && sb % 4 == 0 && sb < (1 << 20); }

void check_cache_geometry(const std::string& file, const std::vector<std::int64_t>& shape) {
  const std::string found = "shape " + npy::shape_string(shape);
  if (!valid_block_size(shape[1]))
    throw InputError(file, "a cache [num_blocks, block_size, Hk, slot_bytes] with block_size in {16, 32, 64, 128, 256}",
                     found);
  if (shape[2] < 1 || shape[2] > std::numeric_limits<int>::max())
    throw InputError(file, "a cache [num_blocks, block_size, Hk, slot_bytes] with 1 <= Hk <= 2^31 - 1", found);
  if (!valid_slot_bytes(shape[3]))
    throw InputError(file,
                     "a cache [num_blocks, block_size, Hk, slot_bytes] with slot_bytes >= 272 and a multiple of 4",
                     found);
}

bool multiply_extents(std::int64_t a, std::int64_t b, std::int64_t& product) {
  return !__builtin_mul_overflow(a, b, &product);
}

std::string product_text(std::int64_t a, std::int64_t b) {
  std::int64_t p = 0;
  return std::to_string(a) + " x " + std::to_string(b) + " = " +
         (multiply_extents(a, b, p) ? std::to_string(p) : std::string("more than 2^63 - 1"));
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace cli
}  // namespace uq
