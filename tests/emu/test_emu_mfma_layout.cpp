// MFMA register layouts in the emulator (spec §1.3-1.5, §2): every (lane, item) of A and B
// is tagged in turn (a one-hot operand) and the product reveals the row / column and the K
// index it landed on; C/D and the scale-byte placement are checked the same way.
#include <array>
#include <type_traits>

#include "emu_test_support.hpp"

namespace emu_test {
namespace {

using D16 = std::array<std::array<float, 16>, 16>;

// The C/D layout as the test reads it (spec §1.4): element i of lane l is D[4g + i][r].
D16 to_matrix(const f32x4* lanes) {
  D16 d{};
  for (int l = 0; l < 64; ++l) {
    for (int i = 0; i < 4; ++i) d[4 * (l >> 4) + i][l & 15] = lanes[l][i];
  }
  return d;
}

unsigned code_of_one(int format) {
  for (unsigned c = 0; c < (1u << format_bits(format)); ++c) {
    if (format_value(format, c) == 1.0) return c;
  }
  ADD_FAILURE() << "no 1.0 in format " << format;
  return 0;
}

// Codes of lane l (items j = 0..31) of an operand whose element at K index k, row/column r
// is value(r, k) in {0, 1}.
template <class Value>
i32x8 operand_of(int format, std::uint32_t lane, Value value) {
  unsigned codes[32];
  const unsigned one = code_of_one(format);
  for (int j = 0; j < 32; ++j) {
    const int k = f8f6f4_k(format, static_cast<int>(lane >> 4), j);
    codes[j] = value(static_cast<int>(lane & 15), k) ? one : 0;
  }
  return pack_items(format, codes);
}

// D for every one-hot position (lane L, item J) of the operand under test.
template <int FmtA, int FmtB, bool TestA>
std::vector<f32x4> one_hot_products() {
  std::vector<f32x4> out(64 * 32 * 64);
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    const int tested = TestA ? FmtA : FmtB;
    const unsigned one = code_of_one(tested);
    // The other operand encodes K in binary: element (row/col r, k) = bit r of k, r < 7.
    const i32x8 other = operand_of(TestA ? FmtB : FmtA, l, [](int r, int k) {
      return r < 7 && ((k >> r) & 1) != 0;
    });
    for (std::uint32_t L = 0; L < 64; ++L) {
      for (int J = 0; J < 32; ++J) {
        unsigned codes[32] = {};
        if (l == L) codes[J] = one;
        const i32x8 hot = pack_items(tested, codes);
        const f32x4 zero = {0, 0, 0, 0};
        out[(L * 32 + J) * 64 + l] =
            TestA ? mfma_scale_f32_16x16x128_f8f6f4<FmtA, FmtB>(hot, other, zero, 127, 127)
                  : mfma_scale_f32_16x16x128_f8f6f4<FmtA, FmtB>(other, hot, zero, 127, 127);
      }
    }
  });
  return out;
}

template <int FmtA, int FmtB>
void check_a_layout() {
  const auto out = one_hot_products<FmtA, FmtB, true>();
  for (int L = 0; L < 64; ++L) {
    for (int J = 0; J < 32; ++J) {
      const D16 d = to_matrix(&out[(L * 32 + J) * 64]);
      const int m = L & 15, k = f8f6f4_k(FmtA, L >> 4, J);
      for (int row = 0; row < 16; ++row) {
        for (int n = 0; n < 16; ++n) {
          const float expected = row == m && n < 7 ? static_cast<float>((k >> n) & 1) : 0.0f;
          ASSERT_EQ(d[row][n], expected) << "format " << FmtA << ": A item " << J << " of lane " << L
                                         << " should be A[" << m << "][" << k << "]; D[" << row
                                         << "][" << n << "]";
        }
      }
    }
  }
}

template <int FmtA, int FmtB>
void check_b_layout() {
  const auto out = one_hot_products<FmtA, FmtB, false>();
  for (int L = 0; L < 64; ++L) {
    for (int J = 0; J < 32; ++J) {
      const D16 d = to_matrix(&out[(L * 32 + J) * 64]);
      const int n_hot = L & 15, k = f8f6f4_k(FmtB, L >> 4, J);
      for (int m = 0; m < 16; ++m) {
        for (int n = 0; n < 16; ++n) {
          const float expected = n == n_hot && m < 7 ? static_cast<float>((k >> m) & 1) : 0.0f;
          ASSERT_EQ(d[m][n], expected) << "format " << FmtB << ": B item " << J << " of lane " << L
                                       << " should be B[" << k << "][" << n_hot << "]; D[" << m
                                       << "][" << n << "]";
        }
      }
    }
  }
}

