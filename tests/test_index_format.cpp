// The NVFP4 index format (uq/nvfp4.hpp): the e4m3(E2M1 x scale) table against the
// spec's golden rows and the float64 reference, element dequantisation, the writer's
// scalar steps, and the spec's worked example (nvfp4-index-sources.md §5.6) end to end.
#include "test_index_common.hpp"
#include "uq/nvfp4.hpp"
#include "uq/score.hpp"
#include "uq/impl/score_table.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

using namespace uqtest;
using namespace uqtest::index;

TEST(IndexFormat, LayoutConstants) {
  EXPECT_EQ(uq::nvfp4::kPageCodes, 8192);
  EXPECT_EQ(uq::nvfp4::kPageBytes, 9216);
  EXPECT_EQ(uq::nvfp4::code_offset(0, 0), 0);
  EXPECT_EQ(uq::nvfp4::code_offset(1, 3), 65);
  EXPECT_EQ(uq::nvfp4::code_offset(127, 127), 127 * 64 + 63);
  EXPECT_EQ(uq::nvfp4::scale_offset(0, 0), 8192);
  EXPECT_EQ(uq::nvfp4::scale_offset(127, 7), 9215);
}

// nvfp4-index-sources.md §4.2, computed there with an exact-rational encoder.
TEST(IndexFormat, TableMatchesGoldenRows) {
  const struct {
    std::uint8_t scale;
    std::uint64_t entry;
  } golden[] = {
      {0x00, 0x0000000000000000ull}, {0x01, 0x0604030202010000ull}, {0x08, 0x1C1814100C080400ull},
      {0x30, 0x44403C3834302800ull}, {0x31, 0x46413E3936312900ull}, {0x38, 0x4C4844403C383000ull},
      {0x39, 0x4E4946413E393100ull}, {0x3C, 0x514C4944413C3400ull}, {0x40, 0x54504C4844403800ull},
      {0x70, 0x7E7E7C7874706800ull}, {0x76, 0x7E7E7E7E7A766E00ull}, {0x7E, 0x7E7E7E7E7E7E7600ull},
  };
  for (const auto& g : golden)
    EXPECT_EQ(uq::nvfp4::table_entry(g.scale), g.entry) << "scale byte 0x" << std::hex << int(g.scale);
}

// Every in-contract scale byte (0..0x7e) and the NaN ones against the reference; the
// negative ones (never written) follow the documented literal rule: the positive row
// with the sign bit set.
TEST(IndexFormat, TableMatchesReferenceForEveryScaleByte) {
  for (int s = 0; s < 256; ++s) {
    const std::uint8_t sb = static_cast<std::uint8_t>(s);
    if (s < 0x80 || s == 0xff) {
      EXPECT_EQ(uq::nvfp4::table_entry(sb), uqref::nv_lut_entry(sb)) << "scale byte 0x" << std::hex << s;
    } else {
      for (unsigned i = 0; i < 8; ++i)
        EXPECT_EQ(uq::nvfp4::table_byte(sb, i), uq::nvfp4::table_byte(sb & 0x7f, i) | 0x80)
            << "scale byte 0x" << std::hex << s << " magnitude " << i;
    }
  }
  EXPECT_EQ(uq::nvfp4::table_entry(0x7f), 0x7f7f7f7f7f7f7f7full);
  EXPECT_EQ(uq::nvfp4::table_entry(0xff), 0x7f7f7f7f7f7f7f7full);
}

// The device-filled table (the one the scorer uses) equals the generator, byte for byte.
TEST(IndexFormat, DeviceTableMatchesGenerator) {
  uq::impl::DequantTable<Exec> table{Exec()};
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), table.view());
  for (int i = 0; i < uq::nvfp4::kTableEntries; ++i)
    ASSERT_EQ(host(i), uq::nvfp4::table_byte(static_cast<std::uint8_t>(i / 8), i % 8)) << i;
}

