// The writers' code functions (uq/impl/writer_codes.hpp: the multiply-add search and the
// code table of the GPUs, the integer count of the hosts) against the definitional comparisons of the spec (ultraquant::fp4_code_ties_down,
// nvfp4::e2m1_code_nearest_even): every float within 2^15 ulps of each threshold and of
// zero, both signs, plus random and extreme values; the fused-multiply-add quotient
// of the index writer against IEEE division for every E4M3 scale; and its branch-free
// group scale against the spec's.
#include "support/test_util.hpp"
#include "uq/impl/math.hpp"
#include "uq/impl/writer_codes.hpp"
#include "uq/nvfp4.hpp"
#include "uq/ultraquant.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using uq::codec::bits_float;
using uq::codec::float_bits;

// Every float whose bits are within `radius` of those of +-x (x > 0), and of +-0.
template <class F>
void around(float x, std::uint32_t radius, F&& f) {
  const std::uint32_t b = float_bits(x);
  for (std::uint32_t d = 0; d <= 2 * radius; ++d) {
    const std::uint32_t u = b - radius + d;
    f(bits_float(u));
    f(bits_float(u | 0x80000000u));
  }
}

constexpr std::uint32_t kRadius = 1u << 15;

TEST(WriterCodes, UltraQuantSearchMatchesMidpointCount) {
  long checked = 0, wrong = 0;
  auto check = [&](float y2) {
    ++checked;
    // y2 / 2 is exact unless y2 is subnormal, where both sides give code 0.
    const unsigned want = uq::ultraquant::fp4_code_ties_down(y2 * 0.5f);
    const unsigned search = uq::impl::codes::uq_code_search(y2), count = uq::impl::codes::uq_code_count(y2);
    if ((search != want || count != want) && ++wrong <= 10)
      ADD_FAILURE() << "y2 = " << y2 << " (bits 0x" << std::hex << float_bits(y2) << std::dec << "): search "
                    << search << ", count " << count << ", spec " << want;
  };
  for (float t : {0.5f, 1.5f, 2.5f, 3.5f, 5.0f, 7.0f, 10.0f}) around(t, kRadius, check);
  for (std::uint32_t u = 0; u <= kRadius; ++u) check(bits_float(u)), check(bits_float(u | 0x80000000u));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uni(-20.0f, 20.0f);
  for (int i = 0; i < 1 << 20; ++i) check(uni(rng));
  for (float y2 : {18.5f, 1e10f, 3.4e38f, 1e-30f, std::numeric_limits<float>::denorm_min()}) check(y2), check(-y2);
  EXPECT_EQ(wrong, 0) << "of " << checked;
}

// The GPU writer's table form: z = 2 y2 (exact here: y2 * 2 for every normal y2; the
// subnormals and the random values too), c = ceil(z) looked up in the 128-byte table.
// Checked on every float within 2^15 ulps of each midpoint and of zero (both signs),
// random values over the whole range |y2| <= 18.2 the scale rule allows (and a margin),
// and the saturated ends.
TEST(WriterCodes, UltraQuantTableMatchesMidpointCount) {
  std::uint8_t table[uq::impl::codes::kCodeTable];
  for (int s = 0; s < uq::impl::codes::kCodeTable; ++s) table[s] = uq::impl::codes::uq_code_table_entry(s);
  long checked = 0, wrong = 0;
  auto check = [&](float y2) {
    ++checked;
    const unsigned want = uq::ultraquant::fp4_code_ties_down(y2 * 0.5f);
    const unsigned got = uq::impl::codes::uq_code_from_table(table, y2 * 2.0f);
    if (got != want && ++wrong <= 10)
      ADD_FAILURE() << "y2 = " << y2 << " (bits 0x" << std::hex << float_bits(y2) << std::dec << "): table " << got
                    << ", spec " << want;
  };
  for (float t : {0.5f, 1.5f, 2.5f, 3.5f, 5.0f, 7.0f, 10.0f}) around(t, kRadius, check);
  for (std::uint32_t u = 0; u <= kRadius; ++u) check(bits_float(u)), check(bits_float(u | 0x80000000u));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uni(-31.5f, 31.5f);  // |c| <= 63: every slot's own c
  for (int i = 0; i < 1 << 20; ++i) check(uni(rng));
  for (float y2 : {18.2f, 20.0f, 31.5f, 1e-30f, std::numeric_limits<float>::denorm_min()}) check(y2), check(-y2);
  EXPECT_EQ(wrong, 0) << "of " << checked;
  // The bound that keeps c in the table's range (writer_codes.hpp): |y| = |x| / 2^e <= A / 2^e
  // for a group's absmax A, over every mantissa of a normal binade (the rule is scale
  // invariant there) and of the subnormal-s range.
  double worst = 0.0;
  for (std::uint32_t m = 0; m < (1u << 23); ++m)
    for (std::uint32_t expfield : {100u, 1u, 254u}) {  // A ~ 2^-27, ~ 2^-126 (s subnormal), ~ 2^127
      const float A = bits_float((expfield << 23) | m);
      const std::uint8_t b = uq::impl::codes::uq_scale_byte(A);
      if (b != 0) worst = std::max(worst, std::ldexp(static_cast<double>(A), 127 - b));
    }
  EXPECT_LE(4.0 * worst, 63.0) << "max |y| " << worst;
  EXPECT_LT(worst, 9.07) << "the comment's bound";
}

