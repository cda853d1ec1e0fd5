// UltraQuant cache writer (ultraquant.md §4), one row and the whole write_kv, plus the
// slot dequantisation and the query rounding that read what it writes.
#include "uqref_formats.hpp"
#include "uqref_ultraquant.hpp"

#include <array>
#include <cmath>

namespace uqref {
namespace {

constexpr int kDim = 256;
constexpr int kGroup = 32;
constexpr int kGroups = kDim / kGroup;
constexpr int kKCodes = 0, kKScales = 128, kVCodes = 136, kVScales = 264;

// Lookup tables filled once from the definitional decoders (uqref_formats.hpp): the
// writer and the decode touch every element of 10^5..10^6 tokens, and ldexp per element
// would dominate their run time.
const std::array<float, 65536>& bf16_table() {
  static const std::array<float, 65536> t = [] {
    std::array<float, 65536> v{};
    for (std::size_t b = 0; b < v.size(); ++b) v[b] = bf16_value(static_cast<std::uint16_t>(b));
    return v;
  }();
  return t;
}

// dequant_table()[b][code] = FP4(code) * 2^(b - 127), and 0 for the zero-group byte b = 0.
const std::array<std::array<double, 16>, 256>& dequant_table() {
  static const std::array<std::array<double, 16>, 256> t = [] {
    std::array<std::array<double, 16>, 256> v{};
    for (unsigned b = 0; b < 256; ++b)
      for (unsigned c = 0; c < 16; ++c)
        v[b][c] = (b == 0) ? 0.0 : e2m1_value(c) * ue8m0_value(static_cast<std::uint8_t>(b));
    return v;
  }();
  return t;
}

// Quantises one group of 32 values into 32 codes and its scale byte. Returns false when
// the group holds a non-finite value (then it is written as zero).
bool quantize_group(const float* r, unsigned* codes, std::uint8_t* scale_byte) {
  for (int i = 0; i < kGroup; ++i) codes[i] = 0;
  *scale_byte = 0;
  float A = 0.0f;
  for (int i = 0; i < kGroup; ++i) {
    if (!std::isfinite(r[i])) return false;
    A = std::fmax(A, std::fabs(r[i]));
  }
  if (A == 0.0f) return true;
  const float c = 0.156f;
  const float s = A * c;  // fl32(A * 0.156f), the one fp32 rounding the spec fixes here
  if (s == 0.0f) return true;  // underflow: e = -inf < -126, flushed
  const int e = uq_group_exponent(s);
  if (e < -126) return true;  // flushed to zero
  *scale_byte = static_cast<std::uint8_t>(e + 127);
  const double inv_pow2 = std::ldexp(1.0, -e);  // y = r / 2^e = r * 2^-e, exact in double
  for (int i = 0; i < kGroup; ++i) codes[i] = uq_fp4_code(static_cast<double>(r[i]) * inv_pow2);
  return true;
}

void pack_codes(const unsigned* codes256, std::uint8_t* bytes128) {
  for (int j = 0; j < kDim / 2; ++j)
    bytes128[j] = static_cast<std::uint8_t>(codes256[2 * j] | (codes256[2 * j + 1] << 4));
}

void dequant_side(const std::uint8_t* codes128, const std::uint8_t* scales8, double* out256) {
  const auto& table = dequant_table();
  for (int i = 0; i < kDim; ++i) {
    const auto& values = table[scales8[i / kGroup]];
    const unsigned code = (i % 2 == 0) ? (codes128[i / 2] & 0xFu) : (codes128[i / 2] >> 4);
    out256[i] = values[code];
  }
}

}  // namespace

int uq_group_exponent(float s) {
  // s = f * 2^E with f in [0.5, 1), so s in [2^(E-1), 2^E). The half-octave point
  // 2^(E-1/2) splits that binade: s >= 2^(E-1/2) <=> f >= 2^(-1/2) <=> f*f >= 1/2,
  // and f*f is exact in double (f has at most 24 significant bits).
  int E = 0;
  const double f = std::frexp(static_cast<double>(s), &E);
  return (f * f >= 0.5) ? E : E - 1;
}

unsigned uq_fp4_code(double y) {
  static const double midpoints[14] = {-5,   -3.5, -2.5, -1.75, -1.25, -0.75, -0.25,
                                       0.25, 0.75, 1.25, 1.75,  2.5,   3.5,   5};
  unsigned n = 0;  // index into the sorted levels -6 .. 6
  for (double m : midpoints)
    if (y > m) ++n;
  return n < 7 ? 15u - n : n - 7u;
}

bool uq_quantize_row(const std::uint16_t* row256, bool rotate, std::uint8_t* codes128,
                     std::uint8_t* scales8) {
  const auto& bf16 = bf16_table();
  float r[kDim];
  for (int i = 0; i < kDim; ++i) r[i] = bf16[row256[i]];
  if (rotate) wht256_fp32(r, r);
  unsigned codes[kDim];
  bool any_nonfinite = false;
  for (int g = 0; g < kGroups; ++g)
    if (!quantize_group(r + g * kGroup, codes + g * kGroup, scales8 + g)) any_nonfinite = true;
  pack_codes(codes, codes128);
  return any_nonfinite;
}

WriteCounts uq_write_kv(const std::uint16_t* k, const std::uint16_t* v, const std::int64_t* slots,
                        std::int64_t T, int Hk, std::uint8_t* cache, std::int64_t num_blocks,
                        int block_size, int slot_bytes) {
  WriteCounts counts;
  const std::int64_t capacity = num_blocks * block_size;
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t slot = slots[t];
    if (slot < 0) continue;
    if (slot >= capacity) {
      ++counts.bad_slots;
      continue;
    }
    for (int h = 0; h < Hk; ++h) {
      std::uint8_t* dst = cache + (slot * Hk + h) * static_cast<std::int64_t>(slot_bytes);
      const std::int64_t row = (t * Hk + h) * kDim;
      if (uq_quantize_row(k + row, true, dst + kKCodes, dst + kKScales)) ++counts.nonfinite_rows;
      if (uq_quantize_row(v + row, false, dst + kVCodes, dst + kVScales)) ++counts.nonfinite_rows;
    }
  }
  return counts;
}

void uq_dequant_k(const std::uint8_t* slot, double* out256) {
  dequant_side(slot + kKCodes, slot + kKScales, out256);
}

void uq_dequant_v(const std::uint8_t* slot, double* out256) {
  dequant_side(slot + kVCodes, slot + kVScales, out256);
}

void uq_query_q8(const std::uint16_t* q256, bool q_rotated, double* out256) {
  const auto& bf16 = bf16_table();
  float r[kDim];
  for (int i = 0; i < kDim; ++i) r[i] = bf16[q256[i]];
  if (!q_rotated) wht256_fp32(r, r);
  for (int i = 0; i < kDim; ++i) out256[i] = e4m3_value(e4m3_round(r[i]));
}

}  // namespace uqref
