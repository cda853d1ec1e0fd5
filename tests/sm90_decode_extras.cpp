// The Hopper (sm_90) decode path's own tests, beyond the shared decode cases stamped in
// test_sm90_decode.cpp (linked into that program): this device is Hopper and Native selects
// sm90; serving-size contexts with the default partition choice; misaligned caches (the
// synchronous-copy kernels); bad block ids and lengths (masked and counted); plan reuse and the
// two stages; agreement with the generic path on the same inputs. Backend::Native throughout:
// on a build or device without the sm90 path these tests FAIL (they never skip).
#include "support/sm90_decode_path.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#if defined(UQ_ENABLE_SM90)

#include "sm90/decode_args.hpp"  // kReduceWholeRowMinRows, partial_lm_index

namespace {

using namespace uqtest;

uq::DecodeConfig config_for(const DecodeCase& c, uq::Backend backend) {
  uq::DecodeConfig cfg;
  cfg.softmax_scale = c.scale;
  cfg.q_rotated = c.q_rotated;
  cfg.partitions = c.partitions;
  cfg.backend = backend;
  return cfg;
}

// Every case checks out and lse (a transposed [B, Hq] view) against the reference.
DecodeCheck run_path(const DecodeCase& c, uq::Backend backend) {
  const bool sm90 = backend == uq::Backend::Native;
  return check_decode_lse(
      c,
      [&](auto q, auto cache, auto tables, auto lens, auto out, auto lse) {
        uq::decode(q, cache, tables, lens, out, lse, config_for(c, backend));
      },
      sm90 ? sm90_tolerance_for(c) : DecodeTolerance{}, sm90 ? sm90_lse_tolerance_for(c) : LseTolerance{});
}

DecodeCheck run_sm90(const DecodeCase& c) { return run_path(c, uq::Backend::Native); }

// The cache copied to `offset` bytes past a 16-byte aligned allocation: offset 4 leaves every
// slot 4-byte aligned (the 4-byte copy kernel), offset 1 leaves it unaligned (byte copies).
DecodeCheck run_sm90_offset_cache(const DecodeCase& c, int offset) {
  return check_decode(
      c,
      [&](auto q, auto cache, auto tables, auto lens, auto out) {
        DeviceView<std::uint8_t*> buffer("offset_cache", cache.size() + 16);
        Kokkos::View<std::uint8_t****, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> shifted(
            buffer.data() + offset, cache.extent(0), cache.extent(1), cache.extent(2), cache.extent(3));
        Kokkos::deep_copy(shifted, cache);
        Kokkos::View<const std::uint8_t****, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> view = shifted;
        uq::decode(q, view, tables, lens, out, config_for(c, uq::Backend::Native));
      },
      sm90_tolerance_for(c));
}

TEST(Sm90Decode, ThisDeviceIsHopperAndNativeSelectsSm90) {
  const uq::DeviceInfo d = uq::impl::device_info(Exec());
  ASSERT_EQ(d.arch.rfind("sm_90", 0), 0u) << "the sm90 tests need a compute capability 9.x device, got '"
                                          << d.arch << "' (" << d.name << ")";
  EXPECT_TRUE(uq::impl::built_paths().has(uq::Path::Sm90));
  uq::DecodeShape shape{4, 1, 6, 64, 100};
  uq::DecodeConfig cfg;
  cfg.backend = uq::Backend::Native;
  EXPECT_EQ(uq::DecodePlan<Exec>(Exec(), shape, cfg).path(), uq::Path::Sm90);
  cfg.backend = uq::Backend::Auto;
  EXPECT_EQ(uq::DecodePlan<Exec>(Exec(), shape, cfg).path(), uq::Path::Sm90);
  cfg.backend = uq::Backend::Generic;
  EXPECT_EQ(uq::DecodePlan<Exec>(Exec(), shape, cfg).path(), uq::Path::Generic);
}

// Serving-size contexts with the default partition choice: 75000 tokens (the headline
// context, P = 512 with 293 non-empty partitions) and 140000 (P = 512, TGPP = 2: two
// tile-groups per partition), next to a 1-token sequence.
TEST(Sm90Decode, LongContextsWithDefaultPartitions) {
  DecodeCase c;
  c.qg = 6;
  c.block_size = 64;
  c.seq_lens = {75000, 140000, 1};
  c.spare_blocks = 1;
  c.seed = 75;
  run_sm90(c);
}

TEST(Sm90Decode, MisalignedCacheViewsTakeTheCopyKernels) {
  for (int offset : {4, 1}) {
    DecodeCase c;
    c.qg = 8;
    c.seq_lens = {300, 17, 0};
    c.seed = 60 + offset;
    run_sm90_offset_cache(c, offset);
  }
}

TEST(Sm90Decode, BadDataMaskedCountedAndMatchingReference) {
  for (int hk : {1, 2}) {
    DecodeCase c;
    c.qg = 6;
    c.num_kv_heads = hk;
    c.block_size = 32;
    c.seq_lens = {190, 64, 100, 50};
    c.max_blocks_per_seq = 8;
    c.bad_blocks = {{0, 1}, {0, 6}, {2, 0}};  // block 6 of seq 0 is not needed: not counted
    c.raw_seq_len_overrides = {{1, -5}, {3, 8 * 32 + 40}};
    uq::Status st;
    check_decode(c, [&](auto q, auto cache, auto tables, auto lens, auto out) {
      uq::DecodeConfig cfg = config_for(c, uq::Backend::Native);
      cfg.check = false;
      uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(q, cache, tables, cfg), cfg);
      ASSERT_EQ(plan.path(), uq::Path::Sm90);
      plan.run(q, cache, tables, lens, out);
      st = plan.status();
    });
    EXPECT_EQ(st[uq::Counter::bad_block_ids], 2u) << "hk " << hk;  // counted in KV head 0 only
    EXPECT_EQ(st[uq::Counter::negative_seq_lens], 1u);
    EXPECT_EQ(st[uq::Counter::long_seq_lens], 1u);
    EXPECT_EQ(st[uq::Counter::bad_slots], 0u);
  }
}

