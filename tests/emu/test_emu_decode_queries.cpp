// The gfx950 multi-token decode kernel (spec ultraquant.md §5.9, arch/gfx950/decode_queries.hip)
// in the wavefront emulator, held to the one-token kernel's standard (emu_decode_path.hpp): every
// row against the float64 reference (decode_queries_case.hpp: the one-token tolerances per row)
// and against the generic path on the same inputs (generic_tolerance, lse_generic_tolerance; the
// partitions' emptiness and non-finite rows, and every status counter, equal); plus bit identity
// with the one-token gfx950 kernel (every n_b = 1; and each row as the one-token kernel's decode
// of its prefix). Ragged n_b (0, n_b > seq_len), the uniform form, QG 6 / 8 (two query tokens in
// the 16-column tile) and 16 (one), and the two-N-tile kernel (max_query_len * QG <= 32: QL 3 to
// 5 at QG 6, 3 and 4 at QG 8, 2 at QG 16; the same tolerances: each row is still one query row's
// decode, whatever tile holds it), block sizes 16 and 256, P = 1 (direct) and split-K through the
// gfx950 reducer over query-token rows, bad query_start_loc on the device, and the launches the
// kernel cannot take refused with a reason. Outputs and partial rows are poisoned before each run.
#include "emu_decode_path.hpp"

#include "gfx950/decode_emulated.hpp"
#include "gfx950/launch_decode.hpp"
#include "support/decode_queries_case.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace uqtest;
using HostMem = Kokkos::HostSpace;

// A run's results: out and lse, the partial rows (empty when P = 1 runs direct) and the counters.
struct QueriesRun {
  QueriesOutput got;
  std::vector<float> l, m;               // [T][Hk][P][QG]
  std::vector<std::uint16_t> partial;    // [T][Hk][P][QG][256] bits
  uq::Status status;
};

// How the emulated kernels are launched for a case.
struct EmuLaunch {
  int partitions = 0, tgpp = 0;   // the generic plan's (both paths use the same)
  int max_query_len = 0;          // the plan's (check_case: 0 is the case's largest n_b)
  int uniform_len = 0;            // > 0: the uniform form of this many tokens each (no query_start_loc)
  bool one_token_kernel = false;  // the one-token kernel on the same rows (every n_b = 1)
};

// The generic path through a DecodePlan (check = false, so that bad query_start_loc reach the
// device), and its P and TGPP.
QueriesRun run_generic(const QueriesCase& c, const QueriesData& qd, const DeviceQueriesInputs& in, EmuLaunch& e) {
  uq::DecodeConfig cfg = queries_config(c, false);
  cfg.backend = uq::Backend::Generic;
  if (e.uniform_len > 0) cfg.query_len = e.uniform_len;
  const uq::DecodeShape shape = queries_shape(c, qd, e.max_query_len);
  uq::DecodePlan<Exec> plan(Exec(), shape, cfg);
  QueriesRun r;
  r.got = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
    if (e.uniform_len > 0)
      plan.run(i.q, i.one.cache, i.one.tables, i.one.lens, out, lse);
    else
      plan.run(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse);
  });
  EXPECT_EQ(plan.path(), uq::Path::Generic);
  r.status = plan.status();
  if (plan.partitions() > 1) {
    const std::size_t rows =
        static_cast<std::size_t>(qd.tokens) * c.base.num_kv_heads * plan.partitions() * c.base.qg;
    r.l = to_host(plan.partials().l);
    r.m = to_host(plan.partials().m);
    r.l.resize(rows);
    r.m.resize(rows);
  }
  e.partitions = plan.partitions();
  e.tgpp = plan.tile_groups_per_partition();
  return r;
}