TEST(EmuMfmaLayout, ScaledAOperandFp8) { check_a_layout<kFp8, kFp4>(); }
TEST(EmuMfmaLayout, ScaledAOperandBf8) { check_a_layout<kBf8, kFp8>(); }
TEST(EmuMfmaLayout, ScaledAOperandFp6) { check_a_layout<kFp6, kBf6>(); }
TEST(EmuMfmaLayout, ScaledAOperandBf6) { check_a_layout<kBf6, kFp4>(); }
TEST(EmuMfmaLayout, ScaledAOperandFp4) { check_a_layout<kFp4, kFp8>(); }
TEST(EmuMfmaLayout, ScaledBOperandFp8) { check_b_layout<kFp4, kFp8>(); }
TEST(EmuMfmaLayout, ScaledBOperandBf8) { check_b_layout<kFp6, kBf8>(); }
TEST(EmuMfmaLayout, ScaledBOperandFp6) { check_b_layout<kFp8, kFp6>(); }
TEST(EmuMfmaLayout, ScaledBOperandBf6) { check_b_layout<kBf8, kBf6>(); }
TEST(EmuMfmaLayout, ScaledBOperandFp4) { check_b_layout<kFp8, kFp4>(); }

TEST(EmuMfmaLayout, DAndCLayout) {
  // A[m][k] = [k == m], B[k][n] = [n == (k + 3) % 16] for k < 16: A B is the permutation
  // matrix P[m][n] = [n == (m + 3) % 16]; with C[m][n] = 100 m + n, D = C + P. The test
  // reads D with its own layout, so a D mapping other than spec §1.4 fails here.
  std::vector<f32x4> out(64);
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    const i32x8 a = operand_of(kFp8, l, [](int m, int k) { return k == m; });
    const i32x8 b = operand_of(kFp8, l, [](int n, int k) { return k < 16 && n == (k + 3) % 16; });
    f32x4 c;
    for (int i = 0; i < 4; ++i) c[i] = static_cast<float>(100 * (4 * (l >> 4) + i) + (l & 15));
    out[l] = mfma_f32_16x16x128_f8f6f4<kFp8, kFp8>(a, b, c);
  });
  const D16 d = to_matrix(out.data());
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      EXPECT_EQ(d[m][n], 100.0f * m + n + (n == (m + 3) % 16 ? 1.0f : 0.0f)) << m << "," << n;
    }
  }
}

// Scale placement: A = B = all ones, so block kb of D[m][n] contributes 32 times its scale.
// One scale byte (lane L, selected by OpselA/OpselB) is 128 (x2); the other bytes of every
// scale word are decoys (200 = 2^73) that must not be selected.
template <int Opsel, bool ScaleA>
void check_scale_placement() {
  std::vector<f32x4> out(64 * 64);
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    const i32x8 ones = operand_of(kFp4, l, [](int, int) { return true; });
    for (std::uint32_t L = 0; L < 64; ++L) {
      const std::uint32_t byte = l == L ? 128u : 127u;
      std::uint32_t word = 0xC8C8C8C8u;  // decoys
      word = (word & ~(0xFFu << (8 * Opsel))) | (byte << (8 * Opsel));
      const std::uint32_t unit = (0xC8C8C8C8u & ~(0xFFu << (8 * Opsel))) | (127u << (8 * Opsel));
      const auto s_a = static_cast<std::int32_t>(ScaleA ? word : unit);
      const auto s_b = static_cast<std::int32_t>(ScaleA ? unit : word);
      out[L * 64 + l] = mfma_scale_f32_16x16x128_f8f6f4<kFp4, kFp4, Opsel, Opsel>(
          ones, ones, f32x4{0, 0, 0, 0}, s_a, s_b);
    }
  });
  for (int L = 0; L < 64; ++L) {
    const D16 d = to_matrix(&out[L * 64]);
    // Lane L = 16 kb + (row for A, column for B): that row/column gets 3 * 32 + 2 * 32.
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 16; ++n) {
        const bool doubled = ScaleA ? m == (L & 15) : n == (L & 15);
        ASSERT_EQ(d[m][n], doubled ? 160.0f : 128.0f)
            << (ScaleA ? "A" : "B") << " scale byte " << Opsel << " of lane " << L << ", D[" << m
            << "][" << n << "]";
      }
    }
  }
}

TEST(EmuMfmaLayout, ScalePlacementAAllOpsel) {
  check_scale_placement<0, true>();
  check_scale_placement<1, true>();
  check_scale_placement<2, true>();
  check_scale_placement<3, true>();
}
TEST(EmuMfmaLayout, ScalePlacementBAllOpsel) {
  check_scale_placement<0, false>();
  check_scale_placement<1, false>();
  check_scale_placement<2, false>();
  check_scale_placement<3, false>();
}

