// The gfx950 UltraQuant decode kernels (arch/gfx950/decode_kernel.hpp, reduce_kernel.hpp) run
// in the wavefront emulator from the same source that decode.hip / reduce.hip compile for
// gfx950, through the emulator's launchers (decode_emulated.hpp) and the same views ->
// launch conversion as the HIP dispatch (uq/core/decode_launch.hpp). Each case is checked twice:
//
//  1. against the float64 reference with the tolerance of tests/support/decode_case.hpp,
//     derived there for any implementation of the spec's numerics;
//  2. against the generic Kokkos path run on the same inputs, element by element, with the
//     tighter tolerance derived at generic_tolerance() below; plus the lse, the partitions' m
//     and l, and the status counters, which must be equal.
//
// Both paths run as DecodePlan::run does (revision 2 of spec ultraquant.md §5): with P = 1
// one partition kernel that writes out and lse itself, else the partition kernel (rows of
// empty partitions poisoned before and checked untouched after) and the reducer.
//
// Some cases change the inputs' layout before both paths run (a gathered q, padded cache
// blocks, a strided output) or overwrite cache bytes no token attends with 0xFF (NaN scales):
// the reference result does not depend on either.
#include "support/decode_case.hpp"

#include "gfx950/decode_emulated.hpp"
#include "gfx950/launch_decode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace uqtest;
using HostMem = Kokkos::HostSpace;

// How a case's inputs are presented to both paths.
struct Variant {
  bool poison_unattended = false;  // cache bytes no token attends -> 0xFF
  int q_dim_stride = 0;            // > 0: q gathered from a layout with this dim stride and odd strides
  bool odd_q_head_stride = false;  // dim stride 1 but 2-byte aligned rows (the kernel's 16-bit loads)
  std::int64_t block_padding = 0;  // extra bytes between cache blocks
  bool strided_out = false;        // the reducer writes a strided view
  bool zero_v_scales_of_seq0 = false;  // every V scale byte of sequence 0 -> 0 (codes kept)
  bool two_stages = false;         // P = 1 through partial rows and the reducer (not direct)
  int plan_extra_blocks = 0;       // the plan is sized for a table this much wider than the case's
};

// Everything one path produced for a case.
struct PathResults {
  std::vector<std::uint16_t> out;  // [B][Hq][256]
  std::vector<float> lse;          // [B][Hq]
  std::vector<float> l, m;         // partition rows [B][Hk][P][QG] (empty when P = 1 runs direct)
  uq::Status status;
};

// The poison of the partition rows before a run: l is never negative.
constexpr float kPoisonL = -7.0f;

struct BothPaths {
  PathResults emulated, generic;
  int partitions = 0, tgpp = 0;
  double seconds = 0.0;  // emulator time of the case
  double max_err_over_ref_tol = 0.0;
};

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

  uq::impl::DecodePartials<HostMem> partials;
  partials.out = Kokkos::View<uq::bf16*, HostMem>("emu partial out", rows * 256);
  partials.l = Kokkos::View<float*, HostMem>("emu partial l", rows);
  partials.m = Kokkos::View<float*, HostMem>("emu partial m", rows);
  // Poison: every l and m must be written, a partial row exactly where l > 0.
  Kokkos::deep_copy(partials.out, uq::bf16{kPoisonBf16});
  Kokkos::deep_copy(partials.l, kPoisonL);
  Kokkos::deep_copy(partials.m, kPoisonL);
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
    for (std::int64_t i = 0; i < rows; ++i) EXPECT_EQ(partials.l(i), kPoisonL) << "direct run wrote partition row " << i;
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
    Kokkos::deep_copy(plan.partials().l, kPoisonL);
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

// A DecodeRunnerLse for check_decode_lse: both paths, with the variant's input changes.
auto both_paths_runner(const DecodeCase& c, const Variant& v, BothPaths& both) {
  return [&c, &v, &both](auto q, auto cache, auto tables, auto lens, auto out, auto lse) {
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
  };
}