// The gfx950 kernels in the emulator, through the same views -> launch conversion as the HIP
// dispatch (uq/core/decode_launch.hpp): the multi-token kernel (or the one-token one), then the
// gfx950 reducer over the T query-token rows when P > 1.
QueriesRun run_emulated(const QueriesCase& c, const QueriesData& qd, const DeviceQueriesInputs& in,
                        const EmuLaunch& e) {
  const auto q = Kokkos::create_mirror_view_and_copy(HostMem(), in.q);
  const auto cache = Kokkos::create_mirror_view_and_copy(HostMem(), in.one.cache);
  const auto tables = Kokkos::create_mirror_view_and_copy(HostMem(), in.one.tables);
  const auto lens = Kokkos::create_mirror_view_and_copy(HostMem(), in.one.lens);
  const auto starts = Kokkos::create_mirror_view_and_copy(HostMem(), in.starts);
  const int T = qd.tokens, num_seqs = qd.d.num_seqs;
  const std::int64_t rows = static_cast<std::int64_t>(T) * c.base.num_kv_heads * e.partitions * c.base.qg;
  uq::impl::DecodePartials<HostMem> partials = poisoned_host_partials(rows);
  Kokkos::View<unsigned long long[uq::kNumCounters], HostMem> counters("emu counters");

  uq::impl::DecodeParams p;
  p.num_kv_heads = c.base.num_kv_heads;
  p.qg = c.base.qg;
  p.max_blocks_per_seq = static_cast<int>(tables.extent(1));
  p.partitions = e.partitions;
  p.tgpp = e.tgpp;
  p.scale = c.base.scale;
  p.q_rotated = c.base.q_rotated;
  p.query_len = e.uniform_len > 0 ? e.uniform_len : 1;  // as DecodePlan::run_queries
  p.max_query_len = e.uniform_len > 0 ? e.uniform_len : e.max_query_len;
  const bool direct = e.partitions == 1;

  QueriesRun r;
  r.got = run_queries(qd, in, [&](const auto&, const auto& out_view, const auto& lse_view) {
    auto out = Kokkos::create_mirror_view(HostMem(), out_view);
    auto lse = Kokkos::create_mirror_view(HostMem(), lse_view);
    Kokkos::deep_copy(out, out_view);
    Kokkos::deep_copy(lse, lse_view);
    const auto launch_partitions = [&](auto& launch) {
      if (direct) uq::impl::set_direct_outputs(launch, out, lse);
      using Launch = std::decay_t<decltype(launch)>;
      if constexpr (std::is_same_v<Launch, uq::impl::DecodeQueriesLaunch>)
        uq::gfx950::emulate_decode_queries(launch);
      else
        uq::gfx950::emulate_decode_partitions(launch);
    };
    if (e.one_token_kernel) {
      auto launch = uq::gfx950::decode_partitions_launch(q, uq::impl::cache_addressing(cache), tables, lens, partials,
                                                         counters, p, num_seqs, nullptr);
      launch_partitions(launch);
    } else {
      const uq::impl::NoQueryStarts<HostMem> none;
      auto launch = e.uniform_len > 0
                        ? uq::impl::decode_queries_launch(q, uq::impl::cache_addressing(cache), tables, lens, none,
                                                          partials, counters, p, num_seqs, nullptr)
                        : uq::impl::decode_queries_launch(q, uq::impl::cache_addressing(cache), tables, lens, starts,
                                                          partials, counters, p, num_seqs, nullptr);
      launch_partitions(launch);
    }
    if (!direct) {
      auto reduce = uq::gfx950::decode_reduce_launch(partials, out, p, T, nullptr);  // one row per query token
      uq::impl::set_reduce_lse(reduce, lse);
      uq::gfx950::emulate_decode_reduce(reduce);
    }
    Kokkos::deep_copy(out_view, out);
    Kokkos::deep_copy(lse_view, lse);
  });
  for (std::int64_t i = 0; i < rows; ++i) {
    if (direct) {
      EXPECT_EQ(partials.l(i), kPoisonPartialL) << "a direct run wrote partition row " << i;
      continue;
    }
    r.l.push_back(partials.l(i));
    r.m.push_back(partials.m(i));
    for (int d = 0; d < 256; ++d) r.partial.push_back(partials.out(i * 256 + d).bits);
  }
  for (int k = 0; k < uq::kNumCounters; ++k) r.status.counts[k] = counters(k);
  return r;
}

