// Emulated behaviour pinned to sources other than the project's notes (docs/gfx950-isa.md):
// each test states the fact, where it comes from (file and line, or the test's name, and the
// revision read), and checks the emulator against it. docs/EMULATOR-SOURCES.md lists which
// behaviours are confirmed this way and which still rest on the notes only.
//
// Sources (facts only are used; nothing is copied):
//  [CALC] ROCm/amd_matrix_instruction_calculator, matrix_calculator.py at commit 2ef9189: AMD's
//         matrix-instruction layout tool. It covers CDNA1-3 (not CDNA4); gfx950 keeps the CDNA3
//         instructions used here. Layouts were printed with
//         `matrix_calculator.py --architecture CDNA3 --instruction <i> --register-layout -A|-B|-D`
//         (v_mfma_f32_16x16x16_bf16: entry at line 1750, 'cycles': 16 at line 1760;
//         v_mfma_f32_16x16x32_fp8_fp8: entry at line 2014) and every entry checked against the
//         formulas below.
//  [LLVM-MFMA] llvm/llvm-project llvm/test/Transforms/InstCombine/AMDGPU/mfma-scale.ll (commit
//         35073e90): InstCombine shrinks the scaled MFMA's A / B operand to the registers its
//         format uses: cbsz/blgp 2 (fp6) -> elements 0..5 of the <8 x i32> (lines 8-20,
//         @test_mfma_scale_f32_16x16x128_f8f6f4___v8i32_fp8__v8i32_fp6), 4 (fp4) -> elements
//         0..3 (@..._v8i32_fp8__v8i32_fp4, @..._v8i32_fp4__v8i32_fp8), 0 (fp8) -> all 8.
//  [LLVM-CVT] llvm/llvm-project llvm/test/Transforms/InstCombine/AMDGPU/
//         cvt-scalef32-scale-demanded-bits.ll (commit 06c6ad1d), lines 4-5: "V_CVT_SCALEF32_*
//         conversions to narrow formats only read the exponent field of the f32 scale"; its
//         @pk_fp4_f32 test drops an exponent mask of the scale, @fneg_scale / @fabs_scale
//         ("The sign of the scale is not read") drop sign changes.
//  [AITER] ROCm/aiter op_tests/opus/device/test_tr_load_f16.cu (commit ef4b0731), AMD's
//         single-wave gfx950 test of ds_read_b64_tr_b16, verified on hardware by its Python
//         driver (we have not seen its results): a 16 x 32 row-major fp16 tile (K rows, N
//         columns) in LDS, read by make_layout_r (lines 40-70: in each 16-lane group, lane
//         4 kk + q addresses row kk, columns 4q .. 4q+3 of a 4 x 16 piece; group G takes rows
//         8 (G / 2) + 4y + kk and columns 16 (G % 2) + 4q, y = 0, 1 for the two reads), and
//         stored as the B operand of the 32x32x16 f16 MFMA (partition_layout_b, tr_load_f16_kernel
//         below make_layout_r): lane l then holds B[k][n], n = l % 32, k = 8 (l / 32) + t for its
//         items t = 0..7 (the calculator's CDNA3 32x32x8 f16 rule, K / 2 items per lane, at K = 16).
//  [CK-TRITON] cache-policy bits of gfx942/gfx950 buffer instructions, "bit 0 = sc0, bit 1 = nt,
//         bit 3 = swz, bit 4 = sc1": ROCm/composable_kernel's amd_buffer_coherence_enum comment
//         and triton-lang/triton's AMD backend (the comment above its cache-policy helper for
//         ROCDL raw buffer loads/stores, "gfx942 and gfx950").
//  [TRITON-LIT] test/TritonGPU/amd/accelerate-amd-matmul-mfma-gfx950.mlir of Triton (read in
//         facebookexperimental/triton @213af0e2, a fork carrying triton-lang/triton's file), the
//         MFMA16 checks of @mfma_dot_scaled_fp8_mxfp4 (16x16x128, e4m3 x e2m1): the scales of
//         a 16-row operand are laid out as #ttg.linear<{register = [[0, 4]], lane = [[1, 0],
//         [2, 0], [4, 0], [8, 0], [0, 1], [0, 2]]}> over (row or column, scale block): lane bits
//         0-3 add 1, 2, 4, 8 to the row, lane bits 4-5 add 1, 2 to the block, a register bit 4
//         blocks (the next 128 K). So block kb of row m sits in lane m + 16 (kb mod 4).
//  [TRITON-LL] lib/Dialect/TritonGPU/IR/LinearLayoutConversions.cpp of triton-lang/triton
//         (mfmaDotToLinearLayout, the version of the search index, listed at commit 1706ecf2):
//         a dot operand of an MFMA with non-K size 16 and kWidth k has registers identity1D(k)
//         along K, lanes identity1D(16) along the non-K dim then identity1D(4) along K, and
//         the 64 x k... tile repeated along K in registers when K exceeds 4 k. For the scaled
//         16x16x128 with fp8 (kWidth 16, as the lit test above checks): byte j of lane
//         (g = l / 16, n = l % 16) holds k = 16 g + (j mod 16) + 64 (j / 16).
//  [AITER-MXFP] ROCm/aiter op_tests/opus/device/test_mxfp.cu (commit e4048607), AMD's gfx950
//         test of the scaled MFMAs against torch: mxfp4_kernel<16, 16, 128> gives lane (group4 =
//         l / 16, lane16 = l % 16) the 16 bytes of A row lane16 from byte 16 group4 (32 fp4,
//         low nibble first), B column lane16 from rows 32 group4 + 2i, 2i + 1 packed low,
//         high into byte i, uniform integer scales, and stores c_reg[i] to C[4 group4 + i][lane16].
//  [SEED] shared/seeds/000_... (the FlyDSL kernel this port replaces, run on MI355X by its
//         authors): the rotated query is stored at the physical position inv(qperm)(d) =
//         (d & 0x8F) | ((d >> 2) & 0x10) | ((d << 1) & 0x60) of its natural dim d, and the
//         scaled MFMA's Q operand of issue h, lane (g, r) is the 32 consecutive physical
//         positions 128 h + 32 g .. + 31 of row r (its hoisted q_op loads).
#include <array>
#include <cmath>
#include <cstring>