TEST(Sm90Decode, EveryBlockBadGivesZerosAndCheckedCallThrows) {
  DecodeCase c;
  c.block_size = 16;
  c.seq_lens = {40, 5};
  c.bad_blocks = {{0, 0}, {0, 1}, {0, 2}};
  uq::Status st;
  check_decode(c, [&](auto q, auto cache, auto tables, auto lens, auto out) {
    uq::DecodeConfig cfg = config_for(c, uq::Backend::Native);
    cfg.check = false;
    uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(q, cache, tables, cfg), cfg);
    plan.run(q, cache, tables, lens, out);
    st = plan.status();
    expect_error([&] { uq::decode(q, cache, tables, lens, out, config_for(c, uq::Backend::Native)); },
                 {"uq::decode", "block_tables/seq_lens", "bad_block_ids=3"});
  });
  EXPECT_EQ(st[uq::Counter::bad_block_ids], 3u);
}

// Plan reuse (a CUDA-graph-style replay: same grid, no allocation) gives identical bits, the
// two stages run separately give the same bits as run(), and every partition row is written.
TEST(Sm90Decode, PlanReuseAndStagesGiveIdenticalBitsAndWriteEveryRow) {
  const DecodeCase c = plan_reuse_case();
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  const auto& q = in.q;
  const auto& cache = in.cache;
  const auto& tables = in.tables;
  const auto& lens = in.lens;
  uq::DecodeConfig cfg;
  cfg.backend = uq::Backend::Native;
  cfg.check = false;
  uq::DecodePlan<Exec> plan(Exec(), uq::DecodeShape{8, c.num_kv_heads, c.qg, c.block_size, d.max_blocks}, cfg);
  ASSERT_EQ(plan.path(), uq::Path::Sm90);
  DeviceView<uq::bf16***> a("a", d.num_seqs, d.hq, 256), b("b", d.num_seqs, d.hq, 256);
  Kokkos::deep_copy(a, uq::bf16{kPoisonBf16});
  plan.run(q, cache, tables, lens, a);
  const auto first = to_host(a);
  for (int rep = 0; rep < 3; ++rep) {
    Kokkos::deep_copy(b, uq::bf16{kPoisonBf16});
    if (rep == 2) {
      plan.run_partitions(q, cache, tables, lens);
      plan.run_reduce(d.num_seqs, b);
    } else {
      plan.run(q, cache, tables, lens, b);
    }
    const auto again = to_host(b);
    for (std::size_t i = 0; i < first.size(); ++i) ASSERT_EQ(first[i].bits, again[i].bits) << "rep " << rep << " i " << i;
  }
  const auto l = to_host(plan.partials().l), m = to_host(plan.partials().m);
  const auto partial = to_host(plan.partials().out);
  int empty = 0;
  const std::size_t rows = static_cast<std::size_t>(d.num_seqs) * c.num_kv_heads * plan.partitions() * c.qg;
  for (std::size_t i = 0; i < rows; ++i) {
    // partial row i = (bh, partition p, query row r); its l and m are at partial_lm_index
    const int r = static_cast<int>(i % c.qg), p = static_cast<int>(i / c.qg % plan.partitions());
    const auto at = static_cast<std::size_t>(uq::sm90::partial_lm_index(
        static_cast<std::int64_t>(i / c.qg / plan.partitions()), r, p, plan.partitions(), c.qg));
    ASSERT_TRUE(l[at] >= 0.0f) << i;
    ASSERT_FALSE(std::isnan(m[at])) << i;
    if (m[at] == -INFINITY) {
      ++empty;
      ASSERT_EQ(l[at], 0.0f);
      for (int e = 0; e < 256; ++e) ASSERT_EQ(partial[i * 256 + e].bits, 0u) << "empty row " << i;
    } else {
      for (int e = 0; e < 256; ++e) ASSERT_TRUE(std::isfinite(uq::codec::bf16_to_float(partial[i * 256 + e]))) << i;
    }
  }
  EXPECT_GT(empty, 0);
  EXPECT_TRUE(plan.status().ok());
}