// The writer's item -> (token, head) split: DivideBy against integer division, for small,
// power-of-two, awkward and the largest divisors, at the ends of the range and at random.
TEST(WriterCodes, MultiplyShiftDivisionIsExact) {
  std::mt19937 rng(6);
  std::uniform_int_distribution<int> any(0, std::numeric_limits<int>::max());
  long wrong = 0;
  for (int d : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 255, 1000, 65535, 65537, (1 << 30) - 1, 1 << 30, (1 << 30) + 1,
                std::numeric_limits<int>::max()}) {
    const uq::impl::DivideBy div(d);
    auto check = [&](int n) {
      if (div(n) != n / d && ++wrong <= 10) ADD_FAILURE() << n << " / " << d << ": " << div(n) << ", want " << n / d;
    };
    const int max = std::numeric_limits<int>::max();
    for (int n : {0, 1, d - 1, d, max - 1, max}) check(n);
    for (int k : {1, 2, 3, 1000}) {
      const long long m = static_cast<long long>(k) * d;
      if (m <= max) check(static_cast<int>(m - 1)), check(static_cast<int>(m));
      if (m < max) check(static_cast<int>(m + 1));
    }
    for (int i = 0; i < 1 << 16; ++i) check(any(rng));
  }
  EXPECT_EQ(wrong, 0);
}

TEST(WriterCodes, Nvfp4SearchMatchesNearestEven) {
  long checked = 0, wrong = 0;
  auto check = [&](float y) {
    ++checked;
    const unsigned want = uq::nvfp4::e2m1_code_nearest_even(y);
    const unsigned search = uq::impl::codes::nv_code_search(y), count = uq::impl::codes::nv_code_count(y);
    if ((search != want || count != want) && ++wrong <= 10)
      ADD_FAILURE() << "y = " << y << " (bits 0x" << std::hex << float_bits(y) << std::dec << "): search " << search
                    << ", count " << count << ", spec " << want;
  };
  for (float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) around(t, kRadius, check);
  for (std::uint32_t u = 0; u <= kRadius; ++u) check(bits_float(u)), check(bits_float(u | 0x80000000u));
  // The device's packing of 16 codes into two words (nv_code_words16_search), on
  // groups of values around the thresholds.
  {
    std::vector<float> ys;
    for (float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) around(t, 64, [&](float y) { ys.push_back(y); });
    for (std::size_t g = 0; g + 16 <= ys.size(); g += 16) {
      std::uint32_t words[2];
      uq::impl::codes::nv_code_words16_search(&ys[g], words);
      for (int j = 0; j < 16; ++j) {
        const unsigned got = (words[j / 8] >> (4 * (j % 8))) & 15u, want = uq::nvfp4::e2m1_code_nearest_even(ys[g + j]);
        if (got != want && ++wrong <= 10) ADD_FAILURE() << "packed y = " << ys[g + j] << ": " << got << ", spec " << want;
      }
    }
  }
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> uni(-8.0f, 8.0f);
  for (int i = 0; i < 1 << 20; ++i) check(uni(rng));
  const float inf = std::numeric_limits<float>::infinity();
  for (float y : {6.0f, 7.5f, 1e10f, 3.4e38f, inf, 1e-30f}) check(y), check(-y);
  EXPECT_EQ(wrong, 0) << "of " << checked;
}

