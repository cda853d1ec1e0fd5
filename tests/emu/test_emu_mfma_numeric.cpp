// MFMA numerics in the emulator against a float64 dot product with block scales (spec §1.5,
// §1.6, §2): every A/B format pair, E8M0 specials (0 = 2^-127, 255 = NaN), NaN/Inf inputs,
// overflow, the unscaled variant, and the bf16 MFMAs.
//
// Tolerance (random data): the emulator computes every product exactly in double (at most
// 4 + 4 significant bits each), sums each 32-term block and then C plus 4 scaled blocks in
// double (36 roundings of at most 2^-53 of the running magnitude, bounded by the sum of the
// absolute terms S), and rounds once to fp32 (half an ulp). The reference does the same
// sums in another order, in double. So |emulated - reference| <= ulp32/2 + 2 * 36 * 2^-53 * S.
// The hardware's own order is unknown (spec §1.6); an exact-data test below pins the result
// bitwise where every partial sum is representable.
#include <array>

#include "emu_test_support.hpp"

namespace emu_test {
namespace {

struct Problem {
  int fa = kFp8, fb = kFp8;
  std::array<std::array<unsigned, 128>, 16> a{};  // codes, A[m][k]
  std::array<std::array<unsigned, 16>, 128> b{};  // codes, B[k][n]
  std::array<std::array<unsigned, 16>, 4> ea{};   // E8M0 of A row m, block kb: ea[kb][m]
  std::array<std::array<unsigned, 16>, 4> eb{};   // E8M0 of B column n, block kb: eb[kb][n]
  std::array<std::array<float, 16>, 16> c{};
};

using D16 = std::array<std::array<float, 16>, 16>;

bool is_special(int format, unsigned code) {
  const double v = format_value(format, code);
  return !std::isfinite(v);
}

unsigned random_code(int format) {
  std::uniform_int_distribution<unsigned> pick(0, (1u << format_bits(format)) - 1);
  for (;;) {
    const unsigned c = pick(rng());
    if (!is_special(format, c)) return c;
  }
}

Problem random_problem(int fa, int fb, unsigned e_lo, unsigned e_hi) {
  Problem p;
  p.fa = fa;
  p.fb = fb;
  std::uniform_int_distribution<unsigned> e(e_lo, e_hi);
  std::uniform_real_distribution<float> c(-100.0f, 100.0f);
  for (int m = 0; m < 16; ++m) {
    for (int k = 0; k < 128; ++k) p.a[m][k] = random_code(fa);
  }
  for (int k = 0; k < 128; ++k) {
    for (int n = 0; n < 16; ++n) p.b[k][n] = random_code(fb);
  }
  for (int kb = 0; kb < 4; ++kb) {
    for (int i = 0; i < 16; ++i) {
      p.ea[kb][i] = e(rng());
      p.eb[kb][i] = e(rng());
    }
  }
  for (auto& row : p.c) {
    for (float& x : row) x = c(rng());
  }
  return p;
}

struct Reference {
  D16 d;
  D16 magnitude;  // sum of |terms| (for the tolerance)
};

Reference reference(const Problem& p, bool scaled) {
  Reference r{};
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      double sum = p.c[m][n], mag = std::fabs(p.c[m][n]);
      for (int kb = 0; kb < 4; ++kb) {
        const double scale = scaled ? e8m0_value(p.ea[kb][m]) * e8m0_value(p.eb[kb][n]) : 1.0;
        double block = 0.0, block_mag = 0.0;
        for (int k = 32 * kb; k < 32 * kb + 32; ++k) {
          const double prod = format_value(p.fa, p.a[m][k]) * format_value(p.fb, p.b[k][n]);
          block += prod;
          block_mag += std::fabs(prod);
        }
        sum += scale * block;
        mag += std::fabs(scale) * block_mag;
      }
      r.d[m][n] = static_cast<float>(sum);
      r.magnitude[m][n] = static_cast<float>(mag);
    }
  }
  return r;
}

