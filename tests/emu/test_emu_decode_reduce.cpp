// The gfx950 partition reducer (arch/gfx950/reduce_kernel.hpp) in the emulator, on crafted
// partition results, compared three ways:
//  * with the float64 formula of spec ultraquant.md §5.4 (tolerance derived below);
//  * with the generic Kokkos reducer (src/uq/impl/reduce_generic.hpp) on the same partials:
//    within twice the fp32 part of that bound plus one bf16 ulp (the two sum in different
//    orders and take e^x differently), and bit for bit where every weight is exactly l_p
//    (all m_p equal) and every sum is exact in fp32, so that no order can change a bit;
//  * bit for bit with the kernel's documented fixed order (the reducer's header comment),
//    restated here in fp32 on the host with the emulator's own exp2: every output element and
//    every lse of every case.
// Cases: partition counts from 1 to 4096, empty partitions holding NaN partial rows (which
// must be skipped, never multiplied by 0), rows with no partition at all, weights that
// underflow, a strided output; the lse of every row (revision 2), and rows holding a
// partition of a non-finite query (l = m = NaN, spec §6), which must give all-NaN rows and a
// NaN lse.
#include "support/test_util.hpp"

#include "gfx950/decode_emulated.hpp"
#include "gfx950/launch_decode.hpp"
#include "uq/decode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace uqtest;
using HostMem = Kokkos::HostSpace;

struct ReduceCase {
  int num_seqs = 2, num_kv_heads = 1, qg = 6, partitions = 5;
  double empty_fraction = 0.3;  // partitions with m = -inf, l = 0 and a NaN partial row
  double m_spread = 10.0;       // m uniform in [-m_spread, 2]
  bool all_empty_row = false;   // (b 0, head 0) has no partition
  bool nonfinite_row = false;   // (last b, head 1): one partition has l = m = NaN (its partial row finite)
  bool exact = false;           // m = 1.5 where not empty, l and the partial values small integers
  std::uint64_t seed = 1;
};

struct Partials {
  uq::impl::DecodePartials<HostMem> views;
  std::int64_t rows = 0;
};

Partials make_partials(const ReduceCase& c) {
  Partials p;
  p.rows = static_cast<std::int64_t>(c.num_seqs) * c.num_kv_heads * c.partitions * c.qg;
  p.views.out = Kokkos::View<uq::bf16*, HostMem>("partial out", p.rows * 256);
  p.views.l = Kokkos::View<float*, HostMem>("partial l", p.rows);
  p.views.m = Kokkos::View<float*, HostMem>("partial m", p.rows);
  std::mt19937_64 rng(c.seed);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f), l(0.5f, 300.0f),
      m(static_cast<float>(-c.m_spread), 2.0f), unit(0.0f, 1.0f);
  for (std::int64_t row = 0; row < p.rows; ++row) {
    // row = ((b * Hk + h) * P + p) * QG + r
    const std::int64_t r = row % c.qg, bh = row / c.qg / c.partitions;
    const bool empty = unit(rng) < c.empty_fraction || (c.all_empty_row && bh == 0 && r == 0);
    p.views.m(row) = empty ? -INFINITY : c.exact ? 1.5f : m(rng);
    p.views.l(row) = empty ? 0.0f : c.exact ? std::floor(l(rng)) : l(rng);
    for (int d = 0; d < 256; ++d)
      p.views.out(row * 256 + d) =
          empty ? uq::bf16{kPoisonBf16} : uq::codec::float_to_bf16(c.exact ? std::round(value(rng)) : value(rng));
  }
  if (c.nonfinite_row) {  // partition P / 2 of (last sequence, query head 1): KV head 0, r = 1
    const std::int64_t row = (static_cast<std::int64_t>(c.num_seqs - 1) * c.num_kv_heads * c.partitions +
                              c.partitions / 2) * c.qg + 1;
    p.views.l(row) = NAN;
    p.views.m(row) = NAN;
    for (int d = 0; d < 256; ++d) p.views.out(row * 256 + d) = uq::codec::float_to_bf16(1.0f);
  }
  return p;
}

uq::impl::DecodeParams params_of(const ReduceCase& c) {
  uq::impl::DecodeParams params;
  params.num_kv_heads = c.num_kv_heads;
  params.qg = c.qg;
  params.partitions = c.partitions;
  return params;
}

