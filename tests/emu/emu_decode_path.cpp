// The emulated gfx950 decode path of the tests and its comparison with the generic path
// (emu_decode_path.hpp says what and why).
#include "emu_decode_path.hpp"

#include "gfx950/decode_emulated.hpp"
#include "gfx950/launch_decode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace uqtest {
namespace {

using HostMem = Kokkos::HostSpace;

template <class View>
auto host_copy(const View& v) {
  return Kokkos::create_mirror_view_and_copy(HostMem(), v);
}

// ---------------------------------------------------------------- input variants
using Bf16Strided = Kokkos::View<const uq::bf16***, Kokkos::LayoutStride, Mem>;
using CacheStrided = Kokkos::View<const std::uint8_t****, Kokkos::LayoutStride, Mem>;

// q copied into a 1-D buffer and viewed with the variant's strides.
template <class Q>
Bf16Strided relayout_q(const Q& q, const Variant& v, Kokkos::View<uq::bf16*, Mem>& storage) {
  const std::int64_t B = q.extent(0), H = q.extent(1);
  std::int64_t sd = 1, sh = 256, ss = 0;
  if (v.q_dim_stride > 0) {
    sd = v.q_dim_stride;
    sh = 256 * sd + 1;  // odd: rows start 2-byte aligned
  } else if (v.odd_q_head_stride) {
    sh = 257;
  }
  ss = H * sh + 3;
  storage = Kokkos::View<uq::bf16*, Mem>("q storage", static_cast<std::size_t>(B * ss + 1));
  auto hs = Kokkos::create_mirror_view(storage);
  Kokkos::deep_copy(hs, uq::bf16{kPoisonBf16});
  const auto hq = host_copy(q);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t d = 0; d < 256; ++d) hs(b * ss + h * sh + d * sd) = hq(b, h, d);
  Kokkos::deep_copy(storage, hs);
  const Kokkos::LayoutStride layout(B, ss, H, sh, 256, sd);
  return Bf16Strided(storage.data(), layout);
}

// The cache copied into blocks `padding` bytes apart, with the variant's byte changes.
template <class Cache, class Tables, class Lens>
CacheStrided relayout_cache(const Cache& cache, const Tables& tables, const Lens& lens, const Variant& v,
                            Kokkos::View<std::uint8_t*, Mem>& storage) {
  const std::int64_t NB = cache.extent(0), BS = cache.extent(1), HK = cache.extent(2), SB = cache.extent(3);
  const std::int64_t dense = BS * HK * SB, stride = dense + v.block_padding;
  storage = Kokkos::View<std::uint8_t*, Mem>("cache storage", static_cast<std::size_t>(std::max<std::int64_t>(1, NB * stride)));
  auto hs = Kokkos::create_mirror_view(storage);
  Kokkos::deep_copy(hs, std::uint8_t{0xFF});
  const auto hc = host_copy(cache);
  for (std::int64_t n = 0; n < NB; ++n)
    for (std::int64_t i = 0; i < dense; ++i) hs(n * stride + i) = hc.data()[n * dense + i];
  const auto ht = host_copy(tables);
  const auto hl = host_copy(lens);
  const std::int64_t cap = static_cast<std::int64_t>(tables.extent(1)) * BS;
  if (v.poison_unattended || v.zero_v_scales_of_seq0) {
    // Blocks attended by some (sequence, logical block), and up to which position.
    std::vector<std::int64_t> attended_positions(static_cast<std::size_t>(NB), 0);
    for (std::size_t b = 0; b < lens.extent(0); ++b) {
      const std::int64_t L = std::min<std::int64_t>(std::max<std::int32_t>(hl(b), 0), cap);
      for (std::int64_t j = 0; j * BS < L; ++j) {
        const std::int32_t id = ht(b, j);
        if (id < 0 || id >= NB) continue;
        attended_positions[static_cast<std::size_t>(id)] = std::min<std::int64_t>(BS, L - j * BS);
        if (v.zero_v_scales_of_seq0 && b == 0)
          for (std::int64_t pos = 0; pos < BS; ++pos)
            for (std::int64_t h = 0; h < HK; ++h)
              for (int g = 0; g < 8; ++g) hs(id * stride + (pos * HK + h) * SB + 264 + g) = 0;
      }
    }
    if (v.poison_unattended)
      for (std::int64_t n = 0; n < NB; ++n)
        for (std::int64_t i = attended_positions[static_cast<std::size_t>(n)] * HK * SB; i < dense; ++i)
          hs(n * stride + i) = 0xFF;
  }
  Kokkos::deep_copy(storage, hs);
  const Kokkos::LayoutStride layout(NB, stride, BS, HK * SB, HK, SB, SB, 1);
  return CacheStrided(storage.data(), layout);
}