// Every (code, scale byte) pair: k̂ = e4m3(E2M1 x scale) against the reference's
// dequantisation of a page holding that pair (NaN scales give NaN).
TEST(IndexFormat, DequantEveryCodeAndScale) {
  std::vector<std::uint8_t> page(kPage, 0);
  for (int s = 0; s < 256; ++s)
    for (unsigned code = 0; code < 16; ++code) {
      page[0] = static_cast<std::uint8_t>(code);  // token 0, dim 0 (low nibble)
      page[8192] = static_cast<std::uint8_t>(s);
      const double ref = uqref::nv_dequant(page.data(), 0, 0);
      const float got = uq::nvfp4::dequant(code, static_cast<std::uint8_t>(s));
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(got)) << "code " << code << " scale 0x" << std::hex << s;
      } else if (s < 0x80) {
        EXPECT_EQ(static_cast<double>(got), ref) << "code " << code << " scale 0x" << std::hex << s;
      }
    }
  // The re-rounding is part of the semantics: 6 x 1.125 = 6.75 -> 7, 1.5 x 1.125 -> 1.75.
  EXPECT_EQ(uq::nvfp4::dequant(7, 0x39), 7.0f);
  EXPECT_EQ(uq::nvfp4::dequant(15, 0x39), -7.0f);
  EXPECT_EQ(uq::nvfp4::dequant(3, 0x39), 1.75f);
  // Saturation: 6 x 448 -> 448; subnormal ties: 0.5 x 2^-9 -> 0, 1.5 x 2^-9 -> 2^-8.
  EXPECT_EQ(uq::nvfp4::dequant(7, 0x7e), 448.0f);
  EXPECT_EQ(uq::nvfp4::dequant(1, 0x01), 0.0f);
  EXPECT_EQ(uq::nvfp4::dequant(3, 0x01), std::ldexp(1.0f, -8));
}

// The two factors (nvfp4.hpp: k̂ = A * weight_a + B * weight_b with A = k̂(+1), B = k̂(+1.5)),
// which the generic scorer uses for the scale bytes where they hold, against the reference's
// k̂: they hold for every scale value in [2^-5, 72] (0.5 s stays normal; 6 s and 4 e4m3(1.5 s)
// stay below E4M3's 448 without saturating; 0x10 = 2^-5 .. 0x69 = 72), which covers what a
// writer stores for |key| group maxima from 0.19 to 432; and they fail where that is not so
// (the smallest scales, the largest, NaN), so a scorer must check, as it does.
TEST(IndexFormat, TwoFactorsEqualTheTableInsideTheirRange) {
  std::vector<std::uint8_t> page(kPage, 0);
  int holds = 0;
  bool holds_at[256];
  for (int s = 0; s < 256; ++s) {
    const auto sb = static_cast<std::uint8_t>(s);
    const float a = uq::nvfp4::dequant(2, sb), b = uq::nvfp4::dequant(3, sb);
    bool all = true;
    for (unsigned code = 0; code < 16; ++code) {
      page[0] = static_cast<std::uint8_t>(code);
      page[8192] = sb;
      const double ref = uqref::nv_dequant(page.data(), 0, 0);
      const float two = a * uq::nvfp4::code_weight_a(code) + b * uq::nvfp4::code_weight_b(code);
      all = all && static_cast<double>(two) == ref;
    }
    const bool inside = s >= 0x10 && s <= 0x69;
    if (inside) EXPECT_TRUE(all) << "scale byte 0x" << std::hex << s;
    holds += all;
    holds_at[s] = all;
  }
  EXPECT_FALSE(holds == 256) << "the check would be vacuous";
  for (int s : {0x00, 0x01, 0x07, 0x6a, 0x7e, 0x7f, 0xff})  // zero, odd subnormals, above 72, NaN
    EXPECT_EQ(holds_at[s], s == 0x00) << "scale byte 0x" << std::hex << s;  // s = 0: every k̂ is 0
  // The weights: a power of two on exactly one side, the code's sign on it.
  EXPECT_EQ(uq::nvfp4::code_weight_a(1), 0.5f);
  EXPECT_EQ(uq::nvfp4::code_weight_b(7), 4.0f);
  EXPECT_EQ(uq::nvfp4::code_weight_a(7), 0.0f);
  EXPECT_EQ(uq::nvfp4::code_weight_b(13), -2.0f);
  EXPECT_EQ(uq::nvfp4::code_weight_a(14), -4.0f);
}