// Many query rows (num_seqs x num_q_heads >= kReduceWholeRowMinRows): the reducer runs one
// block per row instead of 8 blocks of 32 dims, and from kReduceWarpRowMinRows rows one warp per
// row. Each result is checked against the reference, and it must give the same bits as the
// chunked shape, which the same plan takes when it reduces fewer sequences: a row's output must
// not depend on the size of the batch it came in.
TEST(Sm90Decode, ManyRowsReduceWholeRowsToTheChunkedReducersBits) {
  for (const std::int64_t min_rows : {uq::sm90::kReduceWholeRowMinRows, uq::sm90::kReduceWarpRowMinRows}) {
    SCOPED_TRACE(min_rows);
    DecodeCase c;
    c.qg = 8;
    c.num_kv_heads = 2;  // 16 query heads
    const int seqs = static_cast<int>(min_rows / 16) + 5;
    for (int b = 0; b < seqs; ++b) c.seq_lens.push_back(b == 3 ? 0 : (b * 977 + 13) % 2600);
    c.seq_lens.erase(c.seq_lens.begin());  // DecodeCase's default first length
    run_sm90(c);  // out and lse against the reference (the checks assert inside)
    c.q_overrides = {{2, 5, 17, 0x7FC1}};  // then with one non-finite query row: NaN out and lse
    const DecodeData d = build_decode_data(c);
    const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
    uq::DecodeConfig cfg;
    cfg.backend = uq::Backend::Native;
    cfg.check = false;
    uq::DecodePlan<Exec> plan(Exec(), uq::DecodeShape{seqs, c.num_kv_heads, c.qg, c.block_size, d.max_blocks}, cfg);
    ASSERT_EQ(plan.path(), uq::Path::Sm90);
    ASSERT_GT(plan.partitions(), 1);
    ASSERT_GE(static_cast<std::int64_t>(seqs) * d.hq, min_rows);
    ASSERT_LE(plan.partitions(), uq::sm90::kReduceWarpRowMaxPartitions);
    const int few = static_cast<int>((uq::sm90::kReduceWholeRowMinRows - 1) / d.hq);  // chunked below this
    DeviceView<uq::bf16***> whole("whole", seqs, d.hq, 256), chunked("chunked", seqs, d.hq, 256);
    DeviceView<float**> lse_whole("lse_whole", seqs, d.hq), lse_chunked("lse_chunked", seqs, d.hq);
    Kokkos::deep_copy(whole, uq::bf16{kPoisonBf16});
    Kokkos::deep_copy(chunked, uq::bf16{kPoisonBf16});
    Kokkos::deep_copy(lse_whole, 7.0f);
    Kokkos::deep_copy(lse_chunked, 7.0f);
    plan.run_partitions(in.q, in.cache, in.tables, in.lens);
    plan.run_reduce(seqs, whole, lse_whole);
    const auto head = std::make_pair(0, few);
    plan.run_reduce(few, Kokkos::subview(chunked, head, Kokkos::ALL, Kokkos::ALL), Kokkos::subview(lse_chunked, head, Kokkos::ALL));
    const auto w = to_host(whole), ch = to_host(chunked);
    const auto lw = to_host(lse_whole), lc = to_host(lse_chunked);
    int nan_rows = 0;
    for (int b = 0; b < few; ++b)
      for (int h = 0; h < d.hq; ++h) {
        const std::size_t row = static_cast<std::size_t>(b) * d.hq + h;
        for (int e = 0; e < 256; ++e) ASSERT_EQ(w[row * 256 + e].bits, ch[row * 256 + e].bits) << "b " << b << " h " << h << " e " << e;
        if (std::isnan(lw[row])) ++nan_rows;
        ASSERT_TRUE(std::isnan(lw[row]) ? std::isnan(lc[row]) : lw[row] == lc[row]) << "lse b " << b << " h " << h;
      }
    EXPECT_EQ(nan_rows, 1);
    for (std::size_t i = static_cast<std::size_t>(few) * d.hq * 256; i < ch.size(); ++i) ASSERT_EQ(ch[i].bits, kPoisonBf16) << i;
  }
}