// The index writer's GPU codes from x and its group's thresholds (nv_code_of_x, no
// quotient) against the spec's code of the rounded quotient fl32(x / s), for every scale
// byte the writer produces (1..0x7e): every float within 2^12 ulps of each s x T, both
// signs, the packing into words, random values and the extremes.
TEST(WriterCodes, Nvfp4CodesOfXMatchTheRoundedQuotient) {
  long checked = 0, wrong = 0;
  std::mt19937 rng(6);
  for (unsigned byte = 1; byte <= 0x7eu; ++byte) {
    const float s = uq::codec::e4m3_to_float(static_cast<std::uint8_t>(byte));
    const uq::impl::codes::NvThresholds th = uq::impl::codes::nv_thresholds(s);
    auto check = [&](float x) {
      ++checked;
      const unsigned want = uq::nvfp4::e2m1_code_nearest_even(x / s), got = uq::impl::codes::nv_code_of_x(x, th);
      if (got != want && ++wrong <= 10)
        ADD_FAILURE() << "s = " << s << " (byte 0x" << std::hex << byte << "), x = " << x << " (bits 0x" << float_bits(x)
                      << std::dec << "): " << got << ", spec " << want;
    };
    std::vector<float> xs;
    for (float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f})
      around(t * s, 1u << 12, [&](float x) { check(x), xs.push_back(x); });
    for (float x : {0.0f, 1e-45f, 1e-38f, 6.0f * s, 7.0f * s, 1e10f, 3.38e38f, std::numeric_limits<float>::max()})
      check(x), check(-x);
    std::uniform_real_distribution<float> uni(-8.0f * s, 8.0f * s);
    for (int i = 0; i < 4096; ++i) check(uni(rng));
    for (std::size_t g = 0; g + 16 <= xs.size(); g += 16 * 97) {
      std::uint32_t words[2];
      uq::impl::codes::nv_code_words16_of_x(&xs[g], th, words);
      for (int j = 0; j < 16; ++j) {
        const unsigned got = (words[j / 8] >> (4 * (j % 8))) & 15u;
        const unsigned want = uq::nvfp4::e2m1_code_nearest_even(xs[g + j] / s);
        if (got != want && ++wrong <= 10) ADD_FAILURE() << "packed x = " << xs[g + j] << ", s = " << s << ": " << got;
      }
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << checked;
}

// uq_scale_byte (integer steps) against ultraquant::scale_byte_for_absmax (double
// arithmetic): every float A of the binades where s = A * 0.156 crosses into the
// normal range, the smallest and largest bf16-reachable ones and binade 2^0, plus
// every float within 2^12 ulps of each A whose s sits on a half-octave boundary.
TEST(WriterCodes, IntegerScaleByteMatchesTheSpec) {
  long checked = 0, wrong = 0;
  auto check = [&](float A) {
    ++checked;
    const unsigned want = uq::ultraquant::scale_byte_for_absmax(A), got = uq::impl::codes::uq_scale_byte(A);
    if (got != want && ++wrong <= 10)
      ADD_FAILURE() << "A = " << A << " (bits 0x" << std::hex << float_bits(A) << std::dec << "): got " << got
                    << ", spec " << want;
  };
  for (std::uint32_t expfield : {0u, 1u, 2u, 3u, 4u, 127u, 250u, 253u})
    for (std::uint32_t m = 0; m < (1u << 23); ++m) check(bits_float((expfield << 23) | m));
  for (int e = -149; e < 128; ++e) {
    const float boundary = static_cast<float>(std::ldexp(1.0, e) * std::sqrt(2.0) / 0.156);
    if (std::isfinite(boundary) && boundary > 0.0f) around(boundary, 1u << 12, [&](float A) { if (A > 0) check(A); });
  }
  check(0.0f), check(-0.0f), check(std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(wrong, 0) << "of " << checked;
}

// quotient_fma is what the device index writer uses for fl32(x / s): for every positive
// finite E4M3 scale s, x on and around every code boundary times s, and random x.
TEST(WriterCodes, FmaQuotientIsCorrectlyRounded) {
  long checked = 0, wrong = 0;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (unsigned byte = 1; byte < 0x7f; ++byte) {
    const float s = uq::codec::e4m3_to_float(static_cast<std::uint8_t>(byte));
    const float r = 1.0f / s;
    auto check = [&](float x) {
      ++checked;
      const float want = x / s;
      const float got = uq::impl::codes::quotient_fma(x, s, r);
      if (float_bits(got) != float_bits(want) && ++wrong <= 10)
        ADD_FAILURE() << "x = " << x << ", s = " << s << ": got " << got << ", x / s = " << want;
    };
    for (float m : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f}) around(m * s, 1u << 10, check);
    for (int i = 0; i < 4096; ++i) check(uni(rng) * 6.5f * s);
  }
  EXPECT_EQ(wrong, 0) << "of " << checked;
}

// The index writer's branch-free group scale (codes::nv_scale_byte, and the float of a
// byte) against the spec's nvfp4::scale_byte_for_absmax and codec::e4m3_to_float: every
// byte; every float A of the binades where A / 6 rounds to 0, crosses the subnormal
// E4M3 range into the normal one, lies inside it, and saturates at 448; every A within
// 2^12 ulps of 6 times each rounding midpoint (and each value) of E4M3; random A.
std::vector<float> index_scale_boundaries() {
  std::vector<float> out;
  for (unsigned b = 0; b < 0x7e; ++b) {
    const double lo = uq::codec::e4m3_to_float(static_cast<std::uint8_t>(b));
    const double hi = uq::codec::e4m3_to_float(static_cast<std::uint8_t>(b + 1));
    for (double f : {lo, 0.5 * (lo + hi)})
      if (f > 0) around(static_cast<float>(6.0 * f), 1u << 12, [&](float A) { if (A >= 0) out.push_back(A); });
  }
  around(6.0f * 448.0f, 1u << 12, [&](float A) { if (A >= 0) out.push_back(A); });
  around(6.0f * 464.0f, 1u << 12, [&](float A) { if (A >= 0) out.push_back(A); });
  return out;
}

TEST(WriterCodes, BranchFreeIndexScaleMatchesTheSpec) {
  for (unsigned b = 0; b <= 0x7e; ++b) {
    const auto byte = static_cast<std::uint8_t>(b);
    EXPECT_EQ(float_bits(uq::impl::codes::e4m3_nonnegative_to_float(byte)), float_bits(uq::codec::e4m3_to_float(byte)))
        << "byte " << b;
  }
  long checked = 0, wrong = 0;
  auto check = [&](float A) {
    ++checked;
    const unsigned want = uq::nvfp4::scale_byte_for_absmax(A), got = uq::impl::codes::nv_scale_byte(A);
    if (got != want && ++wrong <= 10)
      ADD_FAILURE() << "A = " << A << " (bits 0x" << std::hex << float_bits(A) << std::dec << "): got " << got
                    << ", spec " << want;
  };
  // A / 6 in [2^-10.6, 2^-9.6) (the step from 0 to 2^-9), [2^-7.6, 2^-6.6) and [2^-6.6,
  // 2^-5.6) (E4M3 subnormals and the step into the normals), [2^-2.6, 2^-1.6), and
  // [2^8.4, 2^9.4) (the saturation at 448)
  for (std::uint32_t expfield : {127u - 8u, 127u - 5u, 127u - 4u, 127u, 127u + 11u})
    for (std::uint32_t m = 0; m < (1u << 23); ++m) check(bits_float((expfield << 23) | m));
  for (float A : index_scale_boundaries()) check(A);
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> finite_bits(0, 0x7f7fffffu);
  for (int i = 0; i < 1 << 20; ++i) check(bits_float(finite_bits(rng)));
  for (float A : {0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max()})
    check(A);
  EXPECT_EQ(wrong, 0) << "of " << checked;
}

// A free function: a device lambda may not live in a test body (a private member).
template <class F, class U>
void run_kernel_forms(const F& dy, const F& dqx, const F& dqs, const U& uq_codes, const U& uq_table_codes,
                      const U& nv_codes, const F& quot, const U& nv_x_codes, const F& dA, const U& scales) {
  uqtest::DeviceView<std::uint8_t*> table("table", uq::impl::codes::kCodeTable);
  Kokkos::parallel_for(
      "test::table", Kokkos::RangePolicy<uqtest::Exec>(0, uq::impl::codes::kCodeTable),
      KOKKOS_LAMBDA(const int s) { table(s) = uq::impl::codes::uq_code_table_entry(s); });
  Kokkos::parallel_for(
      "test::scales", Kokkos::RangePolicy<uqtest::Exec>(0, static_cast<int>(dA.extent(0))),
      KOKKOS_LAMBDA(const int i) { scales(i) = uq::impl::codes::nv_scale_byte(dA(i)); });
  Kokkos::parallel_for(
      "test::codes", Kokkos::RangePolicy<uqtest::Exec>(0, static_cast<int>(dy.extent(0))), KOKKOS_LAMBDA(const int i) {
        uq_codes(i) = uq::impl::codes::uq_code_of_twice_y(dy(i));
        uq_table_codes(i) = uq::impl::codes::uq_code_from_table(table.data(), dy(i) * 2.0f);
        nv_codes(i) = uq::impl::codes::nv_code(dy(i));
      });
  Kokkos::parallel_for(
      "test::quotients", Kokkos::RangePolicy<uqtest::Exec>(0, static_cast<int>(dqx.extent(0))),
      KOKKOS_LAMBDA(const int i) {
        quot(i) = uq::impl::codes::quotient(dqx(i), dqs(i), 1.0f / dqs(i));
        nv_x_codes(i) = uq::impl::codes::nv_code_of_x(dqx(i), uq::impl::codes::nv_thresholds(dqs(i)));
      });
}

// The functions as the writers' kernels compile them for this build's execution space
// (on a GPU: the multiply-add search with saturation, the code table of the 16-lane
// writer and the fused-multiply-add quotient; on a host: the counts, the table and the
// division), on the same inputs.
TEST(WriterCodes, KernelFormsMatchTheSpec) {
  std::vector<float> ys;
  auto add = [&](float y) { ys.push_back(y); };
  for (float t : {0.25f, 0.5f, 0.75f, 1.25f, 1.5f, 1.75f, 2.5f, 3.5f, 5.0f, 7.0f, 10.0f}) around(t, 1u << 12, add);
  for (std::uint32_t u = 0; u <= 1u << 12; ++u) add(bits_float(u)), add(bits_float(u | 0x80000000u));
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> uni(-20.0f, 20.0f);
  for (int i = 0; i < 1 << 18; ++i) add(uni(rng));
  // quotient inputs: x around m * s for a few scales (s, 1/s) and every midpoint
  std::vector<float> qx, qs;
  for (unsigned byte : {0x01u, 0x07u, 0x08u, 0x31u, 0x3fu, 0x41u, 0x5bu, 0x7eu}) {
    const float s = uq::codec::e4m3_to_float(static_cast<std::uint8_t>(byte));
    for (float m : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f})
      around(m * s, 1u << 8, [&](float x) { qx.push_back(x), qs.push_back(s); });
  }
  const int n = static_cast<int>(ys.size()), nq = static_cast<int>(qx.size());
  auto dy = uqtest::to_device(ys, "y", n);
  auto dqx = uqtest::to_device(qx, "qx", nq);
  auto dqs = uqtest::to_device(qs, "qs", nq);
  uqtest::DeviceView<unsigned*> uq_codes("uq", n), uq_table_codes("uq_table", n), nv_codes("nv", n);
  uqtest::DeviceView<float*> quot("quot", nq);
  uqtest::DeviceView<unsigned*> nv_x_codes("nv_x", nq);
  const std::vector<float> As = index_scale_boundaries();
  const int na = static_cast<int>(As.size());
  auto dA = uqtest::to_device(As, "A", na);
  uqtest::DeviceView<unsigned*> scales("scales", na);
  run_kernel_forms(dy, dqx, dqs, uq_codes, uq_table_codes, nv_codes, quot, nv_x_codes, dA, scales);
  const auto hs = uqtest::to_host(scales);
  const auto hu = uqtest::to_host(uq_codes), ht = uqtest::to_host(uq_table_codes), hn = uqtest::to_host(nv_codes);
  const auto hq = uqtest::to_host(quot);
  const auto hx = uqtest::to_host(nv_x_codes);
  long wrong = 0;
  for (int i = 0; i < n; ++i) {
    const unsigned want_uq = uq::ultraquant::fp4_code_ties_down(ys[i] * 0.5f);
    const unsigned want_nv = uq::nvfp4::e2m1_code_nearest_even(ys[i]);
    if ((hu[i] != want_uq || ht[i] != want_uq || hn[i] != want_nv) && ++wrong <= 10)
      ADD_FAILURE() << "y = " << ys[i] << ": uq " << hu[i] << ", uq table " << ht[i] << " (spec " << want_uq
                    << "), nv " << hn[i] << " (spec " << want_nv << ")";
  }
  for (int i = 0; i < nq; ++i)
    if (float_bits(hq[i]) != float_bits(qx[i] / qs[i]) && ++wrong <= 10)
      ADD_FAILURE() << "x = " << qx[i] << ", s = " << qs[i] << ": quotient " << hq[i] << ", x / s " << qx[i] / qs[i];
  for (int i = 0; i < nq; ++i)
    if (hx[i] != uq::nvfp4::e2m1_code_nearest_even(qx[i] / qs[i]) && ++wrong <= 10)
      ADD_FAILURE() << "x = " << qx[i] << ", s = " << qs[i] << ": code of x " << hx[i] << ", spec "
                    << uq::nvfp4::e2m1_code_nearest_even(qx[i] / qs[i]);
  for (int i = 0; i < na; ++i)
    if (hs[i] != uq::nvfp4::scale_byte_for_absmax(As[i]) && ++wrong <= 10)
      ADD_FAILURE() << "A = " << As[i] << ": scale byte " << hs[i] << ", spec "
                    << unsigned(uq::nvfp4::scale_byte_for_absmax(As[i]));
  EXPECT_EQ(wrong, 0);
}

}  // namespace