// Runs the problem through the emulated MFMA; the scale bytes sit in byte OpselA / OpselB of
// words whose other bytes are random decoys.
template <int FmtA, int FmtB, int OpselA = 0, int OpselB = 0, bool Scaled = true>
D16 emulate(const Problem& p) {
  std::vector<f32x4> out(64);
  std::array<std::uint32_t, 64> decoy{};
  for (auto& d : decoy) d = static_cast<std::uint32_t>(rng()());
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    const int g = static_cast<int>(l >> 4), r = static_cast<int>(l & 15);
    unsigned a_codes[32], b_codes[32];
    for (int j = 0; j < 32; ++j) {
      a_codes[j] = p.a[r][f8f6f4_k(FmtA, g, j)];
      b_codes[j] = p.b[f8f6f4_k(FmtB, g, j)][r];
    }
    const i32x8 a = pack_items(FmtA, a_codes);
    const i32x8 b = pack_items(FmtB, b_codes);
    f32x4 c;
    for (int i = 0; i < 4; ++i) c[i] = p.c[4 * g + i][r];
    const auto place = [&](unsigned byte, int opsel) {
      return static_cast<std::int32_t>((decoy[l] & ~(0xFFu << (8 * opsel))) | (byte << (8 * opsel)));
    };
    const std::int32_t sa = place(p.ea[g][r], OpselA), sb = place(p.eb[g][r], OpselB);
    if constexpr (Scaled) {
      out[l] = mfma_scale_f32_16x16x128_f8f6f4<FmtA, FmtB, OpselA, OpselB>(a, b, c, sa, sb);
    } else {
      out[l] = mfma_f32_16x16x128_f8f6f4<FmtA, FmtB>(a, b, c);
    }
  });
  D16 d{};
  for (int l = 0; l < 64; ++l) {
    for (int i = 0; i < 4; ++i) d[4 * (l >> 4) + i][l & 15] = out[l][i];
  }
  return d;
}

double half_ulp32(float x) {
  const float a = std::fabs(x);
  if (a < std::numeric_limits<float>::min()) return std::ldexp(1.0, -150);
  int e = 0;
  std::frexp(a, &e);
  return std::ldexp(1.0, e - 25);
}

void expect_close(const D16& got, const Reference& ref, const std::string& what) {
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      const double tol = half_ulp32(std::max(std::fabs(got[m][n]), std::fabs(ref.d[m][n]))) +
                         72.0 * std::ldexp(1.0, -53) * ref.magnitude[m][n];
      ASSERT_LE(std::fabs(static_cast<double>(got[m][n]) - ref.d[m][n]), tol)
          << what << " D[" << m << "][" << n << "] = " << got[m][n] << ", reference "
          << ref.d[m][n];
    }
  }
}

template <int FmtA, int FmtB>
void check_pair() {
  for (int trial = 0; trial < 2; ++trial) {
    const Problem p = random_problem(FmtA, FmtB, 117, 137);
    const std::string what = "formats " + std::to_string(FmtA) + "x" + std::to_string(FmtB);
    expect_close(emulate<FmtA, FmtB, 2, 3>(p), reference(p, true), what);
  }
}

template <int FmtA>
void check_row() {
  check_pair<FmtA, kFp8>();
  check_pair<FmtA, kBf8>();
  check_pair<FmtA, kFp6>();
  check_pair<FmtA, kBf6>();
  check_pair<FmtA, kFp4>();
}

TEST(EmuMfmaNumeric, ScaledAllFormatPairsFp8A) { check_row<kFp8>(); }
TEST(EmuMfmaNumeric, ScaledAllFormatPairsBf8A) { check_row<kBf8>(); }
TEST(EmuMfmaNumeric, ScaledAllFormatPairsFp6A) { check_row<kFp6>(); }
TEST(EmuMfmaNumeric, ScaledAllFormatPairsBf6A) { check_row<kBf6>(); }
TEST(EmuMfmaNumeric, ScaledAllFormatPairsFp4A) { check_row<kFp4>(); }

TEST(EmuMfmaNumeric, ExactDataIsBitExact) {
  // fp4 x fp4, E8M0 126..128 and an integer C: every scaled product is a multiple of
  // 0.25 * 2^-2 and |D| <= 4 * 32 * 36 * 4 + 100 < 2^15, so every partial sum in any order
  // needs at most 15 + 4 = 19 significant bits: exact in fp32 whatever the summation order.
  const Problem p = random_problem(kFp4, kFp4, 126, 128);
  Problem q = p;
  for (auto& row : q.c) {
    for (float& x : row) x = std::round(x);
  }
  const D16 got = emulate<kFp4, kFp4>(q);
  const Reference ref = reference(q, true);
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) ASSERT_EQ(got[m][n], ref.d[m][n]) << m << "," << n;
  }
}

