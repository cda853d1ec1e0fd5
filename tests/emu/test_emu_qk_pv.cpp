// The end-to-end kernel of kernels/qk_pv_kernel.hpp (scaled FP4 x E4M3 QK product, then the
// transpose-load bf16 PV product), run in the emulator from the same source that
// gfx950_qk_pv.hip compiles for gfx950, against a float64 reference.
//
// Why exact equality is the right assertion here:
//  * S: K values are E2M1 (multiples of 0.5, |.| <= 6); Q8 values are E4M3 with exponent
//    >= -3 (multiples of 2^-6, |.| <= 15) plus one clamped 448 per query row; block scales
//    2^(eK + eQ - 254) lie in [2^-1, 2^1]. Every scaled product is a multiple of 2^-8 and
//    |S| <= 4 * 2 * (31 * 6 * 15 + 6 * 448) = 43824 < 2^16, so S and every partial sum need
//    at most 24 significant bits: exact in fp32 in any summation order (so also on the GPU).
//  * O: P = bf16(S) (8 significant bits), V = E2M1 * 2^(e-127) (2 bits); the 16 products
//    and their sums are exact in double (they span far fewer than 53 bits), and the
//    emulator, like the reference, rounds that exact sum once to fp32. (On the GPU, whose
//    accumulation order is unknown, the bound would be |O - ref| <= 16 * 2^-24 * sum |P V|.)
#include "emu_test_support.hpp"
#include "kernels/qk_pv_kernel.hpp"