#include "gfx950/decode_query.hpp"

#include "emu_test_support.hpp"

namespace emu_test {
namespace {

// ---------------------------------------------------------------- [CALC] bf16 16x16x16
// A[i][k]: lane i + 16 (k / 4), register k % 4 / 2, half k % 2 (bits 15:0 for even k).
// B[k][j]: lane j + 16 (k / 4), register k % 4 / 2, half k % 2.
// D[i][j] (and C): lane j + 16 (i / 4), register i % 4.
// A few entries exactly as the calculator prints them: A[0][4] = v0{16}.[15:0],
// A[1][3] = v1{1}.[31:16], D[1][0] = v1{0}, D[2][15] = v2{15}.
struct LaneItem {
  int lane, item;  // item: 16-bit element of the operand (register * 2 + half), or D element
};
LaneItem calc_ab(int row_or_col, int k) { return {row_or_col + 16 * (k / 4), k % 4}; }
LaneItem calc_d(int i, int j) { return {j + 16 * (i / 4), i % 4}; }

TEST(EmuIndependentSources, CalculatorLayoutsOfBf16Mfma16x16x16) {
  // the literal entries quoted above, through the formulas
  EXPECT_EQ(calc_ab(0, 4).lane, 16);
  EXPECT_EQ(calc_ab(0, 4).item, 0);
  EXPECT_EQ(calc_ab(1, 3).lane, 1);
  EXPECT_EQ(calc_ab(1, 3).item, 3);
  EXPECT_EQ(calc_d(1, 0).lane, 0);
  EXPECT_EQ(calc_d(1, 0).item, 1);
  EXPECT_EQ(calc_d(2, 15).lane, 15);
  EXPECT_EQ(calc_d(2, 15).item, 2);
  // every (i, k, j): A = e_{i,k}, B = e_{k,j} placed by the calculator's layout; the product
  // is 1 at D[i][j] only, which must appear where the calculator puts D[i][j].
  int checked = 0;
  for (int i = 0; i < 16; i += 3) {
    for (int k = 0; k < 16; ++k) {
      for (int j = 0; j < 16; j += 5) {
        std::array<f32x4, 64> d{};
        run_one_wave([&] {
          const int l = static_cast<int>(lane_id());
          i16x4 a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
          if (l == calc_ab(i, k).lane) a[calc_ab(i, k).item] = 0x3F80;  // bf16 1.0
          if (l == calc_ab(j, k).lane) b[calc_ab(j, k).item] = 0x3F80;
          d[static_cast<std::size_t>(l)] = mfma_f32_16x16x16_bf16(a, b, f32x4{0, 0, 0, 0});
        });
        for (int l = 0; l < 64; ++l) {
          for (int e = 0; e < 4; ++e) {
            const bool at = l == calc_d(i, j).lane && e == calc_d(i, j).item;
            ASSERT_EQ(d[static_cast<std::size_t>(l)][e], at ? 1.0f : 0.0f)
                << "A[" << i << "][" << k << "] B[" << k << "][" << j << "]: lane " << l << " element " << e;
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 6 * 16 * 4);
}

// ---------------------------------------------------------------- [CALC] K = 32 rule
// CDNA3's v_mfma_f32_16x16x32_fp8_fp8: A[i][k] in lane i + 16 (k / 8), item k % 8 (byte k % 4
// of register k % 8 / 4); D as above. gfx950's v_mfma_f32_16x16x32_bf16 (not in the
// calculator) is emulated with the same K = 32 rule for its 8 bf16 items per lane: supporting
// evidence for it, not a confirmation.
TEST(EmuIndependentSources, K32RuleOfTheCalculatorHoldsForTheEmulatedBf16Mfma16x16x32) {
  for (int i = 0; i < 16; i += 5) {
    for (int k = 0; k < 32; ++k) {
      const int j = (3 * k + i) % 16;
      std::array<f32x4, 64> d{};
      run_one_wave([&] {
        const int l = static_cast<int>(lane_id());
        i16x8 a = {0, 0, 0, 0, 0, 0, 0, 0}, b = {0, 0, 0, 0, 0, 0, 0, 0};
        if (l == i + 16 * (k / 8)) a[k % 8] = 0x3F80;
        if (l == j + 16 * (k / 8)) b[k % 8] = 0x3F80;
        d[static_cast<std::size_t>(l)] = mfma_f32_16x16x32_bf16(a, b, f32x4{0, 0, 0, 0});
      });
      for (int l = 0; l < 64; ++l) {
        for (int e = 0; e < 4; ++e) {
          const bool at = l == calc_d(i, j).lane && e == calc_d(i, j).item;
          ASSERT_EQ(d[static_cast<std::size_t>(l)][e], at ? 1.0f : 0.0f) << i << " " << k << " " << j;
        }
      }
    }
  }
}

// ---------------------------------------------------------------- [CALC] D of the scaled MFMA
// Every 16x16 MFMA of the calculator (all types, CDNA1-3) has the D layout above. The scaled
// 16x16x128 MFMA's D is emulated the same way: checked with A = ones in row i only (lane
// i + 16 g holds row i for every g, as the calculator's 16x16 A layouts put row i) and B = ones,
// so D[i][j] = 128 for every j and 0 elsewhere, whatever the K order inside the lanes.
TEST(EmuIndependentSources, ScaledMfmaResultUsesTheCalculatorsSixteenBySixteenDLayout) {
  for (int i = 0; i < 16; ++i) {
    std::array<f32x4, 64> d{};
    run_one_wave([&] {
      const int l = static_cast<int>(lane_id());
      const std::int32_t ones = 0x38383838;  // e4m3 1.0 in every byte
      const i32x8 b = {ones, ones, ones, ones, ones, ones, ones, ones};
      const i32x8 a = (l & 15) == i ? b : i32x8{0, 0, 0, 0, 0, 0, 0, 0};
      d[static_cast<std::size_t>(l)] = mfma_scale_f32_16x16x128_f8f6f4<kFp8, kFp8>(a, b, f32x4{0, 0, 0, 0}, 127, 127);
    });
    for (int r = 0; r < 16; ++r) {
      for (int j = 0; j < 16; ++j) {
        const LaneItem at = calc_d(r, j);
        EXPECT_EQ(d[static_cast<std::size_t>(at.lane)][at.item], r == i ? 128.0f : 0.0f) << "D[" << r << "][" << j << "]";
      }
    }
  }
}

// ---------------------------------------------------------------- [LLVM-MFMA] operand sizes
// The format selects how many of the 8 operand dwords the instruction reads: fp8 8, fp6 6,
// fp4 4, the low ones. Dwords past that must not change the result; every dword up to it must.
template <int FmtA, int FmtB>
f32x4 scaled_product_lane0(const i32x8& a, const i32x8& b) {
  f32x4 out{};
  run_one_wave([&] {
    const f32x4 d = mfma_scale_f32_16x16x128_f8f6f4<FmtA, FmtB>(a, b, f32x4{0, 0, 0, 0}, 127, 127);
    if (lane_id() == 0) out = d;
  });
  return out;
}

int dwords_of(int format) { return format == kFp4 ? 4 : format == kFp6 || format == kBf6 ? 6 : 8; }

template <int Fmt>
void check_operand_dwords() {
  // Codes of value 1 in every item the format has: the dwords are the format's packed items
  // (pack_items fills dwords 0 .. n-1); the rest gets garbage.
  unsigned ones[32];
  for (unsigned c = 0, found = 0; c < 256 && !found; ++c) {
    if (format_value(Fmt, c) == 1.0) {
      for (unsigned& o : ones) o = c;
      found = 1;
    }
  }
  const i32x8 data = pack_items(Fmt, ones);
  const int n = dwords_of(Fmt);
  const unsigned fp8_one[32] = {0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38,
                                0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38,
                                0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38};
  const i32x8 other = pack_items(kFp8, fp8_one);
  const f32x4 base_a = scaled_product_lane0<Fmt, kFp8>(data, other);
  const f32x4 base_b = scaled_product_lane0<kFp8, Fmt>(other, data);
  ASSERT_EQ(base_a[0], 128.0f);  // D[0][0] = the 128 products 1 x 1
  ASSERT_EQ(base_b[0], 128.0f);
  for (int w = 0; w < 8; ++w) {
    i32x8 changed = data;
    changed[w] = w < n ? 0 : static_cast<std::int32_t>(0x77777777);  // < n: drop 32 / n x ... items
    const f32x4 da = scaled_product_lane0<Fmt, kFp8>(changed, other);
    const f32x4 db = scaled_product_lane0<kFp8, Fmt>(other, changed);
    if (w < n) {
      EXPECT_NE(da[0], base_a[0]) << "format " << Fmt << ": A dword " << w << " is read";
      EXPECT_NE(db[0], base_b[0]) << "format " << Fmt << ": B dword " << w << " is read";
    } else {
      EXPECT_EQ(da[0], base_a[0]) << "format " << Fmt << ": A dword " << w << " must be ignored";
      EXPECT_EQ(db[0], base_b[0]) << "format " << Fmt << ": B dword " << w << " must be ignored";
    }
  }
}

TEST(EmuIndependentSources, ScaledMfmaReadsEightSixOrFourDwordsByFormat) {
  check_operand_dwords<kFp8>();
  check_operand_dwords<kBf8>();
  check_operand_dwords<kFp6>();
  check_operand_dwords<kBf6>();
  check_operand_dwords<kFp4>();
}

// ---------------------------------------------------------------- [LLVM-CVT] scale bits
// Quantising converts read only the exponent field of their f32 scale: sign and mantissa bits
// change nothing.
TEST(EmuIndependentSources, QuantisingConvertReadsOnlyTheScalesExponent) {
  std::mt19937 g(19);
  std::uniform_real_distribution<float> value(-40.0f, 40.0f);
  for (int t = 0; t < 2000; ++t) {
    const unsigned e = 100u + static_cast<unsigned>(t % 40);  // E8M0 100 .. 139
    const float a = value(g), b = value(g);
    const std::uint32_t noise = static_cast<std::uint32_t>(g()) & 0x807FFFFFu;  // sign + mantissa
    const float plain = e8m0_as_float(e), noisy = f32_from_bits((e << 23) | noise);
    EXPECT_EQ(cvt_scalef32_pk_fp4_f32<0>(0u, a, b, noisy), cvt_scalef32_pk_fp4_f32<0>(0u, a, b, plain))
        << a << " " << b << " scale bits " << std::hex << bits_of(noisy);
    EXPECT_EQ(cvt_scalef32_pk_fp4_f32<3>(0xA5A5A5A5u, a, b, -noisy), cvt_scalef32_pk_fp4_f32<3>(0xA5A5A5A5u, a, b, plain));
  }
}

// ---------------------------------------------------------------- [AITER] transpose read
TEST(EmuIndependentSources, TransposeReadGivesTheOperandAmdsHardwareTestExpects) {
  struct Tile {};
  std::vector<std::uint16_t> got(64 * 8, 0);
  const auto value = [](std::uint32_t k, std::uint32_t n) { return static_cast<std::uint16_t>(0x100 * k + n + 1); };
  run_one_wave([&] {
    const std::uint32_t lds = lds_allocate<16 * 32 * 2, Tile>();
    const std::uint32_t l = lane_id();
    for (std::uint32_t i = 0; i < 8; ++i) {  // lane l writes 8 elements of row l / 4
      const std::uint32_t k = l / 4, n = 8 * (l % 4) + i;
      lds_store<std::uint16_t>(lds + 2 * (32 * k + n), value(k, n));
    }
    barrier();
    const std::uint32_t group = l / 16, kk = (l % 16) / 4, q = l % 4;
    for (std::uint32_t y = 0; y < 2; ++y) {
      const std::uint32_t k = 8 * (group / 2) + 4 * y + kk, n = 16 * (group % 2) + 4 * q;
      const i16x4 r = ds_read_b64_tr_b16(lds + 2 * (32 * k + n));
      for (std::uint32_t j = 0; j < 4; ++j) got[8 * l + 4 * y + j] = static_cast<std::uint16_t>(r[j]);
    }
  });
  for (std::uint32_t l = 0; l < 64; ++l) {
    for (std::uint32_t t = 0; t < 8; ++t) {
      EXPECT_EQ(got[8 * l + t], value(8 * (l / 32) + t, l % 32)) << "lane " << l << " item " << t;
    }
  }
}


// ---------------------------------------------------------------- [TRITON-LIT] scale lanes
// B (e2m1, as in the lit test) has its scales by the Triton layout; A (e4m3) the constant 127,
// as the lit test's %cst0. A is 1.0 at (row m, k) and B 1.0 at (k, column n) for one k of block
// kb: D[m][n] is then the scale of column n, block kb alone, which must come from lane
// n + 16 kb.
int fp8_lane_group(int k) { return (k % 64) / 16; }   // [TRITON-LL]: k = 16 g + (j mod 16) + 64 (j / 16)
int fp8_byte(int k) { return k % 16 + 16 * (k / 64); }

TEST(EmuIndependentSources, ScaleLanesOfTritonsGfx950LitTest) {
  for (int kb = 0; kb < 4; ++kb) {
    for (int m : {0, 5, 15}) {
      std::array<f32x4, 64> d{};
      const int k = 32 * kb + 7;
      run_one_wave([&] {
        const int l = static_cast<int>(lane_id());
        std::uint8_t a8[32] = {}, b4[32] = {};
        if (l % 16 == m && l / 16 == fp8_lane_group(k)) a8[fp8_byte(k)] = 0x38;  // e4m3 1.0
        if (l / 16 == k / 32) {                       // e2m1 k = 32 g + j, low nibble first
          const int j = k % 32;
          b4[j / 2] = static_cast<std::uint8_t>(0x2u << (4 * (j % 2)));  // e2m1 1.0
        }
        i32x8 a, b;
        std::memcpy(&a, a8, 32);
        std::memcpy(&b, b4, 32);
        // lane l's B scale: 2^(l % 16 + 3 (l / 16) - 30), distinct per (column, block)
        const std::int32_t scale_b = 97 + l % 16 + 3 * (l / 16);
        d[static_cast<std::size_t>(l)] = mfma_scale_f32_16x16x128_f8f6f4<kFp8, kFp4>(a, b, f32x4{0, 0, 0, 0}, 127, scale_b);
      });
      for (int n = 0; n < 16; ++n) {
        const int lane = n + 16 * kb;  // [TRITON-LIT]
        const float want = std::ldexp(1.0f, 97 + lane % 16 + 3 * (lane / 16) - 127);
        const LaneItem at = calc_d(m, n);
        EXPECT_EQ(d[static_cast<std::size_t>(at.lane)][at.item], want) << "row " << m << ", column " << n << ", block " << kb;
      }
    }
  }
}

// ---------------------------------------------------------------- [TRITON-LL] fp8 operand
// Every k of the fp8 x fp8 16x16x128 product placed by Triton's kWidth-16 map in A (row m)
// and in B (column n) meets itself: D[m][n] = 1 exactly when both ones carry the same k.
TEST(EmuIndependentSources, TritonsKWidth16MapIsTheFp8OperandLayout) {
  int checked = 0;
  for (int ka = 0; ka < 128; ka += 5) {
    for (int kb : {ka, (ka + 64) % 128, (ka + 16) % 128, ka ^ 1}) {
      std::array<f32x4, 64> d{};
      const int m = ka % 16, n = (ka * 7) % 16;
      run_one_wave([&] {
        const int l = static_cast<int>(lane_id());
        std::uint8_t a8[32] = {}, b8[32] = {};
        if (l % 16 == m && l / 16 == fp8_lane_group(ka)) a8[fp8_byte(ka)] = 0x38;
        if (l % 16 == n && l / 16 == fp8_lane_group(kb)) b8[fp8_byte(kb)] = 0x38;
        i32x8 a, b;
        std::memcpy(&a, a8, 32);
        std::memcpy(&b, b8, 32);
        d[static_cast<std::size_t>(l)] = mfma_f32_16x16x128_f8f6f4<kFp8, kFp8>(a, b, f32x4{0, 0, 0, 0});
      });
      const LaneItem at = calc_d(m, n);
      EXPECT_EQ(d[static_cast<std::size_t>(at.lane)][at.item], ka == kb ? 1.0f : 0.0f) << "k of A " << ka << ", of B " << kb;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 26 * 4);
}

// ---------------------------------------------------------------- [AITER-MXFP] fp4 A, B and D
// AMD's test's loads and store around the emulated instruction, on random e2m1 data with unit
// scales: C must be the exact product (every partial sum is a multiple of 1/4 below 2^12).
TEST(EmuIndependentSources, AitersMxfp4TestLayoutsGiveTheExactProduct) {
  std::mt19937 g(4713);
  std::uint8_t A[16][64], B[128][8];  // packed e2m1: A[M][K / 2], B[K][N / 2], row-major
  for (auto& row : A)
    for (auto& x : row) x = static_cast<std::uint8_t>(g());
  for (auto& row : B)
    for (auto& x : row) x = static_cast<std::uint8_t>(g());
  const auto nib = [](std::uint8_t byte, int hi) { return static_cast<unsigned>(hi ? byte >> 4 : byte & 0xF); };
  std::array<f32x4, 64> c{};
  run_one_wave([&] {
    const int l = static_cast<int>(lane_id()), lane16 = l % 16, group4 = l / 16;
    std::uint8_t a[32] = {}, b[32] = {};
    for (int i = 0; i < 16; ++i) a[i] = A[lane16][group4 * 16 + i];
    for (int i = 0; i < 16; ++i) {
      const std::uint8_t byte0 = B[32 * group4 + 2 * i][lane16 / 2], byte1 = B[32 * group4 + 2 * i + 1][lane16 / 2];
      b[i] = static_cast<std::uint8_t>(nib(byte0, lane16 % 2) | (nib(byte1, lane16 % 2) << 4));
    }
    i32x8 av, bv;
    std::memcpy(&av, a, 32);
    std::memcpy(&bv, b, 32);
    c[static_cast<std::size_t>(l)] = mfma_scale_f32_16x16x128_f8f6f4<kFp4, kFp4>(av, bv, f32x4{0, 0, 0, 0}, 127, 127);
  });
  for (int mm = 0; mm < 16; ++mm) {
    for (int nn = 0; nn < 16; ++nn) {
      double want = 0.0;
      for (int k = 0; k < 128; ++k) {
        want += format_value(kFp4, nib(A[mm][k / 2], k % 2)) * format_value(kFp4, nib(B[k][nn / 2], nn % 2));
      }
      const int lane = nn + 16 * (mm / 4), item = mm % 4;  // C[4 group4 + i][lane16] = c_reg[i]
      EXPECT_EQ(static_cast<double>(c[static_cast<std::size_t>(lane)][item]), want) << "C[" << mm << "][" << nn << "]";
    }
  }
}

// ---------------------------------------------------------------- [SEED] the Q operand
// The decode kernel's Q operand (decode_query.hpp: query_operand, through its LDS layout) holds,
// for all 256 dims, what the seed's operand holds: byte t of lane (g, r), issue h = the natural
// dim d with inv(qperm)(d) = 128 h + 32 g + t.
TEST(EmuIndependentSources, QueryOperandIsTheSeedsInverseQpermOfItsLdsRead) {
  const auto inv_qperm = [](unsigned d) { return (d & 0x8Fu) | ((d >> 2) & 0x10u) | ((d << 1) & 0x60u); };
  unsigned natural_of[256];
  for (unsigned d = 0; d < 256; ++d) natural_of[inv_qperm(d)] = d;
  for (unsigned p = 0; p < 256; ++p) ASSERT_EQ(inv_qperm(natural_of[p]), p) << "inv(qperm) is a permutation";
  struct QRows {};
  std::vector<std::uint8_t> got(64 * 2 * 32);
  run_one_wave([&] {
    const std::uint32_t lds = lds_allocate<16 * 256, QRows>();
    const std::uint32_t l = lane_id();
    for (std::uint32_t j = 0; j < 4; ++j) {  // lane l writes chunk l % 16 of rows 4 (l / 16) + j: byte = its dim
      const std::uint32_t row = 4 * (l / 16) + j, chunk = l % 16;
      u32x4 w;
      for (std::uint32_t e = 0; e < 4; ++e) {
        const std::uint32_t d = 16 * chunk + 4 * e;
        w[e] = d | ((d + 1) << 8) | ((d + 2) << 16) | ((d + 3) << 24);
      }
      lds_store(uq::gfx950::decode_detail::query_chunk_at(lds, row, chunk), w);
    }
    barrier();
    for (int h = 0; h < 2; ++h) {
      const i32x8 op = uq::gfx950::decode_detail::query_operand<16>(lds, l, h);
      std::memcpy(&got[(l * 2 + static_cast<std::uint32_t>(h)) * 32], &op, 32);
    }
  });
  for (unsigned l = 0; l < 64; ++l)
    for (unsigned h = 0; h < 2; ++h)
      for (unsigned t = 0; t < 32; ++t) {
        EXPECT_EQ(got[(l * 2 + h) * 32 + t], natural_of[128 * h + 32 * (l / 16) + t]) << "lane " << l << ", issue " << h << ", byte " << t;
      }
}

// ---------------------------------------------------------------- [CK-TRITON] cache bits
// The header's cache-policy constants (no functional effect in the emulator) are the bits the
// buffer instructions' aux field gives them on gfx942/gfx950.
TEST(EmuIndependentSources, CachePolicyBitsAreThoseOfGfx942AndGfx950) {
  static_assert(cache::kSc0 == 1 << 0 && cache::kNt == 1 << 1 && cache::kSc1 == 1 << 4 && cache::kDefault == 0,
                "sc0 = bit 0, nt = bit 1, sc1 = bit 4");
  SUCCEED();
}

}  // namespace
}  // namespace emu_test