// Each query token's row of a multi-token run (`several`) against the one-token kernel run once
// per query token on the positions that token sees: the same bits, lse included.
void expect_rows_match_prefix_decodes(const QueriesCase& c, const QueriesData& qd, const DeviceQueriesInputs& in,
                                      const EmuLaunch& e, const QueriesRun& several, const std::string& name) {
  QueriesData each_qd = qd;
  each_qd.d.num_seqs = qd.tokens;
  EmuLaunch one = e;
  one.one_token_kernel = true;
  const QueriesRun prefixes = run_emulated(c, each_qd, one_sequence_per_query_token(c, qd, in), one);
  expect_bit_identical(several.got, prefixes.got, name);
}

std::vector<int> query_lens_of(const QueriesCase& c, const EmuLaunch& e) {
  return e.uniform_len > 0 ? std::vector<int>(c.base.seq_lens.size(), e.uniform_len) : c.query_lens;
}

// The query token and query head of partial row i = ((t * Hk + h) * P + p) * QG + r.
struct RowOf {
  std::size_t token, head;
};
RowOf row_of(const QueriesCase& c, int partitions, std::size_t i) {
  const std::size_t qg = static_cast<std::size_t>(c.base.qg), hk = static_cast<std::size_t>(c.base.num_kv_heads);
  const std::size_t th = i / qg / static_cast<std::size_t>(partitions);
  return RowOf{th / hk, (th % hk) * qg + i % qg};
}

// The emulated run against the generic one on the rows the reference defines: elements within
// generic_tolerance (and all but 1 in 200 within its no-flip part), rows that see nothing exactly
// +0 on both, NaN rows NaN on both; lse within lse_generic_tolerance; the partition rows (P > 1)
// written exactly where l > 0, empty and non-finite on the same rows as generic, m and l close
// (emu_decode_path.cpp, compare_partitions); every counter equal.
void expect_close_to_generic(const std::string& name, const QueriesCase& c, const QueriesData& qd,
                             const uqref::DecodeResult& ref, const QueriesRun& e, const QueriesRun& g,
                             int partitions) {
  const int hq = qd.d.hq;
  std::int64_t elements = 0, beyond_smooth = 0;
  int reported = 0;
  for (int t = 0; t < qd.tokens; ++t) {
    if (!ref.defined[t]) continue;
    for (int h = 0; h < hq; ++h) {
      const std::size_t row = static_cast<std::size_t>(t) * hq + h;
      for (int d = 0; d < 256; ++d) {
        const std::size_t k = row * 256 + d;
        const double got = bf16_value(e.got.out[k]), want = bf16_value(g.got.out[k]);
        if (ref.nonfinite_q[row] || ref.attended[row] == 0) {
          const bool same = ref.nonfinite_q[row] ? std::isnan(got) && std::isnan(want)
                                                 : e.got.out[k] == 0 && g.got.out[k] == 0;
          if (!same && reported++ < 5) ADD_FAILURE() << name << ": token " << t << " head " << h << " dim " << d;
          continue;
        }
        const GenericTolerance tol = generic_tolerance(want, ref.vmax[k], ref.score_abs[row], ref.attended[row]);
        const double err = std::fabs(got - want);
        ++elements;
        if (!(err <= tol.smooth)) ++beyond_smooth;
        if (!(err <= tol.smooth + tol.flips) && reported++ < 5)
          ADD_FAILURE() << name << ": token " << t << " head " << h << " dim " << d << ": emulated " << got
                        << ", generic " << want << ", |err| " << err << " > " << tol.smooth + tol.flips;
      }
      const float el = e.got.lse[row], gl = g.got.lse[row];
      if (std::isnan(gl) || gl == -INFINITY) {
        EXPECT_TRUE(std::isnan(gl) ? std::isnan(el) : el == -INFINITY) << name << ": lse of token " << t << " head " << h;
      } else {
        EXPECT_LE(std::fabs(static_cast<double>(el) - gl),
                  lse_generic_tolerance(gl, ref.score_abs[row], static_cast<double>(ref.attended[row])))
            << name << ": lse of token " << t << " head " << h << ": emulated " << el << ", generic " << gl;
      }
    }
  }
  EXPECT_LE(beyond_smooth * 200, elements) << name << ": " << beyond_smooth << " of " << elements
                                           << " elements beyond the no-flip bound";
  ASSERT_EQ(e.l.size(), g.l.size()) << name;
  const double u32 = std::ldexp(1.0, -24);
  for (std::size_t i = 0; i < e.l.size(); ++i) {
    const RowOf at = row_of(c, partitions, i);
    if (!ref.defined[at.token]) continue;
    int poisoned = 0;
    for (int d = 0; d < 256; ++d) poisoned += e.partial[i * 256 + d] == kPoisonBf16;
    EXPECT_EQ(poisoned, e.l[i] > 0.0f ? 0 : 256) << name << ": partition row " << i << " (l = " << e.l[i] << ")";
    ASSERT_EQ(std::isnan(e.l[i]), std::isnan(g.l[i])) << name << ": partition row " << i << " (non-finite q)";
    if (std::isnan(g.l[i])) continue;
    ASSERT_EQ(e.m[i] == -INFINITY, g.m[i] == -INFINITY) << name << ": partition row " << i;
    if (g.m[i] == -INFINITY) {
      EXPECT_EQ(e.l[i], 0.0f) << name << ": empty partition row " << i;
      continue;
    }
    const double S = ref.score_abs[at.token * static_cast<std::size_t>(hq) + at.head];
    const double m_tol = 96.0 * u32 * (std::fabs(g.m[i]) + S);
    EXPECT_LE(std::fabs(e.m[i] - g.m[i]), m_tol) << name << ": partition row " << i << " m";
    const double l_tol = (8.0 * (1.0 + S) + 4096.0) * u32 * g.l[i] + 2.0 * m_tol * g.l[i];
    EXPECT_LE(std::fabs(e.l[i] - g.l[i]), l_tol) << name << ": partition row " << i << " l";
  }
  for (int k = 0; k < uq::kNumCounters; ++k)
    EXPECT_EQ(e.status.counts[k], g.status.counts[k]) << name << ": counter " << uq::counter_name(static_cast<uq::Counter>(k));
}

