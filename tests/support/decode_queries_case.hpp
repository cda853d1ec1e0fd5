// A decode case with several query tokens per sequence (spec ultraquant.md §5.9): the cache,
// tables and lengths of a DecodeCase (decode_case.hpp), the number of query tokens of each
// sequence, and q as the query heads of a fused [T, Hq + 2 Hk, 256] QKV buffer (strided rows).
// check_queries runs a decode over it and compares every row with the float64 reference
// (reference/, with query_start_loc) within the one-token decode's tolerances, per row: each row
// is a one-token decode of its visible prefix, so decode_tolerance and lse_tolerance apply to it
// with that row's own reference statistics (attended tokens, score and V magnitudes); rows the
// sm90 path computed are held to that path's one-token tolerance (support/sm90_decode_path.hpp)
// in the same way.
#pragma once

#include "support/decode_case.hpp"
#include "support/reference_inputs.hpp"
#include "support/sm90_decode_path.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace uqtest {

struct QueriesCase {
  DecodeCase base;              // cache, lengths (they count the new tokens), qg, P, scale, ...
  std::vector<int> query_lens;  // n_b per sequence (its size is the number of sequences)
  // q elements replaced after generation: (query token, query head, dim, bf16 bits).
  std::vector<DecodeCase::QElement> q_overrides;

  std::string name() const {
    std::string s = base.name() + " n_b";
    for (int n : query_lens) s += " " + std::to_string(n);
    return s;
  }
  std::vector<std::int32_t> starts() const {
    std::vector<std::int32_t> locs{0};
    for (int n : query_lens) locs.push_back(locs.back() + n);
    return locs;
  }
  int tokens() const { return starts().back(); }
  int largest() const {
    int m = 1;
    for (int n : query_lens) m = std::max(m, n);
    return m;
  }
};

// The host data of a case: the one-token case's cache, tables and lengths, and q of T rows.
struct QueriesData {
  DecodeData d;                    // d.qkv unused
  std::vector<std::uint16_t> qkv;  // [T][Hq + 2 Hk][256], q = heads [0, Hq)
  std::vector<std::int32_t> starts;
  int tokens = 0;
};

inline QueriesData build_queries_data(const QueriesCase& c) {
  QueriesData qd;
  qd.d = build_decode_data(c.base);
  qd.starts = c.starts();
  qd.tokens = qd.starts.back();
  const int heads = qd.d.hq + 2 * c.base.num_kv_heads;
  qd.qkv.resize(static_cast<std::size_t>(qd.tokens) * heads * 256);
  RowGenerator qgen(c.base.seed * 7 + 5, 256, 0);
  for (std::size_t r = 0; r < qd.qkv.size() / 256; ++r) qgen.fill(&qd.qkv[r * 256], c.base.q_sigma);
  for (const auto& e : c.q_overrides)
    qd.qkv[(static_cast<std::size_t>(e.seq) * heads + e.head) * 256 + e.dim] = e.bits;
  return qd;
}

inline uqref::DecodeResult reference_queries(const QueriesCase& c, const QueriesData& qd, int max_query_len) {
  uqref::DecodeInputs in = reference_decode_inputs(
      qd.qkv.data(), qd.d.hq + 2 * c.base.num_kv_heads, c.base.qg, qd.d.cache.data(), qd.d.num_blocks,
      c.base.block_size, c.base.num_kv_heads, c.base.slot_bytes, qd.d.tables.data(), qd.d.max_blocks,
      qd.d.seq_lens.data(), qd.d.num_seqs, c.base.scale);
  in.q_rotated = c.base.q_rotated;
  in.query_start_loc = qd.starts.data();
  in.num_query_tokens = qd.tokens;
  in.max_query_len = max_query_len;
  return uqref::uq_decode(in);
}

// A case's inputs on the device: q the strided query heads of the fused buffer, query_start_loc.
struct DeviceQueriesInputs {
  DeviceDecodeInputs one;  // cache, tables, lens (one.q unused: a one-token q)
  DeviceView<uq::bf16***> fused;
  Kokkos::View<const uq::bf16***, Kokkos::LayoutStride, Mem> q;
  Kokkos::View<const std::int32_t*, Kokkos::LayoutRight, Mem> starts;
};