TEST(EmuMfmaLayout, ScaleBlockIsByLogicalKForFp8) {
  // FP8 puts a block's data in two lane groups (k 0-15 in group 0, 16-31 in group 1), but
  // the scale of block kb = k/32 still comes from lane 16 kb + m. A has one 1.0 at
  // A[5][k], B is all ones, scale byte of lane 16*kb + 5 is 129 (x4): D[5][n] = 4 iff
  // k / 32 == kb.
  for (int k : {3, 17, 40, 63, 64, 100, 127}) {
    std::vector<f32x4> out(64 * 4);
    run_one_wave([&] {
      const std::uint32_t l = lane_id();
      const i32x8 a = operand_of(kFp8, l, [k](int m, int kk) { return m == 5 && kk == k; });
      const i32x8 b = operand_of(kFp8, l, [](int, int) { return true; });
      for (int kb = 0; kb < 4; ++kb) {
        const std::int32_t s = l == static_cast<std::uint32_t>(16 * kb + 5) ? 129 : 127;
        out[kb * 64 + l] =
            mfma_scale_f32_16x16x128_f8f6f4<kFp8, kFp8>(a, b, f32x4{0, 0, 0, 0}, s, 127);
      }
    });
    for (int kb = 0; kb < 4; ++kb) {
      const D16 d = to_matrix(&out[kb * 64]);
      EXPECT_EQ(d[5][9], k / 32 == kb ? 4.0f : 1.0f) << "k " << k << " scale block " << kb;
    }
  }
}

// ---------------------------------------------------------------- bf16 MFMAs
template <int K>
void check_bf16_layouts() {
  constexpr int per_lane = K / 4;
  using V = std::conditional_t<K == 16, i16x4, i16x8>;
  // A one-hot at (lane L, element t): expected A[L & 15][per_lane * (L >> 4) + t]. B encodes
  // K in binary (B[k][n] = bit n of k). Then B one-hot with A = bits of K.
  const auto bit_operand = [](std::uint32_t l) {
    V v;
    for (int t = 0; t < per_lane; ++t) {
      const int k = per_lane * static_cast<int>(l >> 4) + t;
      const int rc = static_cast<int>(l & 15);
      v[t] = static_cast<std::int16_t>(rc < 6 && ((k >> rc) & 1) ? 0x3F80 : 0);
    }
    return v;
  };
  std::vector<f32x4> out_a(64 * per_lane * 64), out_b(64 * per_lane * 64);
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    const V bits = bit_operand(l);
    for (std::uint32_t L = 0; L < 64; ++L) {
      for (int t = 0; t < per_lane; ++t) {
        V hot{};
        if (l == L) hot[t] = 0x3F80;  // bf16 1.0
        const f32x4 zero = {0, 0, 0, 0};
        if constexpr (K == 16) {
          out_a[(L * per_lane + t) * 64 + l] = mfma_f32_16x16x16_bf16(hot, bits, zero);
          out_b[(L * per_lane + t) * 64 + l] = mfma_f32_16x16x16_bf16(bits, hot, zero);
        } else {
          out_a[(L * per_lane + t) * 64 + l] = mfma_f32_16x16x32_bf16(hot, bits, zero);
          out_b[(L * per_lane + t) * 64 + l] = mfma_f32_16x16x32_bf16(bits, hot, zero);
        }
      }
    }
  });
  for (int L = 0; L < 64; ++L) {
    for (int t = 0; t < per_lane; ++t) {
      const int rc = L & 15, k = per_lane * (L >> 4) + t;
      const D16 da = to_matrix(&out_a[(L * per_lane + t) * 64]);
      const D16 db = to_matrix(&out_b[(L * per_lane + t) * 64]);
      for (int m = 0; m < 16; ++m) {
        for (int n = 0; n < 16; ++n) {
          const float ea = m == rc && n < 6 ? static_cast<float>((k >> n) & 1) : 0.0f;
          const float eb = n == rc && m < 6 ? static_cast<float>((k >> m) & 1) : 0.0f;
          ASSERT_EQ(da[m][n], ea) << "K" << K << " A element " << t << " of lane " << L;
          ASSERT_EQ(db[m][n], eb) << "K" << K << " B element " << t << " of lane " << L;
        }
      }
    }
  }
}

TEST(EmuMfmaLayout, Bf16K16Operands) { check_bf16_layouts<16>(); }
TEST(EmuMfmaLayout, Bf16K32Operands) { check_bf16_layouts<32>(); }

}  // namespace
}  // namespace emu_test