// Both paths on a case, the emulated one checked against the reference and the generic one.
// Returns the emulated run.
QueriesRun check_case(const QueriesCase& c, EmuLaunch e) {
  const QueriesData qd = build_queries_data(c);
  const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
  if (e.max_query_len == 0) e.max_query_len = e.uniform_len > 0 ? e.uniform_len : c.largest();
  const QueriesRun g = run_generic(c, qd, in, e);
  const QueriesRun emu = run_emulated(c, qd, in, e);
  const std::string name = c.name() + " P " + std::to_string(e.partitions) + (e.uniform_len > 0 ? " uniform" : "");
  const uqref::DecodeResult ref = reference_queries(c, qd, e.max_query_len);
  EXPECT_EQ(ref.bad_start_locs, 0u) << name << ": the cases here are well formed";
  EXPECT_EQ(emu.status[uq::Counter::bad_start_locs], 0u) << name;
  const double worst = expect_queries_match(name + " (emulated)", qd, ref, emu.got);
  expect_close_to_generic(name, c, qd, ref, emu, g, e.partitions);
  std::printf("[ emulated ] %-70s P %3d TGPP %d: vs reference max err/tol %.3f\n", name.c_str(), e.partitions, e.tgpp,
              worst);
  return emu;
}

void expect_same_bits(const std::string& name, const QueriesRun& a, const QueriesRun& b) {
  EXPECT_EQ(a.got.out, b.got.out) << name << ": out";
  ASSERT_EQ(a.got.lse.size(), b.got.lse.size()) << name;
  for (std::size_t k = 0; k < a.got.lse.size(); ++k)
    ASSERT_EQ(std::memcmp(&a.got.lse[k], &b.got.lse[k], sizeof(float)), 0) << name << ": lse " << k;
  ASSERT_EQ(a.l.size(), b.l.size()) << name;
  EXPECT_EQ(std::memcmp(a.l.data(), b.l.data(), a.l.size() * sizeof(float)), 0) << name << ": partition l";
  EXPECT_EQ(std::memcmp(a.m.data(), b.m.data(), a.m.size() * sizeof(float)), 0) << name << ": partition m";
  EXPECT_EQ(a.partial, b.partial) << name << ": partial rows";
}