namespace emu_test {
namespace {

using namespace uq_emu_test;

struct Inputs {
  std::uint32_t heads = 0;
  std::vector<std::uint8_t> k, k_scale, q_scale, v, v_scale;
  std::vector<float> q;
};

// An E4M3 value with exponent -3..3 (or 0), nudged in magnitude by less than half the
// distance to its neighbours (a quarter quantum below, where a power of two's lower
// neighbour is only half a quantum away), so the kernel's RNE conversion rounds it back.
float nudged_e4m3(std::mt19937& gen) {
  std::uniform_int_distribution<unsigned> exponent_field(4, 10), mantissa(0, 7), sign(0, 1);
  std::uniform_real_distribution<double> nudge(-0.2, 0.45);
  if (mantissa(gen) == 0 && sign(gen) == 0) {
    return static_cast<float>(nudge(gen) * std::ldexp(1.0, -10));  // rounds to +-0
  }
  const unsigned code = sign(gen) << 7 | exponent_field(gen) << 3 | mantissa(gen);
  const double v = uqref::e4m3_value(static_cast<std::uint8_t>(code));
  int e2 = 0;
  std::frexp(v, &e2);
  const double quantum = std::ldexp(1.0, e2 - 1 - 3);
  return static_cast<float>(std::copysign(std::fabs(v) + nudge(gen) * quantum, v));
}

Inputs make_inputs(std::uint32_t heads) {
  Inputs in;
  in.heads = heads;
  std::mt19937& gen = rng();
  std::uniform_int_distribution<unsigned> byte(0, 255), bit(0, 1);
  std::uniform_int_distribution<unsigned> pos(0, kDims - 1);
  for (std::uint32_t i = 0; i < heads * kKBytes; ++i) in.k.push_back(static_cast<std::uint8_t>(byte(gen)));
  for (std::uint32_t i = 0; i < heads * kKScaleBytes; ++i) in.k_scale.push_back(static_cast<std::uint8_t>(127 + bit(gen)));
  for (std::uint32_t i = 0; i < heads * kQScaleBytes; ++i) in.q_scale.push_back(static_cast<std::uint8_t>(126 + bit(gen)));
  for (std::uint32_t i = 0; i < heads * kVBytes; ++i) in.v.push_back(static_cast<std::uint8_t>(byte(gen)));
  for (std::uint32_t i = 0; i < heads * kVScaleBytes; ++i) in.v_scale.push_back(static_cast<std::uint8_t>(126 + bit(gen)));
  in.q.resize(heads * kQFloats);
  for (float& x : in.q) x = nudged_e4m3(gen);
  // One out-of-range value per query row: the kernel clamps it to +-448 before converting.
  for (std::uint32_t row = 0; row < heads * kQueries; ++row) {
    in.q[row * kDims + pos(gen)] = bit(gen) ? 1000.0f : -3.0e9f;
  }
  return in;
}

struct Outputs {
  std::vector<float> s, o;
};

Outputs run_emulated(const Inputs& in, std::uint32_t grid_heads, std::uint32_t range_heads) {
  Outputs out;
  out.s.assign(grid_heads * kTokens * kQueries, poison_float());
  out.o.assign(grid_heads * kQueries * kValueDims, poison_float());
  const QkPvArgs args{in.k.data(),  in.k_scale.data(), in.q.data(),     in.q_scale.data(),
                      in.v.data(),  in.v_scale.data(), out.s.data(),    out.o.data(),
                      range_heads};
  uq::emu::LaunchConfig config;
  config.grid = {grid_heads, 1, 1};
  uq::emu::launch(config, [&] { qk_pv_kernel(args); });
  return out;
}

struct Expected {
  std::vector<float> s, o;
};

Expected reference(const Inputs& in) {
  Expected ex;
  for (std::uint32_t h = 0; h < in.heads; ++h) {
    // S[t][q]
    double p[kTokens][kQueries];
    for (std::uint32_t t = 0; t < kTokens; ++t) {
      for (std::uint32_t q = 0; q < kQueries; ++q) {
        double s = 0.0;
        for (std::uint32_t kb = 0; kb < 4; ++kb) {
          const double scale = e8m0_value(in.k_scale[h * kKScaleBytes + kb * kTokens + t]) *
                               e8m0_value(in.q_scale[h * kQScaleBytes + kb * kQueries + q]);
          double block = 0.0;
          for (std::uint32_t k = 32 * kb; k < 32 * kb + 32; ++k) {
            const std::uint8_t byte = in.k[h * kKBytes + t * (kDims / 2) + k / 2];
            const double kv = uqref::e2m1_value(k % 2 == 0 ? byte & 15u : byte >> 4u);
            const double q8 = uqref::e4m3_value(uqref::e4m3_round(in.q[h * kQFloats + q * kDims + k]));
            block += kv * q8;
          }
          s += scale * block;
        }
        ex.s.push_back(static_cast<float>(s));
        p[t][q] = uqref::bf16_value(uqref::bf16_round(static_cast<float>(s)));
      }
    }
    // O[q][d]
    for (std::uint32_t q = 0; q < kQueries; ++q) {
      for (std::uint32_t d = 0; d < kValueDims; ++d) {
        double o = 0.0;
        for (std::uint32_t t = 0; t < kTokens; ++t) {
          const std::uint8_t byte = in.v[h * kVBytes + t * (kValueDims / 2) + d / 2];
          const double v = uqref::e2m1_value(d % 2 == 0 ? byte & 15u : byte >> 4u) *
                           e8m0_value(in.v_scale[h * kVScaleBytes + t * 2 + d / 32]);
          o += p[t][q] * v;
        }
        ex.o.push_back(static_cast<float>(o));
      }
    }
  }
  return ex;
}

TEST(EmuQkPv, MatchesTheFloat64Reference) {
  const Inputs in = make_inputs(3);
  const Outputs got = run_emulated(in, 3, 3);
  const Expected ex = reference(in);
  ASSERT_EQ(got.s.size(), ex.s.size());
  ASSERT_EQ(got.o.size(), ex.o.size());
  int nonzero = 0;
  for (std::size_t i = 0; i < ex.s.size(); ++i) {
    ASSERT_EQ(bits_of(got.s[i]), bits_of(ex.s[i])) << "S element " << i << ": " << got.s[i]
                                                    << " vs " << ex.s[i];
    nonzero += ex.s[i] != 0.0f;
  }
  for (std::size_t i = 0; i < ex.o.size(); ++i) {
    ASSERT_EQ(bits_of(got.o[i]), bits_of(ex.o[i])) << "O element " << i << ": " << got.o[i]
                                                    << " vs " << ex.o[i];
  }
  EXPECT_GT(nonzero, static_cast<int>(ex.s.size()) * 9 / 10);  // not a test on zeros
}

TEST(EmuQkPv, OutOfRangeWorkgroupReadsZerosAndWritesNothing) {
  // The buffer ranges cover 2 heads but 3 workgroups run: the third reads zeros (not the
  // memory behind the arrays) and its stores are dropped, so its outputs stay poisoned.
  const Inputs in = make_inputs(3);
  const Outputs got = run_emulated(in, 3, 2);
  Inputs two = in;
  two.heads = 2;
  const Expected ex = reference(two);
  for (std::size_t i = 0; i < ex.s.size(); ++i) ASSERT_EQ(bits_of(got.s[i]), bits_of(ex.s[i])) << i;
  for (std::size_t i = 0; i < ex.o.size(); ++i) ASSERT_EQ(bits_of(got.o[i]), bits_of(ex.o[i])) << i;
  for (std::size_t i = ex.s.size(); i < got.s.size(); ++i) ASSERT_EQ(bits_of(got.s[i]), kPoison) << i;
  for (std::size_t i = ex.o.size(); i < got.o.size(); ++i) ASSERT_EQ(bits_of(got.o[i]), kPoison) << i;
}

}  // namespace
}  // namespace emu_test