// ---------------------------------------------------------------- the emulated path
// The views are copied to host arrays, converted by uq/core/decode_launch.hpp exactly as
// decode_dispatch.hpp does for HIP, and run by the emulator's launchers; the result lands in out
// and lse.
template <class Q, class Cache, class Tables, class Lens, class Out>
PathResults run_emulated(const uq::impl::DecodeParams& params, const Variant& v, const Q& q, const Cache& cache,
                         const Tables& tables, const Lens& lens, const Out& out, const LseView& lse) {
  const auto hq = host_copy(q);
  const auto hcache = host_copy(cache);
  const auto htables = host_copy(tables);
  const auto hlens = host_copy(lens);
  const int num_seqs = static_cast<int>(q.extent(0));
  const std::int64_t H = static_cast<std::int64_t>(out.extent(1));
  const std::int64_t rows = static_cast<std::int64_t>(num_seqs) * params.num_kv_heads * params.partitions * params.qg;
  const bool direct = params.partitions == 1 && !v.two_stages;

  uq::impl::DecodePartials<HostMem> partials = poisoned_host_partials(rows);
  Kokkos::View<unsigned long long[uq::kNumCounters], HostMem> counters("emu counters");
  auto hlse = Kokkos::create_mirror_view(HostMem(), lse);  // lse itself on a host backend (strided)

  auto launch = uq::gfx950::decode_partitions_launch(hq, uq::impl::cache_addressing(hcache), htables, hlens, partials,
                                                     counters, params, num_seqs, nullptr);
  auto hout = Kokkos::create_mirror_view(HostMem(), out);
  // Output rows 2 elements apart per dim, heads and sequences at odd offsets; the gaps must
  // stay untouched.
  const std::int64_t sd = 2, sh = 2 * 256 + 1, ss = H * sh + 7;
  std::vector<uq::bf16> storage(static_cast<std::size_t>(num_seqs * ss + 1), uq::bf16{kPoisonBf16});
  const Kokkos::View<uq::bf16***, Kokkos::LayoutStride, HostMem, Kokkos::MemoryUnmanaged> strided(
      storage.data(), Kokkos::LayoutStride(num_seqs, ss, H, sh, 256, sd));
  const auto run_into = [&](const auto& o) {
    if (direct) {
      uq::impl::set_direct_outputs(launch, o, hlse);
      uq::gfx950::emulate_decode_partitions(launch);
    } else {
      uq::gfx950::emulate_decode_partitions(launch);
      auto reduce = uq::gfx950::decode_reduce_launch(partials, o, params, num_seqs, nullptr);
      uq::impl::set_reduce_lse(reduce, hlse);
      uq::gfx950::emulate_decode_reduce(reduce);
    }
  };
  if (v.strided_out) {
    run_into(strided);
    std::vector<bool> inside(storage.size(), false);
    for (int b = 0; b < num_seqs; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t d = 0; d < 256; ++d) {
          hout(b, h, d) = strided(b, h, d);
          inside[static_cast<std::size_t>(b * ss + h * sh + d * sd)] = true;
        }
    for (std::size_t i = 0; i < storage.size(); ++i) {
      if (!inside[i]) {
        EXPECT_EQ(storage[i].bits, kPoisonBf16) << "strided output: element " << i << " outside the view was written";
      }
    }
  } else {
    run_into(hout);
  }
  Kokkos::deep_copy(out, hout);
  Kokkos::deep_copy(lse, hlse);

  PathResults r;
  r.lse = to_host(lse);
  for (std::int64_t i = 0; i < rows && !direct; ++i) {
    r.l.push_back(partials.l(i));
    r.m.push_back(partials.m(i));
    // Revision 2: a partial row exactly where l > 0 (NaN: a non-finite query writes none).
    int poisoned = 0;
    for (int d = 0; d < 256; ++d) poisoned += partials.out(i * 256 + d).bits == kPoisonBf16;
    const bool expect_row = partials.l(i) > 0.0f;
    EXPECT_EQ(poisoned, expect_row ? 0 : 256) << "partition row " << i << " (l = " << partials.l(i) << ")";
  }
  if (direct) {  // no partial result touched
    for (std::int64_t i = 0; i < rows; ++i) EXPECT_EQ(partials.l(i), kPoisonPartialL) << "direct run wrote partition row " << i;
  }
  for (int i = 0; i < uq::kNumCounters; ++i) r.status.counts[i] = counters(i);
  return r;
}