// A plan taking max_query_len tokens run with every n_b = 1 (five sequences of 700, 0, 1, 64 and
// 300 tokens, block size 64) gives the one-token gfx950 kernel's bits, partition rows included;
// the multi-token run is also checked against the reference (check_case).
void expect_one_token_rows_bit_identical(int qg, int partitions, int max_query_len, int seed,
                                         const std::string& label) {
  QueriesCase c;
  c.base.qg = qg;
  c.base.block_size = 64;
  c.base.seq_lens = {700, 0, 1, 64, 300};
  c.base.partitions = partitions;
  c.base.seed = seed + qg + partitions;
  c.query_lens.assign(5, 1);
  EmuLaunch e;
  e.max_query_len = max_query_len;
  const QueriesRun several = check_case(c, e);
  const QueriesData qd = build_queries_data(c);
  const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
  run_generic(c, qd, in, e);  // the same P and TGPP
  e.one_token_kernel = true;
  const QueriesRun one = run_emulated(c, qd, in, e);
  expect_same_bits(label + std::to_string(qg) + " P " + std::to_string(e.partitions), several, one);
}

// A ragged batch for the tile's rows (n_b QG <= 16): lengths 0, 1, 15, 17, 300, 5, 257 and 511
// with n_b up to 2 (QG 6, 8: 2 > L = 1 and 2 > L = 0, rows that see nothing) or 1 (QG 16), and 0.
QueriesCase ragged_case(int qg, int block_size, std::uint64_t seed) {
  QueriesCase c;
  c.base.qg = qg;
  c.base.block_size = block_size;
  c.base.num_kv_heads = qg == 16 ? 1 : 2;
  c.base.seq_lens = {0, 1, 15, 17, 300, 5, 257, 511};
  c.base.max_blocks_per_seq = (511 + block_size - 1) / block_size + 1;
  c.base.seed = seed;
  c.query_lens = qg == 16 ? std::vector<int>{1, 1, 0, 1, 1, 1, 0, 1} : std::vector<int>{2, 2, 0, 1, 2, 1, 2, 2};
  return c;
}

class EmuDecodeQueriesMatrix : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

// Every QG with the n_b that fit, block sizes 16 and 256, P = 1 (direct) and the default split.
TEST_P(EmuDecodeQueriesMatrix, RaggedQueryTokensMatchReferenceAndGeneric) {
  const int qg = std::get<0>(GetParam()), bs = std::get<1>(GetParam()), partitions = std::get<2>(GetParam());
  QueriesCase c = ragged_case(qg, bs, 500 + qg + bs + partitions);
  c.base.partitions = partitions;
  check_case(c, EmuLaunch{});
}

INSTANTIATE_TEST_SUITE_P(QgBlockP, EmuDecodeQueriesMatrix,
                         ::testing::Combine(::testing::Values(6, 8, 16), ::testing::Values(16, 256),
                                            ::testing::Values(1, 0)));

// Odd partition counts (a column's hidden last token at a tile-group's end, in another
// partition than the rest), a pre-rotated q, and a plan whose max_query_len is above every n_b.
TEST(EmuDecodeQueries, PartitionCountsRotationAndALargerPlan) {
  for (int partitions : {3, 7}) {
    QueriesCase c;
    c.base.qg = 6;
    c.base.block_size = 32;
    c.base.seq_lens = {257, 256, 513, 16, 33};
    c.base.partitions = partitions;
    c.base.q_rotated = partitions == 3;
    c.base.seed = 600 + partitions;
    c.query_lens = {2, 2, 1, 2, 2};
    EmuLaunch e;
    e.max_query_len = partitions == 7 ? 2 : 0;
    check_case(c, e);
  }
}

// The uniform form (no query_start_loc): QL 2 at QG 6 and 8, QL 1 at QG 16, direct and split.
TEST(EmuDecodeQueries, UniformForm) {
  for (int qg : {6, 8, 16})
    for (int partitions : {1, 4}) {
      const int ql = qg == 16 ? 1 : 2;
      QueriesCase c;
      c.base.qg = qg;
      c.base.block_size = 16;
      c.base.seq_lens = {190, 1, 47};
      c.base.partitions = partitions;
      c.base.seed = 650 + qg + partitions;
      c.query_lens.assign(3, ql);
      EmuLaunch e;
      e.uniform_len = ql;
      check_case(c, e);
    }
}