TEST(EmuMfmaNumeric, UnscaledVariantIgnoresScales) {
  // The unscaled instruction forces every scale to 1.0 (E8M0 127).
  Problem p = random_problem(kFp8, kFp4, 100, 150);
  const D16 got = emulate<kFp8, kFp4, 0, 0, false>(p);
  expect_close(got, reference(p, false), "unscaled");
  for (auto& row : p.ea) row.fill(127);
  for (auto& row : p.eb) row.fill(127);
  const D16 unit = emulate<kFp8, kFp4>(p);
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) EXPECT_EQ(bits_of(got[m][n]), bits_of(unit[m][n]));
  }
}

// All-ones operands: each block sums to 32 (fp4 1.0 = code 2).
Problem ones_problem() {
  Problem p;
  p.fa = p.fb = kFp4;
  for (auto& row : p.a) row.fill(2);
  for (auto& row : p.b) row.fill(2);
  for (auto& row : p.ea) row.fill(127);
  for (auto& row : p.eb) row.fill(127);
  return p;
}

TEST(EmuMfmaNumeric, E8m0ZeroIsTwoToMinus127NotZero) {
  Problem p = ones_problem();
  for (auto& row : p.ea) row.fill(0);
  for (auto& row : p.eb) row.fill(254);  // 2^-127 * 2^127 = 1
  D16 d = emulate<kFp4, kFp4>(p);
  EXPECT_EQ(d[0][0], 128.0f);
  EXPECT_EQ(d[15][15], 128.0f);
  for (auto& row : p.eb) row.fill(127);  // 128 * 2^-127 = 2^-120, a normal float
  d = emulate<kFp4, kFp4>(p);
  EXPECT_EQ(d[3][9], std::ldexp(1.0f, -120));
  // Both 0: 128 * 2^-254 underflows to +0 in fp32 (not an error, not NaN).
  for (auto& row : p.eb) row.fill(0);
  d = emulate<kFp4, kFp4>(p);
  EXPECT_EQ(bits_of(d[7][7]), 0u);
}

TEST(EmuMfmaNumeric, E8m0255IsNaNForItsRowOrColumnOnly) {
  Problem p = ones_problem();
  p.ea[2][7] = 255;   // A row 7, block 2
  p.eb[1][12] = 255;  // B column 12, block 1
  const D16 d = emulate<kFp4, kFp4>(p);
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      if (m == 7 || n == 12) {
        EXPECT_TRUE(std::isnan(d[m][n])) << m << "," << n;
      } else {
        EXPECT_EQ(d[m][n], 128.0f) << m << "," << n;
      }
    }
  }
}

TEST(EmuMfmaNumeric, NaNAndInfinityInputs) {
  Problem p;
  p.fa = kBf8;
  p.fb = kFp8;
  for (auto& row : p.ea) row.fill(127);
  for (auto& row : p.eb) row.fill(127);
  p.a[2][5] = 0x7C;                                          // bf8 +Inf
  p.a[9][70] = 0x7D;                                         // bf8 NaN
  for (int n = 0; n < 16; ++n) p.b[5][n] = n % 2 ? 0 : 0x38;  // fp8 1.0 or 0
  p.b[100][15] = 0x7F;                                       // fp8 NaN
  const D16 d = emulate<kBf8, kFp8>(p);
  for (int n = 0; n < 16; ++n) {
    if (n % 2 == 0) {
      EXPECT_EQ(d[2][n], std::numeric_limits<float>::infinity()) << n;
    } else {
      EXPECT_TRUE(std::isnan(d[2][n])) << "Inf * 0 in column " << n;
    }
    EXPECT_TRUE(std::isnan(d[9][n])) << n;
  }
  // NaN * 0 is NaN too: all of column 15 is NaN although A[m][100] = 0.
  for (int m = 0; m < 16; ++m) EXPECT_TRUE(std::isnan(d[m][15])) << m;
  EXPECT_EQ(d[5][3], 0.0f);
}