// Both paths on the (possibly re-laid-out) inputs; the emulated output goes to check_decode.
template <class Q, class Cache, class Tables, class Lens, class Out>
void run_both_on(const DecodeCase& c, const Variant& v, BothPaths& both, const Q& q, const Cache& cache,
                 const Tables& tables, const Lens& lens, const Out& out, const LseView& lse) {
  uq::DecodeConfig cfg;
  cfg.softmax_scale = c.scale;
  cfg.q_rotated = c.q_rotated;
  cfg.partitions = c.partitions;
  cfg.backend = uq::Backend::Generic;
  cfg.check = false;
  uq::DecodeShape shape = uq::decode_shape_of(q, cache, tables, cfg);
  shape.max_blocks_per_seq += v.plan_extra_blocks;
  uq::DecodePlan<Exec> plan(Exec(), shape, cfg);
  Kokkos::View<uq::bf16***, Mem> generic_out("generic out", q.extent(0), q.extent(1), 256);
  Kokkos::View<float**, Mem> generic_lse("generic lse", q.extent(0), q.extent(1));
  if (v.two_stages) {
    plan.run_partitions(q, cache, tables, lens);
    plan.run_reduce(static_cast<int>(q.extent(0)), generic_out, generic_lse);
  } else {
    Kokkos::deep_copy(plan.partials().l, kPoisonPartialL);
    plan.run(q, cache, tables, lens, generic_out, generic_lse);
  }
  for (const uq::bf16& x : to_host(generic_out)) both.generic.out.push_back(x.bits);
  both.generic.lse = to_host(generic_lse);
  if (plan.launches_per_run() == 2 || v.two_stages) {
    const std::size_t rows = static_cast<std::size_t>(q.extent(0)) * plan.shape().num_kv_heads * plan.partitions() *
                             plan.shape().qg;
    both.generic.l = to_host(plan.partials().l);
    both.generic.m = to_host(plan.partials().m);
    both.generic.l.resize(rows);
    both.generic.m.resize(rows);
  }
  both.generic.status = plan.status();
  both.partitions = plan.partitions();
  both.tgpp = plan.tile_groups_per_partition();

  uq::impl::DecodeParams params;
  params.num_kv_heads = plan.shape().num_kv_heads;
  params.qg = plan.shape().qg;
  params.max_blocks_per_seq = static_cast<int>(tables.extent(1));  // the run's table, as DecodePlan::run
  params.partitions = plan.partitions();
  params.tgpp = plan.tile_groups_per_partition();
  params.scale = c.scale;
  params.q_rotated = c.q_rotated;
  const auto start = std::chrono::steady_clock::now();
  both.emulated = run_emulated(params, v, q, cache, tables, lens, out, lse);
  both.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

// ---------------------------------------------------------------- emulated vs generic
// Tolerance of the emulated kernel against the generic path, per element d of a row. Both
// run the same algorithm (same partitions and tiles, fp32 scores x scale, online softmax,
// bf16 P, bf16 partials, the reducer); they differ only in
//  (a) fp32 summation order of the scores: the scaled MFMA sums each 128-dim half exactly
//      and rounds once (the GPU's internal order is unknown; any order is within the bound),
//      the generic kernel rounds after every product of a group and after each group; each
//      score is within 48 u32 score_abs of the exact one (at most 40 roundings of partial sums
//      bounded by score_abs, generously), so the two differ by <= 96 u32 score_abs;
//  (b) exp2(x log2 e) by the hardware exp2 (~1 ulp, the product x log2 e adds |x| u32 in the
//      exponent) vs the library's exp (~1 ulp): p and alpha differ by a relative <= 4 u32
//      (1 + |x|) <= 8 u32 (1 + score_abs), with |x| <= 2 score_abs;
//      (a) and (b) give delta = 96 u32 score_abs + 8 u32 (1 + score_abs) per weight, and the
//      normalised weights, hence the output, move by <= 2.01 * 2 delta * vmax_d;
//  (c) the P.V sums: 16 tokens exact per MFMA (emulator; the GPU sums in an unknown order)
//      then one fp32 rounding, vs one rounding per token: each within (n + 16) u32 vmax_d of
//      the exact sum, so <= 2 (n + 16) u32 vmax_d apart; the reducer's fp32 sums add less;
//  (d) the three bf16 roundings (P, the partial output, the final output) applied to values
//      that differ by (a)-(c): the two results can land on neighbouring bf16 values when a
//      value lies within that tiny difference of a rounding boundary (a fraction of about
//      2^-14 of the roundings). A final-rounding flip costs one bf16 ulp of the output; a
//      partial flip costs one ulp of that partial (<= 2^-7 vmax_d) times its weight <= 1; a P
//      flip costs 2^-7 p_t v_t / l <= 2^-7 vmax_d.
// smooth = (a) + (b) + (c); flips = one ulp of the output + 2^-7 vmax_d. The test requires
// |emulated - generic| <= smooth + flips everywhere, and <= smooth for all but 1 in 200
// elements (the measured fraction is far smaller: most elements are bit-identical).
GenericTolerance generic_tolerance(double generic, double vmax, double score_abs, std::int64_t attended) {
  const double u32 = std::ldexp(1.0, -24);
  const double delta = 96.0 * u32 * score_abs + 8.0 * u32 * (1.0 + score_abs);
  GenericTolerance t;
  t.smooth = 2.01 * 2.0 * delta * vmax + 2.0 * static_cast<double>(attended + 16) * u32 * vmax + 1e-30;
  const int e = generic == 0.0 ? -133 : std::ilogb(generic);
  t.flips = std::ldexp(1.0, e - 7) + std::ldexp(1.0, -7) * vmax;
  return t;
}

double lse_generic_tolerance(double generic_lse, double score_abs, double attended) {
  const double u32 = std::ldexp(1.0, -24);
  return u32 * (113.0 * score_abs + 4.2 * attended + 26.0 + 11.0 * std::fabs(generic_lse));
}

namespace {

struct GenericComparison {
  std::int64_t elements = 0, identical = 0, beyond_smooth = 0;
  double max_err_over_tol = 0.0;
  double max_lse_err_over_tol = 0.0;
};

// Partition rows: the same ones empty (m = -inf, l = 0), m and l close otherwise. m is the
// maximum of scores that differ by (a): |dm| <= 96 u32 (|m| + S) where S bounds the score
// magnitudes of the row (score_abs of its query head). l sums <= 4096 probabilities in (0, 1]
// that differ by (b) and the order of the sums: <= (8 (1 + S) + 4096) u32 l, plus the effect of
// dm on every p: 2 |dm| l.
void compare_partitions(const DecodeCase& c, const PathResults& e, const PathResults& g,
                        const uqref::DecodeResult& ref, int partitions, int hq) {
  ASSERT_EQ(e.m.size(), g.m.size());
  const double u32 = std::ldexp(1.0, -24);
  for (std::size_t i = 0; i < e.m.size(); ++i) {
    ASSERT_FALSE(e.l[i] == kPoisonPartialL || e.m[i] == kPoisonPartialL) << c.name() << ": partition row " << i << " not written";
    ASSERT_EQ(std::isnan(e.l[i]), std::isnan(g.l[i])) << c.name() << ": partition row " << i << " (non-finite q)";
    if (std::isnan(g.l[i])) {  // a non-finite query row: l = m = NaN on both paths
      ASSERT_TRUE(std::isnan(e.m[i]) && std::isnan(g.m[i])) << c.name() << ": partition row " << i;
      continue;
    }
    ASSERT_EQ(e.m[i] == -INFINITY, g.m[i] == -INFINITY) << c.name() << ": partition row " << i;
    if (g.m[i] == -INFINITY) {
      ASSERT_EQ(e.l[i], 0.0f) << c.name() << ": empty partition row " << i;
      continue;
    }
    // row i = ((b * Hk + h) * P + p) * QG + r -> query head h * QG + r of sequence b
    const std::size_t qg = static_cast<std::size_t>(c.qg);
    const std::size_t r = i % qg, bh = i / qg / static_cast<std::size_t>(partitions);
    const std::size_t head = (bh % static_cast<std::size_t>(c.num_kv_heads)) * qg + r;
    const std::size_t b = bh / static_cast<std::size_t>(c.num_kv_heads);
    const double S = ref.score_abs[b * static_cast<std::size_t>(hq) + head];
    const double m_tol = 96.0 * u32 * (std::fabs(g.m[i]) + S);
    EXPECT_LE(std::fabs(e.m[i] - g.m[i]), m_tol) << c.name() << ": partition row " << i << " m";
    const double l_tol = (8.0 * (1.0 + S) + 4096.0) * u32 * g.l[i] + 2.0 * m_tol * g.l[i];
    EXPECT_LE(std::fabs(e.l[i] - g.l[i]), l_tol) << c.name() << ": partition row " << i << " l";
  }
}

// The lse of both paths (same rows -inf, same rows NaN), otherwise within (derivation as
// generic_tolerance, u32 = 2^-24, S = score_abs, n = attended tokens): (a) the scores, lse
// being 1-Lipschitz in them: 96 u32 S; (b) exp2 vs exp per weight: 8 u32 (1 + S); (c) the
// orders of the sums of l and of the reducer's weights, each within (2.1 n + 4) u32 relative
// of the exact (tests/support/lse_tolerance.hpp): 4.2 (n + 2) u32; (d) the emulated kernel's
// log (<= 8 u32 max(1, |log W|), arch/gfx950/decode_lse.hpp, |log W| <= |lse| + S) vs libm's
// (1 u32): 9 u32 (1 + |lse| + S); the final M + log W on both: 2 u32 |lse|.
// Sum: u32 (113 S + 4.2 n + 26 + 11 |lse|): lse_generic_tolerance.
double compare_lse(const DecodeCase& c, const PathResults& e, const PathResults& g, const uqref::DecodeResult& ref) {
  EXPECT_EQ(e.lse.size(), g.lse.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < e.lse.size() && i < g.lse.size(); ++i) {
    if (std::isnan(g.lse[i]) || g.lse[i] == -INFINITY) {
      EXPECT_TRUE(std::isnan(g.lse[i]) ? std::isnan(e.lse[i]) : e.lse[i] == -INFINITY)
          << c.name() << ": row " << i << ": emulated lse " << e.lse[i] << ", generic " << g.lse[i];
      continue;
    }
    const double tol = lse_generic_tolerance(g.lse[i], ref.score_abs[i], static_cast<double>(ref.attended[i]));
    const double err = std::fabs(static_cast<double>(e.lse[i]) - g.lse[i]);
    worst = std::max(worst, std::isfinite(e.lse[i]) ? err / tol : INFINITY);
    EXPECT_LE(err, tol) << c.name() << ": row " << i << ": emulated lse " << e.lse[i] << ", generic " << g.lse[i];
  }
  return worst;
}

GenericComparison compare_with_generic(const DecodeCase& c, const BothPaths& both) {
  GenericComparison cmp;
  const PathResults& e = both.emulated;
  const PathResults& g = both.generic;
  const uqref::DecodeResult ref = reference_decode(c, build_decode_data(c));
  EXPECT_EQ(e.out.size(), g.out.size());
  int reported = 0;
  for (std::size_t i = 0; i < e.out.size() && i < g.out.size(); ++i) {
    const std::size_t row = i / 256;
    if (ref.nonfinite_q[row]) {  // NaN on both (check_decode_lse checked the emulated row)
      if (!std::isnan(bf16_value(g.out[i])) && reported++ < 5)
        ADD_FAILURE() << c.name() << ": element " << i << ": generic " << bf16_value(g.out[i]) << " for a non-finite q";
      continue;
    }
    const double got = bf16_value(e.out[i]), want = bf16_value(g.out[i]);
    const GenericTolerance t = generic_tolerance(want, ref.vmax[i], ref.score_abs[row], ref.attended[row]);
    const double err = std::fabs(got - want);
    ++cmp.elements;
    if (e.out[i] == g.out[i]) ++cmp.identical;
    if (!(err <= t.smooth)) ++cmp.beyond_smooth;
    cmp.max_err_over_tol = std::max(cmp.max_err_over_tol, std::isfinite(got) ? err / (t.smooth + t.flips) : INFINITY);
    if (!(err <= t.smooth + t.flips) && reported++ < 5)
      ADD_FAILURE() << c.name() << ": element " << i << " (row " << row << "): emulated " << got << ", generic "
                    << want << ", |err| " << err << " > " << t.smooth + t.flips;
  }
  EXPECT_LE(cmp.beyond_smooth * 200, cmp.elements)
      << c.name() << ": " << cmp.beyond_smooth << " of " << cmp.elements
      << " elements differ from the generic path by more than the no-flip bound";
  compare_partitions(c, e, g, ref, both.partitions, c.num_kv_heads * c.qg);
  cmp.max_lse_err_over_tol = compare_lse(c, e, g, ref);
  for (int k = 0; k < uq::kNumCounters; ++k)
    EXPECT_EQ(e.status.counts[k], g.status.counts[k])
        << c.name() << ": counter " << uq::counter_name(static_cast<uq::Counter>(k));
  return cmp;
}

// The emulated result's reference check (check_decode_lse's) kept with both paths' results.
void record_reference_check(BothPaths& both, const DecodeCheck& check) {
  both.emulated.out = check.out;
  both.max_err_over_ref_tol = std::max(check.max_err_over_tol, check.max_lse_err_over_tol);
}

// The emulated path against the generic one, and the comparison printed.
void report_against_generic(const DecodeCase& c, const BothPaths& both) {
  const GenericComparison cmp = compare_with_generic(c, both);
  std::printf("[ emulated ] %-58s P %4d TGPP %d: %5.2f s; vs reference max err/tol %.3f; vs generic %lld/%lld "
              "identical, max err/tol %.3f, %lld beyond the no-flip bound, lse max err/tol %.3f\n",
              c.name().c_str(), both.partitions, both.tgpp, both.seconds, both.max_err_over_ref_tol,
              static_cast<long long>(cmp.identical), static_cast<long long>(cmp.elements), cmp.max_err_over_tol,
              static_cast<long long>(cmp.beyond_smooth), cmp.max_lse_err_over_tol);
}

}  // namespace

void run_both_paths(const DecodeCase& c, const Variant& v, BothPaths& both,
                    const Kokkos::View<const uq::bf16***, Kokkos::LayoutStride, Mem>& q,
                    const Kokkos::View<const std::uint8_t****, Kokkos::LayoutRight, Mem>& cache,
                    const Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Mem>& tables,
                    const Kokkos::View<const std::int32_t*, Kokkos::LayoutRight, Mem>& lens,
                    const Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem>& out, const LseView& lse) {
  Kokkos::View<uq::bf16*, Mem> q_storage;
  Kokkos::View<std::uint8_t*, Mem> cache_storage;
  const bool relayout_q_needed = v.q_dim_stride > 0 || v.odd_q_head_stride;
  const bool relayout_cache_needed = v.block_padding > 0 || v.poison_unattended || v.zero_v_scales_of_seq0;
  if (relayout_q_needed && relayout_cache_needed) {
    run_both_on(c, v, both, relayout_q(q, v, q_storage), relayout_cache(cache, tables, lens, v, cache_storage),
                tables, lens, out, lse);
  } else if (relayout_q_needed) {
    run_both_on(c, v, both, relayout_q(q, v, q_storage), cache, tables, lens, out, lse);
  } else if (relayout_cache_needed) {
    run_both_on(c, v, both, q, relayout_cache(cache, tables, lens, v, cache_storage), tables, lens, out, lse);
  } else {
    run_both_on(c, v, both, q, cache, tables, lens, out, lse);
  }
}

BothPaths run_both(const DecodeCase& c, const Variant& v) {
  BothPaths both;
  const DecodeCheck check = check_decode_lse(c, [&](auto q, auto cache, auto tables, auto lens, auto out, auto lse) {
    run_both_paths(c, v, both, q, cache, tables, lens, out, lse);
  });
  record_reference_check(both, check);
  return both;
}

// Both paths on a case's inputs without the reference check (for inputs changed in a way the
// reference does not know): the views as check_decode builds them.
BothPaths run_both_unchecked(const DecodeCase& c, const Variant& v) {
  BothPaths both;
  const DecodeData d = build_decode_data(c);
  const int heads = d.hq + 2 * c.num_kv_heads;
  std::vector<uq::bf16> qkv(d.qkv.size());
  for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i].bits = d.qkv[i];
  auto fused = to_device(qkv, "qkv", d.num_seqs, heads, 256);
  const Bf16Strided q = Kokkos::subview(fused, Kokkos::ALL, std::make_pair(0, d.hq), Kokkos::ALL);
  auto cache = to_device(d.cache, "cache", d.num_blocks, c.block_size, c.num_kv_heads, c.slot_bytes);
  auto tables = to_device(d.tables, "tables", d.num_seqs, d.max_blocks);
  auto lens = to_device(d.seq_lens, "lens", d.num_seqs);
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> out("out", d.num_seqs, d.hq, 256);
  Kokkos::deep_copy(out, uq::bf16{kPoisonBf16});
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> lse("lse", d.num_seqs, d.hq);
  run_both_paths(c, v, both, q, cache, tables, lens, out, LseView(lse));
  for (const uq::bf16& x : to_host(out)) both.emulated.out.push_back(x.bits);
  return both;
}

void check_against_generic(const DecodeCase& c, BothPaths& both, const DecodeCheck& reference_check) {
  record_reference_check(both, reference_check);
  report_against_generic(c, both);
}

BothPaths check_both(const DecodeCase& c, const Variant& v) {
  BothPaths both = run_both(c, v);
  report_against_generic(c, both);
  return both;
}

}  // namespace uqtest