// With every n_b = 1 the multi-token kernel gives the one-token gfx950 kernel's bits: out, lse,
// and every partition row (l, m and the partial row), at P = 1, 5 and the default, every QG, on a
// plan that takes up to 2 tokens (1 at QG 16).
TEST(EmuDecodeQueries, OneQueryTokenPerSequenceIsBitIdenticalToTheOneTokenKernel) {
  for (int qg : {6, 8, 16})
    for (int partitions : {1, 5, 0})
      expect_one_token_rows_bit_identical(qg, partitions, qg == 16 ? 1 : 2, 700, "QG ");
}

// Each query token's row gives the bits of the one-token gfx950 kernel's decode of its sequence
// with seq_len = the tokens it sees (per column the multi-token kernel takes exactly that
// decode's steps), out and lse, P = 4 and 1: a column's hidden token at a tile's first position
// (L - 1 = 16 k) and inside one.
TEST(EmuDecodeQueries, EachRowIsTheOneTokenKernelsDecodeOfItsPrefix) {
  for (int qg : {6, 8})
    for (int partitions : {4, 1}) {
      QueriesCase c;
      c.base.qg = qg;
      c.base.block_size = 16;
      c.base.seq_lens = {257, 2, 40, 1};
      c.base.partitions = partitions;
      c.base.seed = 750 + qg + partitions;
      c.query_lens = {2, 2, 1, 2};
      const QueriesData qd = build_queries_data(c);
      const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
      EmuLaunch e;
      e.max_query_len = 2;
      run_generic(c, qd, in, e);
      const QueriesRun several = run_emulated(c, qd, in, e);
      expect_rows_match_prefix_decodes(c, qd, in, e, several, "QG " + std::to_string(qg) + " P " + std::to_string(partitions));
    }
}

// check = false: the kernel judges each sequence's query_start_loc range on the device: a
// malformed one is skipped (no read, no row: with P = 1 its rows keep their poison) and counted
// once, as the generic path counts it; the other sequences' rows are right.
TEST(EmuDecodeQueries, BadQueryStartLocIsMaskedAndCountedOnTheDevice) {
  QueriesCase c;
  c.base.qg = 8;
  c.base.seq_lens = {100, 50, 20, 70};
  c.query_lens = {2, 2, 2, 2};
  c.base.seed = 800;
  struct Bad {
    std::vector<std::int32_t> starts;
    std::uint64_t count;
  };
  // The plan takes n_b <= 2; T = 8.
  const Bad bad[] = {
      {{0, 2, 4, 6, 7}, 1},                // last != T: sequence 3
      {{0, 2, 1, 5, 8}, 3},                // decreasing: sequence 1; n_b 4 and 3 > 2: sequences 2, 3
      {{0, 2, 4, 100, 8}, 2},              // past T: sequences 2 and 3
      {{-5, 2, 4, 6, 8}, 1},               // negative first: sequence 0
      {{0, 2, -2147483647 - 1, 6, 8}, 2},  // sequences 1 and 2
  };
  for (const Bad& b : bad)
    for (int partitions : {1, 0}) {
      QueriesCase pc = c;
      pc.base.partitions = partitions;
      QueriesData qd = build_queries_data(pc);
      qd.starts = b.starts;
      DeviceQueriesInputs in = queries_inputs_on_device(pc, qd);
      in.starts = to_device(b.starts, "query_start_loc", b.starts.size());
      EmuLaunch e;
      e.max_query_len = 2;
      const QueriesRun g = run_generic(pc, qd, in, e);
      const QueriesRun emu = run_emulated(pc, qd, in, e);
      const std::string name = pc.name() + " starts[1] " + std::to_string(b.starts[1]) + " P " +
                               std::to_string(e.partitions);
      EXPECT_EQ(emu.status[uq::Counter::bad_start_locs], b.count) << name;
      const uqref::DecodeResult ref = reference_queries(pc, qd, 2);
      EXPECT_EQ(ref.bad_start_locs, b.count);
      expect_queries_match(name, qd, ref, emu.got);
      expect_close_to_generic(name, pc, qd, ref, emu, g, e.partitions);
      if (e.partitions == 1)
        for (int t = 0; t < qd.tokens; ++t) {
          bool covered = false;
          for (int s = 0; s < 4; ++s)
            covered = covered || (!uqref::malformed_start_loc(b.starts.data(), 4, s, qd.tokens, 2) &&
                                  b.starts[s] <= t && t < b.starts[s + 1]);
          if (!covered)
            for (int k = 0; k < qd.d.hq * 256; ++k)
              ASSERT_EQ(emu.got.out[static_cast<std::size_t>(t) * qd.d.hq * 256 + k], kPoisonBf16) << name << " " << t;
        }
    }
}