BothPaths run_both(const DecodeCase& c, const Variant& v) {
  BothPaths both;
  const DecodeCheck check = check_decode_lse(c, both_paths_runner(c, v, both));
  both.emulated.out = check.out;
  both.max_err_over_ref_tol = std::max(check.max_err_over_tol, check.max_lse_err_over_tol);
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
  both_paths_runner(c, v, both)(q, cache, tables, lens, out, LseView(lse));
  for (const uq::bf16& x : to_host(out)) both.emulated.out.push_back(x.bits);
  return both;
}

// ---------------------------------------------------------------- emulated vs generic
double bf16_value(std::uint16_t bits) { return uq::codec::bf16_to_float(uq::bf16{bits}); }

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
struct GenericTolerance {
  double smooth, flips;
};

GenericTolerance generic_tolerance(double generic, double vmax, double score_abs, std::int64_t attended) {
  const double u32 = std::ldexp(1.0, -24);
  const double delta = 96.0 * u32 * score_abs + 8.0 * u32 * (1.0 + score_abs);
  GenericTolerance t;
  t.smooth = 2.01 * 2.0 * delta * vmax + 2.0 * static_cast<double>(attended + 16) * u32 * vmax + 1e-30;
  const int e = generic == 0.0 ? -133 : std::ilogb(generic);
  t.flips = std::ldexp(1.0, e - 7) + std::ldexp(1.0, -7) * vmax;
  return t;
}

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
    ASSERT_FALSE(e.l[i] == kPoisonL || e.m[i] == kPoisonL) << c.name() << ": partition row " << i << " not written";
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
// Sum: u32 (113 S + 4.2 n + 26 + 11 |lse|).
double compare_lse(const DecodeCase& c, const PathResults& e, const PathResults& g, const uqref::DecodeResult& ref) {
  EXPECT_EQ(e.lse.size(), g.lse.size());
  const double u32 = std::ldexp(1.0, -24);
  double worst = 0.0;
  for (std::size_t i = 0; i < e.lse.size() && i < g.lse.size(); ++i) {
    if (std::isnan(g.lse[i]) || g.lse[i] == -INFINITY) {
      EXPECT_TRUE(std::isnan(g.lse[i]) ? std::isnan(e.lse[i]) : e.lse[i] == -INFINITY)
          << c.name() << ": row " << i << ": emulated lse " << e.lse[i] << ", generic " << g.lse[i];
      continue;
    }
    const double S = ref.score_abs[i], n = static_cast<double>(ref.attended[i]);
    const double tol = u32 * (113.0 * S + 4.2 * n + 26.0 + 11.0 * std::fabs(g.lse[i]));
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

BothPaths check_both(const DecodeCase& c, const Variant& v = {}) {
  BothPaths both = run_both(c, v);
  const GenericComparison cmp = compare_with_generic(c, both);
  std::printf("[ emulated ] %-58s P %4d TGPP %d: %5.2f s; vs reference max err/tol %.3f; vs generic %lld/%lld "
              "identical, max err/tol %.3f, %lld beyond the no-flip bound, lse max err/tol %.3f\n",
              c.name().c_str(), both.partitions, both.tgpp, both.seconds, both.max_err_over_ref_tol,
              static_cast<long long>(cmp.identical), static_cast<long long>(cmp.elements), cmp.max_err_over_tol,
              static_cast<long long>(cmp.beyond_smooth), cmp.max_lse_err_over_tol);
  return both;
}

// ---------------------------------------------------------------- the test matrix

class EmuDecodeMatrix : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(EmuDecodeMatrix, RaggedBatchMatchesReferenceAndGeneric) {
  const int qg = std::get<0>(GetParam()), bs = std::get<1>(GetParam());
  check_both(ragged_matrix_case(qg, bs, 1100, 1000 + qg * 7 + bs));
}

INSTANTIATE_TEST_SUITE_P(QgBlock, EmuDecodeMatrix,
                         ::testing::Combine(::testing::Values(6, 8, 16), ::testing::Values(16, 32, 64, 128, 256)));

class EmuDecodePartitions : public ::testing::TestWithParam<int> {};

TEST_P(EmuDecodePartitions, ForcedPartitionCountMatchesReferenceAndGeneric) {
  check_both(forced_partitions_case(GetParam(), 70 + GetParam()));
}

// 1 .. 512 partitions, powers of two or not: one partition walking every tile-group (TGPP up
// to 12) to one per tile-group with most of them empty.
INSTANTIATE_TEST_SUITE_P(P, EmuDecodePartitions, ::testing::Values(1, 2, 3, 7, 16, 64, 255, 512));

TEST(EmuDecode, PreRotatedQueryMatchesReferenceAndGeneric) {
  for (int qg : {6, 16}) {
    DecodeCase c;
    c.qg = qg;
    c.q_rotated = true;
    c.seq_lens = {257, 1, 1500};
    c.q_sigma = 0.3f;
    c.seed = 31 + qg;
    check_both(c);
  }
}

TEST(EmuDecode, SeveralKvHeadsAndDenseQuery) {
  DecodeCase c;
  c.qg = 6;
  c.num_kv_heads = 3;
  c.block_size = 16;
  c.strided_q = false;
  c.seq_lens = {33, 700, 15};
  check_both(c);
}

TEST(EmuDecode, PaddedSlotsAtEveryAlignment) {
  for (int slot_bytes : {288, 276, 400}) {  // 16-, 4- and 16-byte aligned slot starts
    DecodeCase c;
    c.slot_bytes = slot_bytes;
    c.num_kv_heads = 2;
    c.qg = 8;
    c.seq_lens = {300, 65};
    c.seed = slot_bytes;
    check_both(c);
  }
}

TEST(EmuDecode, LargeQueriesSaturateE4M3AndOtherScales) {
  // |q_rot| well above 448 must saturate (the converter alone would give NaN); a large
  // softmax scale makes attention peaked, a small one nearly uniform.
  for (float scale : {1.0f / 16.0f, 0.75f, 1e-3f}) {
    DecodeCase c;
    c.qg = 16;
    c.q_sigma = scale > 0.5f ? 1.0f : 600.0f;
    c.scale = scale;
    c.seq_lens = {513, 64};
    c.seed = static_cast<std::uint64_t>(scale * 1e4);
    check_both(c);
  }
}

TEST(EmuDecode, GatheredQueryLayouts) {
  // q rows that are not dim-contiguous, or only 2-byte aligned: the kernel's 16-bit loads.
  for (int raw : {0, 1}) {
    DecodeCase c;
    c.qg = 8;
    c.num_kv_heads = 2;
    c.q_rotated = raw == 0;
    c.seq_lens = {40, 270};
    c.seed = 500 + raw;
    Variant gathered;
    gathered.q_dim_stride = 3;
    check_both(c, gathered);
    Variant odd;
    odd.odd_q_head_stride = true;
    check_both(c, odd);
  }
}

TEST(EmuDecode, UnattendedCacheBytesNeverReachTheResult) {
  // Every byte no token attends (the tail of each sequence's last block, unused blocks)
  // becomes 0xFF: E8M0 255 is NaN for the MFMA and the convert, so a masked token whose K or
  // V entered a product would make the output NaN.
  for (int bs : {16, 64, 256}) {
    DecodeCase c;
    c.qg = 6;
    c.block_size = bs;
    c.seq_lens = {1, 15, 17, 100, 257};
    c.seed = 900 + bs;
    Variant v;
    v.poison_unattended = true;
    check_both(c, v);
  }
}

TEST(EmuDecode, PaddedCacheBlocksAndStridedOutput) {
  DecodeCase c;
  c.qg = 16;
  c.block_size = 32;
  c.num_kv_heads = 2;
  c.seq_lens = {70, 5, 300};
  Variant v;
  v.block_padding = 4 * 37;  // block stride not a multiple of 16
  v.strided_out = true;
  check_both(c, v);
}

TEST(EmuDecode, ZeroScaleGroupsAreZeroWhateverTheirCodes) {
  // Sequence 0's V scale bytes all become 0 while its (nonzero) codes stay: spec §1 makes the
  // groups exactly zero, so its output is exactly +0 (the convert alone would give
  // FP4 x 2^-127, not 0). The reference knows only the unmodified cache, so the case is
  // compared with the generic path alone; sequence 1 (untouched) must still match it.
  DecodeCase c;
  c.qg = 8;
  c.seq_lens = {90, 40};
  Variant v;
  v.zero_v_scales_of_seq0 = true;
  const BothPaths both = run_both_unchecked(c, v);
  const std::size_t row = 8 * 256;
  for (std::size_t i = 0; i < row; ++i) {
    ASSERT_EQ(both.emulated.out[i], 0u) << "element " << i;
    ASSERT_EQ(both.generic.out[i], 0u) << "element " << i;
  }
  // Sequence 1 attends only its own, unmodified blocks: the reference still holds for it.
  const uqref::DecodeResult ref = reference_decode(c, build_decode_data(c));
  for (std::size_t i = row; i < 2 * row; ++i) {
    const double e = bf16_value(both.emulated.out[i]), g = bf16_value(both.generic.out[i]);
    const GenericTolerance t = generic_tolerance(g, ref.vmax[i], ref.score_abs[i / 256], ref.attended[i / 256]);
    ASSERT_LE(std::fabs(e - g), t.smooth + t.flips) << "element " << i;
    ASSERT_LE(std::fabs(e - ref.out[i]), decode_tolerance(ref.out[i], ref.vmax[i], ref.score_abs[i / 256],
                                                          ref.attended[i / 256]))
        << "element " << i;
  }
}

// ---------------------------------------------------------------- bad data (spec §6)

TEST(EmuDecodeBadData, MaskedAndCountedExactlyLikeTheGenericPath) {
  DecodeCase c;
  c.qg = 6;
  c.block_size = 32;
  c.seq_lens = {190, 64, 100, 50, 300};
  c.max_blocks_per_seq = 10;
  // needed blocks made bad: seq 0 blocks 1 and 6 (6 starts at token 192 >= 190: not
  // needed, not counted), seq 2 block 0 (its first tile), seq 4 blocks 2 and 3 (a whole
  // tile-group's worth of tiles of one partition)
  c.bad_blocks = {{0, 1}, {0, 6}, {2, 0}, {4, 2}, {4, 3}};
  // seq 1 passes a negative length, seq 3 one longer than its table allows
  c.raw_seq_len_overrides = {{1, -5}, {3, 10 * 32 + 40}};
  const BothPaths both = check_both(c);
  EXPECT_EQ(both.emulated.status[uq::Counter::bad_block_ids], 4u);
  EXPECT_EQ(both.emulated.status[uq::Counter::negative_seq_lens], 1u);
  EXPECT_EQ(both.emulated.status[uq::Counter::long_seq_lens], 1u);
  EXPECT_EQ(both.emulated.status[uq::Counter::bad_slots], 0u);
  EXPECT_EQ(both.emulated.status[uq::Counter::nonfinite_inputs], 0u);
}

TEST(EmuDecodeBadData, SeveralHeadsCountOnce) {
  DecodeCase c;
  c.qg = 16;
  c.num_kv_heads = 3;
  c.block_size = 16;
  c.seq_lens = {60, 33};
  c.partitions = 3;
  c.bad_blocks = {{0, 0}, {0, 3}, {1, 2}};
  c.raw_seq_len_overrides = {{1, -1}};  // sequence 1 attends nothing: its bad block is not needed
  const BothPaths both = check_both(c);
  EXPECT_EQ(both.emulated.status[uq::Counter::bad_block_ids], 2u);
  EXPECT_EQ(both.emulated.status[uq::Counter::negative_seq_lens], 1u);
}

TEST(EmuDecodeBadData, EveryBlockBadGivesZeros) {
  DecodeCase c;
  c.block_size = 16;
  c.seq_lens = {40};
  c.bad_blocks = {{0, 0}, {0, 1}, {0, 2}};
  Variant v;
  v.poison_unattended = true;
  const BothPaths both = check_both(c, v);
  EXPECT_EQ(both.emulated.status[uq::Counter::bad_block_ids], 3u);
  for (std::uint16_t bits : both.emulated.out) ASSERT_EQ(bits, 0u);
}

// ---------------------------------------------------------------- revision 2

std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<std::uint32_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(&b[i], &v[i], 4);
  return b;
}

TEST(EmuDecodeSplitK, OnePartitionWritesOutItselfBitIdenticalToTheTwoStages) {
  DecodeCase c;
  c.qg = 8;
  c.num_kv_heads = 2;
  c.block_size = 32;
  c.seq_lens = {0, 1, 100, 255, 256, 700};
  c.partitions = 1;
  const BothPaths direct = check_both(c);  // dense out: 8-byte stores
  Variant staged;
  staged.two_stages = true;
  const BothPaths two = check_both(c, staged);
  ASSERT_EQ(direct.emulated.out, two.emulated.out);
  ASSERT_EQ(bits_of(direct.emulated.lse), bits_of(two.emulated.lse));
  Variant strided;  // dim stride 2: 2-byte stores
  strided.strided_out = true;
  const BothPaths s = check_both(c, strided);
  ASSERT_EQ(s.emulated.out, direct.emulated.out);
  ASSERT_EQ(bits_of(s.emulated.lse), bits_of(direct.emulated.lse));
}

TEST(EmuDecodeSplitK, OnePartitionEqualsManyWhenOneHoldsAllTokens) {
  // Every sequence fits the first tile-group: with P = 4 partition 0 holds all tokens, the
  // reducer combines one partition and must return it unchanged.
  for (int qg : {6, 16}) {
    DecodeCase c;
    c.qg = qg;
    c.block_size = 16;
    c.seq_lens = {0, 1, 17, 200, 256};
    c.max_blocks_per_seq = 40;
    c.seed = 60 + qg;
    c.partitions = 1;
    const BothPaths one = check_both(c);
    c.partitions = 4;
    const BothPaths four = check_both(c);
    ASSERT_EQ(one.emulated.out, four.emulated.out) << "qg " << qg;
    ASSERT_EQ(bits_of(one.emulated.lse), bits_of(four.emulated.lse)) << "qg " << qg;
  }
}

TEST(EmuDecodeSplitK, NarrowerTableThanThePlan) {
  DecodeCase c;
  c.qg = 6;
  c.block_size = 16;
  c.seq_lens = {300, 17, 0, 160};
  c.max_blocks_per_seq = 20;
  c.raw_seq_len_overrides = {{3, 20 * 16 + 50}};  // clamped to the live table's 320 tokens
  Variant v;
  v.plan_extra_blocks = 500;  // the plan's grid: 8320 tokens
  const BothPaths both = check_both(c, v);
  EXPECT_EQ(both.partitions, uq::choose_partitions(4, 520, 16).partitions);
  EXPECT_EQ(both.emulated.status[uq::Counter::long_seq_lens], 1u);
}

// Six non-finite (sequence, query head) rows over two KV heads, as in tests/test_decode_bad_data.cpp.
DecodeCase nonfinite_case(bool rotated, int partitions) {
  constexpr std::uint16_t kNan = 0x7FC0, kSignalingNan = 0x7F81, kPlusInf = 0x7F80, kMinusInf = 0xFF80;
  DecodeCase c;
  c.qg = 6;
  c.num_kv_heads = 2;
  c.block_size = 32;
  c.q_rotated = rotated;
  c.partitions = partitions;
  c.seq_lens = {300, 0, 40, 1000, 20};
  c.bad_blocks = {{4, 0}};
  c.q_overrides = {{0, 1, 5, kNan},     {0, 7, 255, kPlusInf},       {1, 3, 0, kMinusInf}, {2, 0, 1, kNan},
                   {2, 0, 2, kPlusInf}, {3, 11, 255, kSignalingNan}, {4, 6, 100, kNan}};
  return c;
}

TEST(EmuDecodeBadData, NonFiniteQueryGivesNanRowsCountedOnce) {
  for (bool rotated : {false, true})
    for (int partitions : {0, 1, 7}) {
      const BothPaths both = check_both(nonfinite_case(rotated, partitions));
      EXPECT_EQ(both.emulated.status[uq::Counter::nonfinite_inputs], 6u)
          << "P " << partitions << (rotated ? " rotated" : " raw");
      EXPECT_EQ(both.emulated.status[uq::Counter::bad_block_ids], 1u);
    }
}

// ---------------------------------------------------------------- launcher arguments

uq::gfx950::DecodePartitionsLaunch valid_launch(std::vector<std::uint8_t>& cache) {
  uq::gfx950::DecodePartitionsLaunch l;
  cache.assign(2 * 16 * 272 + 4, 0);
  l.cache = cache.data();
  l.num_blocks = 2;
  l.block_stride = 16 * 272;
  l.block_size = 16;
  l.num_kv_heads = 1;
  l.slot_bytes = 272;
  l.max_blocks_per_seq = 32;  // 512 tokens
  l.num_seqs = 1;
  l.qg = 8;
  l.partitions = 2;
  l.tgpp = 1;
  l.q_stride_seq = 8 * 256;
  l.q_stride_head = 256;
  return l;
}

std::string error_of(const uq::gfx950::DecodePartitionsLaunch& l) {
  try {
    uq::gfx950::emulate_decode_partitions(l);
  } catch (const uq::Error& e) {
    return e.what();
  }
  return "";
}

TEST(EmuDecodeLaunch, RejectsWhatTheKernelCannotAddress) {
  std::vector<std::uint8_t> cache;
  {
    auto l = valid_launch(cache);
    l.num_seqs = 0;  // nothing to launch: no error, no work
    EXPECT_EQ(error_of(l), "");
  }
  const auto expect = [&](auto change, const std::string& fragment) {
    auto l = valid_launch(cache);
    l.num_seqs = 0;
    change(l);
    const std::string what = error_of(l);
    EXPECT_NE(what.find("uq::gfx950::launch_decode_partitions"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << "'" << what << "' lacks '" << fragment << "'";
  };
  using L = uq::gfx950::DecodePartitionsLaunch;
  expect([](L& l) { l.qg = 4; }, "argument 'qg': expected 6, 8 or 16, got 4");
  expect([](L& l) { l.block_size = 48; }, "argument 'block_size'");
  expect([](L& l) { l.tgpp = 0; }, "argument 'tgpp'");
  expect([](L& l) { l.partitions = 1; }, "argument 'partitions * tgpp': expected * 256 >= max_blocks_per_seq * block_size = 512, got 1 * 1");
  expect([](L& l) { l.slot_bytes = 274; }, "argument 'slot_bytes'");
  expect([](L& l) { l.block_stride = 16 * 272 + 2; }, "4-byte aligned base and block stride");
  expect([](L& l) { l.cache += 2; }, "4-byte aligned base and block stride");
  expect([](L& l) { l.block_stride = 100; }, "argument 'block_stride'");
  expect([](L& l) { l.q_stride_head = std::int64_t{1} << 30; }, "argument 'q': expected the qg rows of one KV head within 2^31 bytes");
  expect([](L& l) { l.num_kv_heads = 70000; }, "argument 'num_kv_heads'");
  static std::uint16_t out[256];
  static float lse[8];
  expect([](L& l) { l.out = out; }, "argument 'out': expected set only with partitions == 1 (no reducer)");
  expect([](L& l) { l.lse = lse; }, "argument 'lse': expected set only with out (partitions == 1)");
  expect(
      [](L& l) {
        l.partitions = 1;
        l.tgpp = 2;
        l.out = out;
        l.out_stride_head = std::int64_t{1} << 30;
      },
      "argument 'out': expected the qg rows of one KV head within 2^31 bytes");
}

TEST(EmuDecodeLaunch, EmptyBatchLaunchesNothing) {
  DecodeCase c;
  c.seq_lens = {};
  c.max_blocks_per_seq = 4;
  const BothPaths both = run_both(c, {});
  EXPECT_TRUE(both.emulated.out.empty());
  EXPECT_TRUE(both.emulated.status.ok());
}

}  // namespace