// The float64 formula, with the tolerance of the fp32 kernel (derivation, u32 = 2^-24):
// w_p = l_p 2^((m_p - M) log2 e) carries a relative error <= (1.5 |m_p - M| + 4) u32 (the
// product by log2 e, its rounding, exp2's ~1 ulp, the product by l); the sums over P terms
// add <= P u32 of the sum of magnitudes, the division one more; so the fp32 result is
// within e32 = 2 (1.5 X + P + 6) u32 * sum_p w_p |partial_p| / S of the exact value (X the
// largest |m_p - M| whose weight is not negligible, <= 2 m_spread + 4 here), and the final
// bf16 rounding adds 2^-8 |y|. Weights below 2^-126 flush to 0 in the kernel (not in the
// formula): with m_spread <= 40 none is that small.
struct Expected {
  std::vector<double> out, bound;  // [B][Hq][256]
  std::vector<double> lse, lse_bound;  // [B][Hq]; lse NaN for a row holding a NaN l
};

// lse = M + log S. S carries a relative error <= (1.5 X + P + 4) u32 (its weights and their
// sum, as above), which log turns into an absolute one; log itself errs by <= 8 u32 max(1,
// |log S|) (arch/gfx950/decode_lse.hpp; libm's by less) and M + log S rounds once more.
double lse_bound_of(double lse, double log_s, double X, int partitions) {
  const double u32 = std::ldexp(1.0, -24);
  return u32 * ((1.5 * X + partitions + 4.0) + 8.0 * std::max(1.0, std::fabs(log_s)) + std::fabs(lse));
}

Expected expected_of(const ReduceCase& c, const Partials& p) {
  Expected e;
  const int hq_count = c.num_kv_heads * c.qg;
  const double u32 = std::ldexp(1.0, -24);
  const double X = 2.0 * c.m_spread + 4.0;
  for (int b = 0; b < c.num_seqs; ++b)
    for (int hq = 0; hq < hq_count; ++hq) {
      const int h = hq / c.qg, r = hq % c.qg;
      const std::int64_t first = (static_cast<std::int64_t>(b) * c.num_kv_heads + h) * c.partitions * c.qg + r;
      double M = -INFINITY;
      for (int q = 0; q < c.partitions; ++q) {
        const double m = p.views.m(first + static_cast<std::int64_t>(q) * c.qg);
        if (m > -INFINITY) M = std::max(M, m);
      }
      std::vector<double> w(static_cast<std::size_t>(c.partitions), 0.0);
      double S = 0.0;
      bool nonfinite = false;
      for (int q = 0; q < c.partitions; ++q) {
        const std::int64_t row = first + static_cast<std::int64_t>(q) * c.qg;
        const double m = p.views.m(row);
        nonfinite = nonfinite || std::isnan(p.views.l(row));
        if (m > -INFINITY) w[static_cast<std::size_t>(q)] = p.views.l(row) * std::exp(m - M);
        S += w[static_cast<std::size_t>(q)];
      }
      const double lse = nonfinite ? NAN : (S > 0.0 ? M + std::log(S) : -INFINITY);
      e.lse.push_back(lse);
      e.lse_bound.push_back(S > 0.0 && !nonfinite ? lse_bound_of(lse, std::log(S), X, c.partitions) : 0.0);
      for (int d = 0; d < 256; ++d) {
        if (nonfinite) {
          e.out.push_back(NAN);
          e.bound.push_back(0.0);
          continue;
        }
        double acc = 0.0, mag = 0.0;
        for (int q = 0; q < c.partitions; ++q) {
          if (w[static_cast<std::size_t>(q)] == 0.0) continue;
          const double v = uq::codec::bf16_to_float(p.views.out((first + static_cast<std::int64_t>(q) * c.qg) * 256 + d));
          acc += w[static_cast<std::size_t>(q)] * v;
          mag += w[static_cast<std::size_t>(q)] * std::fabs(v);
        }
        const double y = S > 0.0 ? acc / S : 0.0;
        e.out.push_back(y);
        e.bound.push_back(S > 0.0 ? 2.0 * (1.5 * X + c.partitions + 6.0) * u32 * mag / S + std::ldexp(std::fabs(y), -8) : 0.0);
      }
    }
  return e;
}

// The reducer's fixed order (arch/gfx950/reduce_kernel.hpp, its header comment), restated in
// fp32 on the host: slot s of the workgroup sums w_p x_p (and, for S, w_p) over partitions
// s, s + kReduceSlots, ... in order; the first and the second half of the slots are each added
// in order, then the two halves.
// e^x is the emulator's exp2 (uq::gfx950::fast_exp2, which follows UQ_EMU_EXP2) of x log2 e.
struct OrderModel {
  std::vector<std::uint16_t> out;  // [B][Hq][256]
  std::vector<float> lse;          // [B][Hq]
};