// Non-finite query rows among the tile's two query tokens: NaN rows and lse, counted once per
// (query token, query head), a token that sees nothing among them, direct and split. Token 0
// sees 256 of its sequence's 257 tokens: partition 1 holds only the one it does not see, and
// writes the empty state for its NaN row, as the generic path does (spec §5.9 allows either).
TEST(EmuDecodeQueries, NonFiniteQueryRowsAreNanAndCountedOnce) {
  for (int partitions : {1, 0}) {
    QueriesCase c;
    c.base.qg = 6;
    c.base.num_kv_heads = 2;
    c.base.seq_lens = {257, 1, 40};
    c.base.partitions = partitions;
    c.base.seed = 850 + partitions;
    c.query_lens = {2, 2, 2};  // token 2 (sequence 1's first) sees nothing
    c.q_overrides = {{0, 1, 5, 0x7FC0}, {1, 7, 255, 0x7F80}, {2, 0, 0, 0xFF80}, {5, 11, 3, 0x7F81}};
    const QueriesRun emu = check_case(c, EmuLaunch{});
    EXPECT_EQ(emu.status[uq::Counter::nonfinite_inputs], 4u);
  }
}

// The two-N-tile kernel (16 < max_query_len * QG <= 32): ragged n_b up to `ql` with 0, n_b >
// seq_len (L = 0, 1, 2) and n_b = seq_len, rows of a token split over both tiles (QG 6: token 2
// has heads 0-3 in tile 0, 4-5 in tile 1), against the reference and generic, P = 1, 3 and the
// default, block sizes 16 and 256.
class EmuDecodeQueriesTwoTiles : public ::testing::TestWithParam<std::tuple<int, int, int, int>> {};

TEST_P(EmuDecodeQueriesTwoTiles, RaggedQueryTokensMatchReferenceAndGeneric) {
  const int qg = std::get<0>(GetParam()), ql = std::get<1>(GetParam()), bs = std::get<2>(GetParam()),
            partitions = std::get<3>(GetParam());
  QueriesCase c;
  c.base.qg = qg;
  c.base.block_size = bs;
  c.base.num_kv_heads = qg == 16 ? 1 : 2;
  c.base.seq_lens = {0, 1, 2, 17, 300, 5, 257, 511, 33};
  c.base.max_blocks_per_seq = (511 + bs - 1) / bs + 1;
  c.base.partitions = partitions;
  c.base.seed = 900 + 10 * qg + ql + bs + partitions;
  const int mid = ql > 2 ? ql - 1 : 1;
  c.query_lens = {ql, ql, 2, 0, ql, ql, mid, ql, 1};  // 2 and ql > L at L = 0, 1, 2; ql = L at L = 5 (QL 5)
  EmuLaunch e;
  e.max_query_len = ql;
  check_case(c, e);
}

INSTANTIATE_TEST_SUITE_P(QgQlBlockP, EmuDecodeQueriesTwoTiles,
                         ::testing::Values(std::make_tuple(6, 3, 16, 0), std::make_tuple(6, 4, 16, 1),
                                           std::make_tuple(6, 5, 256, 0), std::make_tuple(6, 5, 16, 3),
                                           std::make_tuple(6, 4, 256, 0), std::make_tuple(8, 3, 256, 1),
                                           std::make_tuple(8, 4, 16, 0), std::make_tuple(8, 4, 256, 3),
                                           std::make_tuple(16, 2, 16, 0), std::make_tuple(16, 2, 256, 1)));