TEST(EmuMfmaNumeric, OverflowGivesInfinity) {
  Problem p;
  p.fa = p.fb = kFp8;
  for (auto& row : p.a) row.fill(0x7E);  // 448
  for (auto& row : p.b) row.fill(0x7E);
  for (auto& row : p.ea) row.fill(254);  // 2^127
  for (auto& row : p.eb) row.fill(127);
  D16 d = emulate<kFp8, kFp8>(p);
  EXPECT_EQ(d[0][0], std::numeric_limits<float>::infinity());
  for (auto& row : p.ea) row.fill(127);
  d = emulate<kFp8, kFp8>(p);
  EXPECT_EQ(d[0][0], 448.0f * 448.0f * 128.0f);  // 2^7 * 200704: exact
}

// ---------------------------------------------------------------- bf16 MFMAs
template <int K>
void check_bf16_numeric() {
  constexpr int per_lane = K / 4;
  using V = std::conditional_t<K == 16, i16x4, i16x8>;
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  const auto random_bf16 = [&] {
    return uqref::bf16_round(std::ldexp(mantissa(rng()), exponent(rng())));
  };
  std::uint16_t a[16][K], b[K][16];
  float c[16][16];
  for (int m = 0; m < 16; ++m) {
    for (int k = 0; k < K; ++k) a[m][k] = random_bf16();
  }
  for (int k = 0; k < K; ++k) {
    for (int n = 0; n < 16; ++n) b[k][n] = random_bf16();
  }
  a[3][1] = 0x0001;  // a bf16 denormal: kept, not flushed
  b[1][0] = 0x4000;  // 2.0
  for (auto& row : c) {
    for (float& x : row) x = mantissa(rng());
  }
  std::vector<f32x4> out(64);
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    const int g = static_cast<int>(l >> 4), r = static_cast<int>(l & 15);
    V va, vb;
    for (int t = 0; t < per_lane; ++t) {
      va[t] = static_cast<std::int16_t>(a[r][per_lane * g + t]);
      vb[t] = static_cast<std::int16_t>(b[per_lane * g + t][r]);
    }
    f32x4 vc;
    for (int i = 0; i < 4; ++i) vc[i] = c[4 * g + i][r];
    if constexpr (K == 16) {
      out[l] = mfma_f32_16x16x16_bf16(va, vb, vc);
    } else {
      out[l] = mfma_f32_16x16x32_bf16(va, vb, vc);
    }
  });
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      double sum = c[m][n], mag = std::fabs(c[m][n]);
      for (int k = 0; k < K; ++k) {
        const double prod = static_cast<double>(uqref::bf16_value(a[m][k])) * uqref::bf16_value(b[k][n]);
        sum += prod;
        mag += std::fabs(prod);
      }
      const float got = out[16 * (m / 4) + n][m % 4];
      // Same derivation as above with K + 1 additions per side.
      const double tol = half_ulp32(std::max(std::fabs(got), static_cast<float>(std::fabs(sum)))) +
                         2.0 * (K + 1) * std::ldexp(1.0, -53) * mag;
      ASSERT_LE(std::fabs(got - sum), tol) << "K" << K << " D[" << m << "][" << n << "]";
    }
  }
  // The denormal contributed: D[3][0] includes a[3][1] * 2.0 = 2^-132 (below fp32's
  // resolution of the other terms, so it is checked through an isolated product instead).
  std::vector<f32x4> iso(64);
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    V va{}, vb{};
    if (l == 3) va[1] = 0x0001;                  // A[3][1] = 2^-133 (bf16 min denormal)
    if (l == 0) vb[1] = 0x4000;                  // B[1][0] = 2
    if constexpr (K == 16) {
      iso[l] = mfma_f32_16x16x16_bf16(va, vb, f32x4{0, 0, 0, 0});
    } else {
      iso[l] = mfma_f32_16x16x32_bf16(va, vb, f32x4{0, 0, 0, 0});
    }
  });
  EXPECT_EQ(iso[0][3], std::ldexp(1.0f, -132));
}

TEST(EmuMfmaNumeric, Bf16K16AgainstFloat64) { check_bf16_numeric<16>(); }
TEST(EmuMfmaNumeric, Bf16K32AgainstFloat64) { check_bf16_numeric<32>(); }

}  // namespace
}  // namespace emu_test