inline DeviceQueriesInputs queries_inputs_on_device(const QueriesCase& c, const QueriesData& qd) {
  DeviceQueriesInputs in;
  in.one = decode_inputs_on_device(c.base, qd.d);
  std::vector<uq::bf16> qkv(qd.qkv.size());
  for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i].bits = qd.qkv[i];
  in.fused = to_device(qkv, "qkv", qd.tokens, qd.d.hq + 2 * c.base.num_kv_heads, 256);
  in.q = Kokkos::subview(in.fused, Kokkos::ALL, std::make_pair(0, qd.d.hq), Kokkos::ALL);
  in.starts = to_device(qd.starts, "query_start_loc", qd.starts.size());
  return in;
}

// What a run gives back: out [T][Hq][256] bits and lse [T][Hq].
struct QueriesOutput {
  std::vector<std::uint16_t> out;
  std::vector<float> lse;
};

// Today's way of running several query tokens (what engines do without §5.9): one sequence per
// query token, with its sequence's block-table row and seq_len = the positions that token sees.
// The result is `in` with those T tables and lengths (q, cache and query_start_loc unchanged).
inline DeviceQueriesInputs one_sequence_per_query_token(const QueriesCase& c, const QueriesData& qd,
                                                        const DeviceQueriesInputs& in) {
  std::vector<std::int32_t> tables, lens;
  for (int b = 0; b < qd.d.num_seqs; ++b)
    for (int j = 0; j < c.query_lens[b]; ++j) {
      tables.insert(tables.end(), qd.d.tables.begin() + b * qd.d.max_blocks,
                    qd.d.tables.begin() + (b + 1) * qd.d.max_blocks);
      lens.push_back(std::max(c.base.seq_lens[b] - c.query_lens[b] + j + 1, 0));
    }
  DeviceQueriesInputs each = in;
  each.one.tables = to_device(tables, "tables", qd.tokens, qd.d.max_blocks);
  each.one.lens = to_device(lens, "lens", qd.tokens);
  return each;
}

// Two runs' out and lse bit for bit (lse compared as bits, so -inf and NaN rows count too).
inline void expect_bit_identical(const QueriesOutput& a, const QueriesOutput& b, const std::string& name) {
  EXPECT_EQ(a.out, b.out) << name;
  ASSERT_EQ(a.lse.size(), b.lse.size()) << name;
  for (std::size_t k = 0; k < a.lse.size(); ++k)
    ASSERT_EQ(std::memcmp(&a.lse[k], &b.lse[k], sizeof(float)), 0) << name << " lse " << k;
}

using QueriesRunner = std::function<void(const DeviceQueriesInputs& in, const DeviceView<uq::bf16***>& out,
                                         const LseView& lse)>;

// Runs `run` into poisoned out and lse ([T, Hq], a transposed view) and copies them back.
inline QueriesOutput run_queries(const QueriesData& qd, const DeviceQueriesInputs& in, const QueriesRunner& run) {
  DeviceView<uq::bf16***> out("out", qd.tokens, qd.d.hq, 256);
  Kokkos::deep_copy(out, uq::bf16{kPoisonBf16});
  DeviceView<float**> lse_storage("lse storage", qd.d.hq, qd.tokens);
  Kokkos::deep_copy(lse_storage, kPoisonLse);
  const LseView lse(lse_storage.data(), Kokkos::LayoutStride(static_cast<std::size_t>(qd.tokens), 1,
                                                             static_cast<std::size_t>(qd.d.hq),
                                                             static_cast<std::size_t>(qd.tokens)));
  run(in, out, lse);
  QueriesOutput r;
  for (const uq::bf16& x : to_host(out)) r.out.push_back(x.bits);
  r.lse = to_host(lse);
  return r;
}

// The tolerances of a run's rows (row: token x Hq + query head; k: row x 256 + dim), by the path
// that ran: the one-token decode's (decode_tolerance, lse_tolerance), or for Path::Sm90 the FP8
// wgmma's (sm90_tolerance, sm90_lse_tolerance) with each row's group maximum over the tokens it
// sees (a row covered by several ranges of a bad query_start_loc: the largest, which only widens it).
struct QueriesTolerance {
  std::function<double(const uqref::DecodeResult&, std::size_t, std::size_t)> out;
  std::function<double(const uqref::DecodeResult&, std::size_t)> lse;
};