// The uniform form on the two-N-tile kernel: QL 4 at QG 6 (the shape) and 8, 2 at QG 16.
TEST(EmuDecodeQueries, UniformFormTwoTiles) {
  for (int qg : {6, 8, 16}) {
    const int ql = qg == 16 ? 2 : 4;
    QueriesCase c;
    c.base.qg = qg;
    c.base.block_size = 16;
    c.base.seq_lens = {190, 3, 47};
    c.base.partitions = 4;
    c.base.seed = 950 + qg;
    c.query_lens.assign(3, ql);
    EmuLaunch e;
    e.uniform_len = ql;
    check_case(c, e);
  }
}

// The two-N-tile kernel with every n_b = 1 (a plan taking 32 / QG tokens) gives the one-token
// kernel's bits, as the one-tile kernel does: tile 0's columns run that kernel's steps, tile 1's
// hold no row.
TEST(EmuDecodeQueries, TwoTilesWithOneQueryTokenPerSequenceAreBitIdenticalToTheOneTokenKernel) {
  for (int qg : {6, 8, 16})
    for (int partitions : {1, 0})
      expect_one_token_rows_bit_identical(qg, partitions, 32 / qg, 970, "two tiles, QG ");
}

// Each query token's row on the two-N-tile kernel, tile 1's included, gives the bits of the
// one-token kernel's decode of its prefix (as EachRowIsTheOneTokenKernelsDecodeOfItsPrefix).
TEST(EmuDecodeQueries, TwoTilesEachRowIsTheOneTokenKernelsDecodeOfItsPrefix) {
  for (int qg : {6, 16})
    for (int partitions : {4, 1}) {
      const int ql = 32 / qg;
      QueriesCase c;
      c.base.qg = qg;
      c.base.block_size = 16;
      c.base.seq_lens = {257, 3, 40, 1};
      c.base.partitions = partitions;
      c.base.seed = 990 + qg + partitions;
      c.query_lens = {ql, ql, 2, ql};
      const QueriesData qd = build_queries_data(c);
      const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
      EmuLaunch e;
      e.max_query_len = ql;
      run_generic(c, qd, in, e);
      const QueriesRun several = run_emulated(c, qd, in, e);
      expect_rows_match_prefix_decodes(c, qd, in, e, several, "two tiles, QG " + std::to_string(qg) + " P " + std::to_string(partitions));
    }
}

// The launches the kernel cannot take: a sequence's query rows past two 16-column MFMA N tiles
// (max_query_len * qg > 32) are refused with the reason, which the dispatch reports when Auto
// falls back to the generic path (arch/gfx950/tuned_path.hpp); the largest that fit are taken.
TEST(EmuDecodeQueries, LaunchesPastTwoTilesAreRefusedWithAReason) {
  uq::impl::DecodeQueriesLaunch l;
  l.num_seqs = 1;
  l.block_size = 16;
  l.num_kv_heads = 1;
  l.slot_bytes = 272;
  l.partitions = 1;
  l.tgpp = 1;
  l.q_stride_seq = 6 * 256;
  l.q_stride_head = 256;
  l.num_query_tokens = 5;  // the uniform form of 32 / qg tokens fits; 3 sequences of 2 below do not
  for (int qg : {6, 8, 16}) {
    l.qg = qg;
    const int fit = 32 / qg;
    l.max_query_len = fit;
    l.query_len = fit;
    EXPECT_NO_THROW(uq::gfx950::make_decode_queries_kernel_args(l)) << "qg " << qg;
    l.max_query_len = fit + 1;
    l.query_len = 1;
    expect_error([&] { uq::gfx950::make_decode_queries_kernel_args(l); },
                 {"uq::gfx950::launch_decode_queries", "max_query_len", "max_query_len * qg <= 32",
                  "two 16-column MFMA N tiles",
                  std::to_string(fit + 1) + " at qg " + std::to_string(qg)});
  }
  // The uniform form past what the plan takes, and past T.
  l.qg = 8;
  l.max_query_len = 1;
  l.query_len = 2;
  expect_error([&] { uq::gfx950::make_decode_queries_kernel_args(l); }, {"query_len", "1 .. max_query_len"});
  l.max_query_len = 2;
  l.num_seqs = 3;
  expect_error([&] { uq::gfx950::make_decode_queries_kernel_args(l); }, {"num_query_tokens", ">= num_seqs * query_len"});
}

}  // namespace
