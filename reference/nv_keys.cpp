// NVFP4 index keys (nvfp4-index.md §2, §3): the writer, the dequantised key and the LUT.
#include "uqref_formats.hpp"
#include "uqref_nvfp4.hpp"

#include <array>
#include <cmath>

namespace uqref {
namespace {

constexpr int kDim = 128;
constexpr int kGroup = 16;
constexpr int kGroups = kDim / kGroup;
constexpr int kTokens = 128;
constexpr std::int64_t kPageBytes = 9216;
constexpr int kScalesOffset = 8192;

// k̂ for a scale byte and a code: e4m3(E2M1(code) * scale), the product exact in double.
double dequant_value(std::uint8_t scale_byte, unsigned code) {
  const double scale = e4m3_value(scale_byte);
  if (std::isnan(scale)) return scale;
  return e4m3_value(e4m3_round(e2m1_value(code) * scale));
}

// All 256 x 16 values of dequant_value, computed once: the scorer dequantises every
// element of 10^5..10^6 tokens.
const std::array<std::array<double, 16>, 256>& dequant_table() {
  static const std::array<std::array<double, 16>, 256> t = [] {
    std::array<std::array<double, 16>, 256> v{};
    for (unsigned b = 0; b < 256; ++b)
      for (unsigned c = 0; c < 16; ++c) v[b][c] = dequant_value(static_cast<std::uint8_t>(b), c);
    return v;
  }();
  return t;
}

// Writes one token's 64 code bytes and 8 scale bytes. Returns false when a group held a
// non-finite value (that group is written as zero).
bool write_token(const float* x, std::uint8_t* page, int t) {
  bool all_finite = true;
  unsigned codes[kDim];
  for (int g = 0; g < kGroups; ++g) {
    const float* xg = x + g * kGroup;
    unsigned* cg = codes + g * kGroup;
    std::uint8_t scale_byte = 0;
    for (int i = 0; i < kGroup; ++i) cg[i] = 0;
    bool finite = true;
    float A = 0.0f;
    for (int i = 0; i < kGroup; ++i) {
      if (!std::isfinite(xg[i])) finite = false;
      else A = std::fmax(A, std::fabs(xg[i]));
    }
    if (!finite) {
      all_finite = false;
    } else {
      const float six = 6.0f;
      scale_byte = e4m3_round(A / six);  // fp32 division, then E4M3 RNE
      const double s = e4m3_value(scale_byte);
      if (s != 0.0) {
        const float sf = static_cast<float>(s);  // E4M3 values are floats
        for (int i = 0; i < kGroup; ++i) cg[i] = nv_fp4_code(xg[i] / sf);  // fp32 division
      }
    }
    page[kScalesOffset + t * kGroups + g] = scale_byte;
  }
  for (int j = 0; j < kDim / 2; ++j)
    page[t * (kDim / 2) + j] = static_cast<std::uint8_t>(codes[2 * j] | (codes[2 * j + 1] << 4));
  return all_finite;
}

}  // namespace

unsigned nv_fp4_code(float y) {
  static const std::array<double, 8> magnitude = [] {
    std::array<double, 8> m{};
    for (unsigned c = 0; c < 8; ++c) m[c] = e2m1_value(c);
    return m;
  }();
  const double a = std::fabs(static_cast<double>(y));
  // Beyond the midpoint 5 every value saturates to 6 (code 7). Checked first: for huge a
  // the distances below all round to the same double and would look like ties.
  if (a > 5.0) return (y < 0.0f) ? (7u | 8u) : 7u;
  unsigned best = 0;
  double best_dist = a;  // distance to magnitude 0 (code 0)
  for (unsigned c = 1; c < 8; ++c) {
    const double dist = std::fabs(a - magnitude[c]);
    // Strictly closer wins; an equal distance goes to the even code. Candidates come in
    // increasing order, so at a tie `best` is the lower neighbour and c the upper one.
    if (dist < best_dist || (dist == best_dist && c % 2 == 0)) {
      best = c;
      best_dist = dist;
    }
  }
  if (best == 0) return 0;  // zero magnitude is always code 0, never -0 (8)
  return (y < 0.0f) ? (best | 8u) : best;
}

WriteCounts nv_write_index_keys(const float* keys, const std::int64_t* slots, std::int64_t T,
                                std::uint8_t* cache, std::int64_t num_blocks) {
  WriteCounts counts;
  for (std::int64_t n = 0; n < T; ++n) {
    const std::int64_t slot = slots[n];
    if (slot < 0) continue;
    if (slot >= num_blocks * kTokens) {
      ++counts.bad_slots;
      continue;
    }
    std::uint8_t* page = cache + (slot / kTokens) * kPageBytes;
    if (!write_token(keys + n * kDim, page, static_cast<int>(slot % kTokens))) ++counts.nonfinite_rows;
  }
  return counts;
}

double nv_dequant(const std::uint8_t* page, int t, int d) {
  const std::uint8_t byte = page[t * (kDim / 2) + d / 2];
  const unsigned code = (d % 2 == 0) ? (byte & 0xFu) : (byte >> 4);
  const std::uint8_t scale_byte = page[kScalesOffset + t * kGroups + d / kGroup];
  return dequant_table()[scale_byte][code];
}

std::uint64_t nv_lut_entry(std::uint8_t scale_byte) {
  const double scale = e4m3_value(scale_byte);
  std::uint64_t entry = 0;
  for (unsigned i = 0; i < 8; ++i) {
    const std::uint8_t b = std::isnan(scale) ? 0x7F : e4m3_round(e2m1_value(i) * scale);
    entry |= static_cast<std::uint64_t>(b) << (8 * i);
  }
  return entry;
}

}  // namespace uqref