inline QueriesTolerance queries_tolerance(const QueriesCase& c, const QueriesData& qd, uq::Path path) {
  QueriesTolerance t;
  if (path != uq::Path::Sm90) {
    t.out = [](const uqref::DecodeResult& ref, std::size_t row, std::size_t k) {
      return decode_tolerance(ref.out[k], ref.vmax[k], ref.score_abs[row], ref.attended[row]);
    };
    t.lse = [](const uqref::DecodeResult& ref, std::size_t row) {
      return lse_tolerance(ref.lse[row], ref.score_abs[row], ref.attended[row]);
    };
    return t;
  }
  const int hq = qd.d.hq, heads = hq + 2 * c.base.num_kv_heads;
  const std::int64_t cap = static_cast<std::int64_t>(qd.d.max_blocks) * c.base.block_size;
  auto gmax = std::make_shared<std::vector<double>>(static_cast<std::size_t>(qd.tokens) * hq, 0.0);
  for (int b = 0; b + 1 < static_cast<int>(qd.starts.size()); ++b) {
    const std::int64_t s = qd.starts[b], e = qd.starts[b + 1];
    if (s < 0 || e < s || e > qd.tokens) continue;  // malformed: no row of it is defined
    const std::int64_t L = std::min<std::int64_t>(std::max(qd.d.seq_lens[b], 0), cap), n = e - s;
    for (std::int64_t i = s; i < e; ++i)
      for (int h = 0; h < hq; ++h) {
        double& g = (*gmax)[static_cast<std::size_t>(i) * hq + h];
        g = std::max(g, group_max_abs_row(c.base, qd.d, &qd.qkv[(static_cast<std::size_t>(i) * heads + h) * 256], b, h,
                                          std::max<std::int64_t>(L - n + (i - s) + 1, 0)));
      }
  }
  t.out = [gmax](const uqref::DecodeResult& ref, std::size_t row, std::size_t k) {
    return sm90_tolerance(ref.out[k], ref.vmax[k], ref.score_abs[row], (*gmax)[row], ref.attended[row]);
  };
  t.lse = [gmax](const uqref::DecodeResult& ref, std::size_t row) {
    return sm90_lse_tolerance(ref.lse[row], ref.score_abs[row], (*gmax)[row], ref.attended[row]);
  };
  return t;
}

// Every row defined by the reference (covered by one well-formed range) against it: elements
// within the tolerance (by default the one-token decode's, decode_tolerance and lse_tolerance,
// per row); a row that sees no token exactly +0 and lse -inf; a non-finite query row NaN
// everywhere and a NaN lse. Returns the worst error / tolerance.
inline double expect_queries_match(const std::string& name, const QueriesData& qd, const uqref::DecodeResult& ref,
                                   const QueriesOutput& got, const QueriesTolerance& tolerance = {}) {
  int reported = 0;
  double worst = 0.0;
  const int hq = qd.d.hq;
  for (int i = 0; i < qd.tokens; ++i) {
    if (!ref.defined[i]) continue;
    for (int h = 0; h < hq; ++h) {
      const std::size_t row = static_cast<std::size_t>(i) * hq + h;
      const bool nonfinite = ref.nonfinite_q[row] != 0;
      for (int e = 0; e < 256; ++e) {
        const std::size_t k = row * 256 + e;
        const double x = uq::codec::bf16_to_float(uq::bf16{got.out[k]});
        if (nonfinite) {
          if (!std::isnan(x) && reported++ < 5)
            ADD_FAILURE() << name << ": token " << i << " head " << h << " has a non-finite q: dim " << e
                          << " must be NaN, got " << x;
          continue;
        }
        if (ref.attended[row] == 0) {
          if (got.out[k] != 0 && reported++ < 5)
            ADD_FAILURE() << name << ": token " << i << " head " << h << " sees no token: must be +0, got bits "
                          << got.out[k];
          continue;
        }
        const double tol = tolerance.out ? tolerance.out(ref, row, k)
                                         : decode_tolerance(ref.out[k], ref.vmax[k], ref.score_abs[row], ref.attended[row]);
        const double err = std::fabs(x - ref.out[k]);
        worst = std::max(worst, std::isfinite(x) ? err / tol : INFINITY);
        if (!(err <= tol) && reported++ < 5)
          ADD_FAILURE() << name << ": token " << i << " head " << h << " dim " << e << ": got " << x << ", reference "
                        << ref.out[k] << ", |err| " << err << " > tol " << tol;
      }
      const double l = got.lse[row];
      if (nonfinite || ref.attended[row] == 0) {
        const bool ok = nonfinite ? std::isnan(l) : l == -INFINITY;
        if (!ok && reported++ < 5)
          ADD_FAILURE() << name << ": token " << i << " head " << h << ": lse must be "
                        << (nonfinite ? "NaN (non-finite q)" : "-inf (no token)") << ", got " << l;
        continue;
      }
      const double tol =
          tolerance.lse ? tolerance.lse(ref, row) : lse_tolerance(ref.lse[row], ref.score_abs[row], ref.attended[row]);
      if (!(std::fabs(l - ref.lse[row]) <= tol) && reported++ < 5)
        ADD_FAILURE() << name << ": token " << i << " head " << h << ": lse " << l << ", reference " << ref.lse[row]
                      << " > tol " << tol;
    }
  }
  return worst;
}