// The writer's code choice against the reference over a dense sweep of y = x / s:
// every float in [-8, 8] with the low 11 mantissa bits stepped, plus every tie point
// and its neighbours.
TEST(IndexFormat, WriterCodeMatchesReference) {
  auto check = [](float y) {
    ASSERT_EQ(uq::nvfp4::e2m1_code_nearest_even(y), uqref::nv_fp4_code(y)) << "y = " << y;
  };
  for (std::uint32_t u = 0; u < 0x41000000u; u += 0x7ffu) {  // 0 .. 8 and the negatives
    float y;
    std::memcpy(&y, &u, sizeof y);
    check(y);
    check(-y);
  }
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 0.0f};
  for (float t : ties)
    for (float v : {t, std::nextafter(t, 0.0f), std::nextafter(t, 100.0f)}) {
      check(v);
      check(-v);
    }
  // Ties go to the even code; zero is never -0; saturation.
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(0.25f), 0u);
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(-0.25f), 0u);
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(0.75f), 2u);
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(-1.25f), 10u);
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(1.75f), 4u);
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(2.5f), 4u);
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(3.5f), 6u);
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(5.0f), 6u);
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(-5.0001f), 15u);
  EXPECT_EQ(uq::nvfp4::e2m1_code_nearest_even(1e30f), 7u);
  EXPECT_EQ(uq::nvfp4::scale_byte_for_absmax(6.0f * 448.0f * 4.0f), 0x7e);  // saturates
  EXPECT_EQ(uq::nvfp4::scale_byte_for_absmax(6.0f), 0x38);                 // 1.0
  EXPECT_EQ(uq::nvfp4::scale_byte_for_absmax(0.0f), 0x00);
}

// nvfp4-index-sources.md §5.6: one request, QL = 2, H = 1, init = 0, local = 1,
// seq_len 129, block table [5, 9]; page 5 token 0 holds codes 0x21 0x9f and scale
// 0x39 (1.125) for group 0; q = -1.0 on dims 0..15 for both rows.
TEST(IndexFormat, WorkedExampleEndToEnd) {
  std::vector<std::uint8_t> cache(10 * kPage, 0);
  cache[5 * kPage + 0] = 0x21;
  cache[5 * kPage + 1] = 0x9f;
  cache[5 * kPage + 8192] = 0x39;
  std::vector<std::uint8_t> q(2 * kD, 0);
  for (int r = 0; r < 2; ++r)
    for (int d = 0; d < 16; ++d) q[r * kD + d] = 0xb8;  // -1.0
  auto dq = to_device(q, "q", 2, 1, kD);
  auto dcache = to_device(cache, "cache", 10, kPage);
  auto dtables = to_device(std::vector<std::int32_t>{5, 9}, "bt", 1, 2);
  auto dlens = to_device(std::vector<std::int32_t>{129}, "sl", 1);
  const std::int64_t S = 4;
  Kokkos::View<float***, Kokkos::LayoutRight, Mem> scores("scores", 1, 2, S);
  Kokkos::deep_copy(scores, poison_value());

  for (int init = 0; init <= 1; ++init) {
    uq::ScoreConfig cfg;
    cfg.query_len = 2;
    cfg.init_blocks = init;
    cfg.local_blocks = 1;
    uq::score(Exec(), dq, dcache, dtables, dlens, scores, cfg);
    const std::vector<float> got = to_host(scores);
    const float inf = std::numeric_limits<float>::infinity();
    // row 0: block 0 local (or init), block 1 entirely in its future.
    EXPECT_EQ(got[0], init ? 1e30f : 1e29f);
    EXPECT_EQ(got[1], -inf);
    // row 1: block 0 computed = 5.875 (5.625 without the E4M3 re-rounding), block 1 local.
    EXPECT_EQ(got[S + 0], init ? 1e30f : 5.875f);
    EXPECT_EQ(got[S + 1], 1e29f);
    for (int row = 0; row < 2; ++row)
      for (int b = 2; b < S; ++b) EXPECT_EQ(bits_of(got[row * S + b]), kPoisonBits) << row << " " << b;
  }
}

}  // namespace