// sm90 against the generic path on the same inputs. Each is within its tolerance of the
// reference, so |sm90 - generic| <= sm90_tolerance + decode_tolerance (triangle inequality); no
// tighter worst-case bound exists, because the two differ in summation order and precision
// (FP8 tensor-core group sums vs sequential fp32 FMA dot products, exp of slightly different
// scores, a different partial-sum order), and a perturbation of relative size e that straddles
// a bf16 rounding boundary of p, of a partial output or of the final output flips that rounding
// by one bf16 ulp (2^-7 relative) no matter how small e is. The typical difference is tiny, and
// that is what this test pins down (a statistical check, as before): the FP8 group sums truncate
// each of 32 products by a uniform fraction of 2^-13 of the group's largest, signs random, so a
// score's error has mean ~0 and spread ~ sqrt(8 x 32 / 12) 2^-13 max|product| ~ 2^-13 |score|
// (the fp32 path: ~2^-20), i.e. e < 2^-10 absolute for the |scores| < 8 of these cases. Each
// weight then moves by a relative e, independently across tokens, so the weighted mean moves by
// ~ e vmax sqrt(sum w^2) < 2^-11 vmax; the bf16 roundings of p flip with probability ~ e / 2^-8
// <= 2^-2 but each moves one token's share by 2^-8 of it and they average out over the tokens;
// the partial's and the output's flip with probability ~ 2^-11 / 2^-8 = 2^-3 and move an
// element by one ulp (2^-8 of it): ~ 2 x 2^-11 vmax expected in all. The mean of
// |difference| / vmax over a case (thousands of elements) must stay below 2^-10 (the harness,
// perf/sm90/decode_harness.cu, measured 0.4-1.8e-5 on the same kinds of data). A systematic error
// of one bf16 ulp anywhere -- a wrong rounding mode, a dropped scale, a lost token -- puts the
// mean above 2^-9.
TEST(Sm90Decode, AgreesWithTheGenericPathOnTheSameInputs) {
  for (int qg : {6, 8, 16}) {
    for (int bs : {16, 64, 256}) {
      const DecodeCase c = ragged_matrix_case(qg, bs, 2000, 500 + qg + bs);
      const DecodeCheck s = run_sm90(c);
      const DecodeCheck g = run_path(c, uq::Backend::Generic);
      const DecodeData d = build_decode_data(c);
      const uqref::DecodeResult ref = reference_decode(c, d);
      const std::vector<double> gmax = group_max_abs(c, d);
      ASSERT_EQ(s.out.size(), g.out.size());
      double sum_rel = 0.0, worst = 0.0;
      std::size_t n = 0, identical = 0;
      for (std::size_t i = 0; i < s.out.size(); ++i) {
        const std::size_t row = i / 256;
        if (ref.attended[row] == 0) continue;
        const double x = uq::codec::bf16_to_float(uq::bf16{s.out[i]});
        const double y = uq::codec::bf16_to_float(uq::bf16{g.out[i]});
        const double diff = std::fabs(x - y);
        const double bound = sm90_tolerance(ref.out[i], ref.vmax[i], ref.score_abs[row], gmax[row], ref.attended[row]) +
                             decode_tolerance(ref.out[i], ref.vmax[i], ref.score_abs[row], ref.attended[row]);
        EXPECT_LE(diff, bound) << "qg " << qg << " bs " << bs << " element " << i;
        // vmax = 0 (every attended value of this dim is 0): both paths must give exactly 0
        const double rel = ref.vmax[i] > 0.0 ? diff / ref.vmax[i] : (diff > 0.0 ? INFINITY : 0.0);
        sum_rel += rel;
        worst = std::max(worst, rel);
        identical += s.out[i] == g.out[i];
        ++n;
      }
      ASSERT_GT(n, 0u);
      const double mean = sum_rel / static_cast<double>(n);
      EXPECT_LE(mean, std::ldexp(1.0, -10)) << "qg " << qg << " bs " << bs;
      std::printf("[sm90 vs generic] qg %2d bs %3d: %zu elements, %.1f%% bit-identical, mean |diff|/vmax %.3g, "
                  "max %.3g\n",
                  qg, bs, n, 100.0 * static_cast<double>(identical) / static_cast<double>(n), mean, worst);
    }
  }
}

}  // namespace

#endif  // UQ_ENABLE_SM90