// A DecodePlan for the case: sized for its sequences and query tokens (max_query_len the case's
// largest n_b unless given), the case's scale, rotation and partitions, Backend::Generic or Auto.
inline uq::DecodeConfig queries_config(const QueriesCase& c, bool check = true) {
  uq::DecodeConfig cfg;
  cfg.softmax_scale = c.base.scale;
  cfg.q_rotated = c.base.q_rotated;
  cfg.partitions = c.base.partitions;
  cfg.check = check;
  return cfg;
}

// The path Auto takes for a plan of max_query_len query tokens at qg (spec §5.9): the device's
// multi-token kernel where its launcher takes the plan's query rows (max_query_len * qg <= 32 on
// both: sm90 in the N of one wgmma, arch/sm90/decode_launch_args.hpp; gfx950 in two 16-column
// MFMA N tiles, arch/gfx950/decode_launch_args.hpp), else the generic path.
inline uq::Path expected_queries_path(const uq::DeviceInfo& dev, int qg, int max_query_len) {
  const uq::Path tuned = uq::impl::DecodeDispatch<Exec>::QueriesTwoKernels::tuned_path(dev);
  const int rows = qg * max_query_len;
  if (tuned == uq::Path::Sm90) return rows <= 32 ? tuned : uq::Path::Generic;
  if (tuned == uq::Path::Gfx950) return rows <= 32 ? tuned : uq::Path::Generic;
  return tuned;
}

inline uq::DecodeShape queries_shape(const QueriesCase& c, const QueriesData& qd, int max_query_len = 0) {
  uq::DecodeShape s{qd.d.num_seqs, c.base.num_kv_heads, c.base.qg, c.base.block_size, qd.d.max_blocks};
  s.max_query_len = max_query_len > 0 ? max_query_len : c.largest();
  s.max_query_tokens = std::max(1, qd.tokens);
  return s;
}

// Every n_b = 1 through query_start_loc, on a plan made for up to 4 query tokens, gives the bits
// of the one-token decode under the same backend (spec §5.9), out and lse, at the default P,
// P = 1 and P = 5: a query row's arithmetic does not depend on the plan's other rows. The plan
// must take `path`.
inline void expect_one_token_per_sequence_is_the_one_token_decode(uq::Backend backend, uq::Path path) {
  for (int partitions : {0, 1, 5}) {
    QueriesCase c;
    c.base.qg = 6;
    c.base.seq_lens = {1000, 0, 1, 64, 300};
    c.base.partitions = partitions;
    c.query_lens.assign(5, 1);
    c.base.seed = 60 + partitions;
    const QueriesData qd = build_queries_data(c);
    const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
    uq::DecodeConfig cfg = queries_config(c);
    cfg.backend = backend;
    const QueriesOutput one = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
      uq::decode(i.q, i.one.cache, i.one.tables, i.one.lens, out, lse, cfg);
    });
    const QueriesOutput several = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
      uq::DecodePlan<Exec> plan(Exec(), queries_shape(c, qd, 4), cfg);
      plan.run(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse);
      EXPECT_EQ(plan.path(), path) << plan.path_reason();
    });
    expect_bit_identical(several, one, "P " + std::to_string(partitions));
  }
}

}  // namespace uqtest
