// The library's one-thread WHT (uq::wht256_rows, the host decode path's) against the reference
// transform (reference/: fp32 in the order of spec ultraquant.md §3): the spec fixes the
// arithmetic and its order, so the values must be bit-identical, not merely close.
#include "uq/wht.hpp"
#include "uqref_ultraquant.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

TEST(Wht, RowsMatchTheReferenceBitForBit) {
  // Three rows of values spread over many binades (sums round at every stage), signs mixed.
  constexpr int kRows = 3;
  std::vector<float> x(kRows * uq::kHeadDim);
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (auto& v : x) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int exponent = static_cast<int>((state >> 40) % 40) - 20;
    const float mantissa = 1.0f + static_cast<float>((state >> 16) & 0xFFFFFF) / 16777216.0f;
    v = ((state >> 63) ? -1.0f : 1.0f) * std::ldexp(mantissa, exponent);
  }
  std::vector<float> want(x.size());
  for (int r = 0; r < kRows; ++r) uqref::wht256_fp32(x.data() + r * uq::kHeadDim, want.data() + r * uq::kHeadDim);
  uq::wht256_rows(x.data(), kRows);
  int mismatches = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (bits_of(x[i]) != bits_of(want[i]) && mismatches++ < 5)
      ADD_FAILURE() << "element " << i << ": " << x[i] << " vs reference " << want[i];
  EXPECT_EQ(mismatches, 0);
}

TEST(Wht, RowsKeepTheSpecOrder) {
  // x = (1, 2^-24, 0, 2^-24, 0, ...): the spec's order (stride 1 first) gives out[0] = 1/16; the
  // reversed order would give (1 + 2^-23) / 16 (test_reference.cpp pins the reference the same way).
  float x[uq::kHeadDim] = {};
  x[0] = 1.0f;
  x[1] = std::ldexp(1.0f, -24);
  x[3] = std::ldexp(1.0f, -24);
  uq::wht256_rows(x, 1);
  EXPECT_EQ(x[0], 0.0625f);
}

}  // namespace