OrderModel documented_order(const ReduceCase& c, const Partials& p) {
  namespace g = uq::gfx950;
  OrderModel o;
  const int hq_count = c.num_kv_heads * c.qg;
  const std::uint32_t P = static_cast<std::uint32_t>(c.partitions);
  for (int b = 0; b < c.num_seqs; ++b)
    for (int hq = 0; hq < hq_count; ++hq) {
      const int h = hq / c.qg, r = hq % c.qg;
      const std::int64_t first = (static_cast<std::int64_t>(b) * c.num_kv_heads + h) * c.partitions * c.qg + r;
      const auto row = [&](std::uint32_t q) { return first + static_cast<std::int64_t>(q) * c.qg; };
      float M = -INFINITY;
      bool nonfinite = false;
      for (std::uint32_t q = 0; q < P; ++q) {
        if (p.views.m(row(q)) > -INFINITY) M = std::max(M, p.views.m(row(q)));
        nonfinite = nonfinite || std::isnan(p.views.l(row(q)));
      }
      if (nonfinite) {
        o.out.insert(o.out.end(), 256, static_cast<std::uint16_t>(g::kBf16NanPair & 0xFFFFu));
        o.lse.push_back(NAN);
        continue;
      }
      std::vector<float> w(P, 0.0f);
      std::uint32_t live = P;  // the kernel stops at the last l > 0; the weights past it are 0
      for (std::uint32_t q = 0; q < P; ++q) {
        const float m = p.views.m(row(q)), l = p.views.l(row(q));
        w[q] = l > 0.0f && m > -INFINITY ? l * g::fast_exp2((m - M) * g::kLog2e) : 0.0f;
      }
      float S_half[2] = {0.0f, 0.0f};
      for (std::uint32_t slot = 0; slot < g::kReduceSlots; ++slot) {
        float ws = 0.0f;
        for (std::uint32_t q = slot; q < live; q += g::kReduceSlots) ws += w[q];
        S_half[slot / (g::kReduceSlots / 2)] += ws;
      }
      const float S = S_half[0] + S_half[1];
      for (int d = 0; d < 256; ++d) {
        float half[2] = {0.0f, 0.0f};  // slots 0 .. 31, 32 .. 63
        for (std::uint32_t slot = 0; slot < g::kReduceSlots; ++slot) {
          float acc = 0.0f;
          for (std::uint32_t q = slot; q < live; q += g::kReduceSlots) {
            if (w[q] != 0.0f) acc += w[q] * uq::codec::bf16_to_float(p.views.out(row(q) * 256 + d));
          }
          half[slot / (g::kReduceSlots / 2)] += acc;
        }
        const float total = half[0] + half[1];
        const float y = S > 0.0f ? total / S : 0.0f;
        o.out.push_back(static_cast<std::uint16_t>(g::cvt_pk_bf16_f32(y, 0.0f) & 0xFFFFu));
      }
      o.lse.push_back(g::lse_of(M, S, false));
    }
  return o;
}

// Runs the emulated reducer into a view with the given dim stride (heads and sequences at
// odd offsets); returns the output bits in [B][Hq][256] order and checks the gaps.
using HostLse = Kokkos::View<float**, Kokkos::LayoutStride, HostMem, Kokkos::MemoryUnmanaged>;

// lse of the emulated reducer: [B][Hq] through a transposed view ([Hq][B] storage).
std::vector<float> g_emulated_lse;

std::vector<std::uint16_t> run_emulated(const ReduceCase& c, const Partials& p, std::int64_t dim_stride) {
  const std::int64_t H = c.num_kv_heads * c.qg;
  const std::int64_t sh = 256 * dim_stride + 1, ss = H * sh + 3;
  std::vector<uq::bf16> storage(static_cast<std::size_t>(c.num_seqs * ss + 1), uq::bf16{kPoisonBf16});
  const Kokkos::View<uq::bf16***, Kokkos::LayoutStride, HostMem, Kokkos::MemoryUnmanaged> out(
      storage.data(), Kokkos::LayoutStride(c.num_seqs, ss, H, sh, 256, dim_stride));
  std::vector<float> lse_storage(static_cast<std::size_t>(H * c.num_seqs), 12345.0f);
  const HostLse lse(lse_storage.data(), Kokkos::LayoutStride(c.num_seqs, 1, H, c.num_seqs));
  auto launch = uq::gfx950::decode_reduce_launch(p.views, out, params_of(c), c.num_seqs, nullptr);
  uq::impl::set_reduce_lse(launch, lse);
  uq::gfx950::emulate_decode_reduce(launch);
  g_emulated_lse.clear();
  for (int b = 0; b < c.num_seqs; ++b)
    for (std::int64_t h = 0; h < H; ++h) g_emulated_lse.push_back(lse(b, h));
  std::vector<std::uint16_t> bits;
  std::vector<bool> inside(storage.size(), false);
  for (int b = 0; b < c.num_seqs; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t d = 0; d < 256; ++d) {
        bits.push_back(out(b, h, d).bits);
        inside[static_cast<std::size_t>(b * ss + h * sh + d * dim_stride)] = true;
      }
  for (std::size_t i = 0; i < storage.size(); ++i) {
    if (!inside[i]) {
      EXPECT_EQ(storage[i].bits, kPoisonBf16) << "element " << i << " outside the output view was written";
    }
  }
  return bits;
}

std::vector<float> g_generic_lse;

// The generic reducer on the same partials (Kokkos::Serial: host views).
std::vector<std::uint16_t> run_generic(const ReduceCase& c, const Partials& p) {
  using Out = Kokkos::View<uq::bf16***, HostMem>;
  using Lse = Kokkos::View<float**, HostMem>;
  Out out("generic out", c.num_seqs, c.num_kv_heads * c.qg, 256);
  Lse lse("generic lse", c.num_seqs, c.num_kv_heads * c.qg);
  uq::impl::ReduceGeneric<Kokkos::DefaultHostExecutionSpace, Out, Lse> k;
  k.partials = p.views;
  k.out = out;
  k.lse = lse;
  k.has_lse = true;
  k.num_kv_heads = c.num_kv_heads;
  k.qg = c.qg;
  k.partitions = c.partitions;
  k.launch(Kokkos::DefaultHostExecutionSpace(), c.num_seqs);
  Kokkos::fence();
  std::vector<std::uint16_t> bits;
  for (const uq::bf16& x : to_host(out)) bits.push_back(x.bits);
  g_generic_lse = to_host(lse);
  return bits;
}

// Emulated vs float64 (bound above) and vs generic: both are fp32 evaluations of the same
// formula, so they differ by at most twice the fp32 part of the bound plus one bf16 ulp of the
// output (when the two fp32 values straddle a rounding boundary).
void check(const ReduceCase& c, std::int64_t dim_stride = 1) {
  const Partials p = make_partials(c);
  const Expected e = expected_of(c, p);
  const std::vector<std::uint16_t> emu = run_emulated(c, p, dim_stride);
  const std::vector<std::uint16_t> gen = run_generic(c, p);
  const OrderModel order = documented_order(c, p);
  ASSERT_EQ(emu.size(), e.out.size());
  ASSERT_EQ(order.out.size(), e.out.size());
  ASSERT_EQ(gen.size(), e.out.size());
  int reported = 0;
  std::int64_t identical = 0;
  for (std::size_t i = 0; i < emu.size(); ++i) {
    const double got = uq::codec::bf16_to_float(uq::bf16{emu[i]});
    const double generic = uq::codec::bf16_to_float(uq::bf16{gen[i]});
    identical += emu[i] == gen[i];
    if (emu[i] != order.out[i] && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": emulated bits " << emu[i] << ", the documented order gives " << order.out[i];
    if (c.exact && emu[i] != gen[i] && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": exact data, emulated bits " << emu[i] << ", generic " << gen[i];
    if (std::isnan(e.out[i])) {  // a row holding a NaN l: all NaN on both
      if (!(std::isnan(got) && std::isnan(generic)) && reported++ < 5)
        ADD_FAILURE() << "element " << i << ": a row with a NaN l must be NaN, emulated " << got << ", generic "
                      << generic;
      continue;
    }
    const double ulp = generic == 0.0 ? 0.0 : std::ldexp(1.0, std::ilogb(generic) - 7);
    const double fp32_part = e.bound[i] - std::ldexp(std::fabs(e.out[i]), -8);
    if (!(std::fabs(got - e.out[i]) <= e.bound[i]) && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": emulated " << got << ", float64 " << e.out[i] << ", bound " << e.bound[i];
    if (!(std::fabs(got - generic) <= ulp + 2.0 * fp32_part) && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": emulated " << got << ", generic " << generic;
    if (e.bound[i] == 0.0 && emu[i] != 0u && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": a row without partitions must be exactly +0, got bits " << emu[i];
  }
  ASSERT_EQ(g_emulated_lse.size(), e.lse.size());
  ASSERT_EQ(g_generic_lse.size(), e.lse.size());
  for (std::size_t i = 0; i < e.lse.size(); ++i) {
    EXPECT_TRUE(std::memcmp(&g_emulated_lse[i], &order.lse[i], 4) == 0 ||
                (std::isnan(g_emulated_lse[i]) && std::isnan(order.lse[i])))
        << "row " << i << ": lse " << g_emulated_lse[i] << ", the documented order gives " << order.lse[i];
    for (const float got : {g_emulated_lse[i], g_generic_lse[i]}) {
      if (std::isnan(e.lse[i]) || e.lse[i] == -INFINITY) {
        EXPECT_TRUE(std::isnan(e.lse[i]) ? std::isnan(got) : got == -INFINITY) << "row " << i << ": lse " << got;
        continue;
      }
      EXPECT_LE(std::fabs(got - e.lse[i]), e.lse_bound[i]) << "row " << i << ": lse " << got << ", float64 " << e.lse[i];
    }
  }
  std::printf("[ reducer  ] B %d Hk %d QG %d P %4d: %lld/%zu identical to the generic reducer\n", c.num_seqs,
              c.num_kv_heads, c.qg, c.partitions, static_cast<long long>(identical), emu.size());
}

TEST(EmuDecodeReduce, MatchesFormulaAndGenericAcrossPartitionCounts) {
  for (int P : {1, 2, 5, 64, 257, 1025}) {  // 1025: the build for P > 1024
    ReduceCase c;
    c.partitions = P;
    c.qg = P % 2 ? 6 : 16;
    c.num_kv_heads = 2;
    c.seed = 10 + P;
    check(c);
  }
}

// All m_p equal: every weight is l_p exactly (exp 0 = 1 in both paths), and with integer l_p
// and partial values every product and sum is an integer below 2^24, exact in fp32 in any
// order, so the emulated and the generic reducer must agree bit for bit (outputs; the lse
// goes through two different logs). Not run with exp2 perturbed: exp2(0) is then not 1.
TEST(EmuDecodeReduce, BitIdenticalToTheGenericReducerWhereEverySumIsExact) {
  for (int P : {1, 3, 64, 257, 1000}) {
    ReduceCase c;
    c.partitions = P;
    c.qg = 8;
    c.num_kv_heads = 2;
    c.exact = true;
    c.seed = 500 + P;
    check(c);
  }
}

TEST(EmuDecodeReduce, ManyPartitionsWithSpreadMaxima) {
  ReduceCase c;
  c.num_seqs = 1;
  c.qg = 8;
  c.partitions = 4096;
  c.empty_fraction = 0.9;
  c.m_spread = 40.0;  // weights from 1 down to e^-42
  c.seed = 4096;
  check(c);
}

TEST(EmuDecodeReduce, EmptyRowsGiveZeroAndNanPartialsOfEmptyPartitionsAreSkipped) {
  ReduceCase c;
  c.num_seqs = 3;
  c.partitions = 7;
  c.empty_fraction = 0.5;
  c.all_empty_row = true;
  c.seed = 77;
  check(c);
}

TEST(EmuDecodeReduce, NonFiniteQueryRowIsNanWithoutReadingItsPartials) {
  for (int P : {1, 6, 300}) {
    ReduceCase c;
    c.num_seqs = 2;
    c.num_kv_heads = 2;
    c.qg = 8;
    c.partitions = P;
    c.nonfinite_row = true;
    c.seed = 90 + P;
    check(c);
  }
}

TEST(EmuDecodeReduce, StridedOutput) {
  ReduceCase c;
  c.num_seqs = 2;
  c.num_kv_heads = 3;
  c.qg = 8;
  c.partitions = 9;
  c.seed = 3;
  check(c, 3);
}

TEST(EmuDecodeReduce, RejectsBadArguments) {
  for (int P : {0, 4097}) {  // 4097: past the reducer's m, l and weights (the spec's bound is 4096)
    uq::gfx950::DecodeReduceLaunch l;
    l.num_seqs = 1;
    l.num_kv_heads = 1;
    l.qg = 6;
    l.partitions = P;
    try {
      uq::gfx950::emulate_decode_reduce(l);
      ADD_FAILURE() << "expected uq::Error for P = " << P;
    } catch (const uq::Error& e) {
      EXPECT_NE(std::string(e.what()).find("uq::gfx950::launch_decode_reduce: argument 'partitions'"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
