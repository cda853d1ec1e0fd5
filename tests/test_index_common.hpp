// Helpers shared by the NVFP4 index tests (test_index_*.cpp, test_sm90_score.cpp, the emulated
// and CLI ones): random pages, queries and block tables, strided device views, the score
// comparison with its tolerance, and a plan run on a chosen path.
#pragma once

#include "support/reference_inputs.hpp"
#include "support/score_tolerance.hpp"
#include "support/test_util.hpp"
#include "uq/score.hpp"
#include "uqref.hpp"

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace uqtest {
namespace index {

inline constexpr int kD = 128;
inline constexpr int kBlk = 128;
inline constexpr int kPage = 9216;
inline constexpr std::uint32_t kPoisonBits = 0x7fc0dead;  // a NaN payload no kernel writes

inline float poison_value() {
  float f;
  std::memcpy(&f, &kPoisonBits, sizeof f);
  return f;
}
inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Index keys with the shape real ones have: N(0, sigma) with a few outlier channels.
inline std::vector<float> random_keys(std::mt19937_64& rng, std::int64_t T, float sigma = 1.0f) {
  std::vector<float> gain(kD, 1.0f);
  std::uniform_int_distribution<int> pick(0, kD - 1);
  std::uniform_real_distribution<float> g(4.0f, 12.0f);
  for (int i = 0; i < 3; ++i) gain[pick(rng)] = g(rng);
  std::normal_distribution<float> n(0.0f, sigma);
  std::vector<float> k(static_cast<std::size_t>(T) * kD);
  for (std::int64_t t = 0; t < T; ++t)
    for (int d = 0; d < kD; ++d) k[t * kD + d] = n(rng) * gain[d];
  return k;
}

// A cache of num_blocks pages: all tokens written by the reference writer from random
// keys (random_codes = false), or every code byte random and every scale byte random in
// [0, max_scale] (random_codes = true).
inline std::vector<std::uint8_t> random_cache(std::mt19937_64& rng, std::int64_t num_blocks, bool random_codes,
                                              std::uint8_t max_scale = 0x50) {
  std::vector<std::uint8_t> cache(static_cast<std::size_t>(num_blocks) * kPage, 0);
  if (random_codes) {
    std::uniform_int_distribution<int> byte(0, 255), scale(0, max_scale);
    for (std::int64_t p = 0; p < num_blocks; ++p) {
      for (int i = 0; i < 8192; ++i) cache[p * kPage + i] = static_cast<std::uint8_t>(byte(rng));
      for (int i = 8192; i < kPage; ++i) cache[p * kPage + i] = static_cast<std::uint8_t>(scale(rng));
    }
    return cache;
  }
  const std::int64_t T = num_blocks * kBlk;
  const std::vector<float> keys = random_keys(rng, T);
  std::vector<std::int64_t> slots(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) slots[t] = t;
  uqref::nv_write_index_keys(keys.data(), slots.data(), T, cache.data(), num_blocks);
  return cache;
}

// E4M3 bytes of N(0, sigma) values (never NaN).
inline std::vector<std::uint8_t> random_q(std::mt19937_64& rng, std::int64_t n, double sigma = 2.0) {
  std::normal_distribution<double> d(0.0, sigma);
  std::vector<std::uint8_t> q(static_cast<std::size_t>(n));
  for (auto& b : q) b = uqref::e4m3_round(d(rng));
  return q;
}

// A device view [n0, n1, n2] of T whose strides are none of the defaults: the logical
// array is placed transposed ([n1][n0][n2] in memory) inside a padded allocation, so
// dims 0 and 1 are swapped in memory and dim 2 has stride 2.
template <class T>
struct StridedArray {
  Kokkos::View<T*, Mem> storage;
  Kokkos::View<T***, Kokkos::LayoutStride, Mem> view;

  StridedArray(const std::string& label, std::int64_t n0, std::int64_t n1, std::int64_t n2) {
    const std::int64_t s2 = 2, s0 = n2 * s2 + 3, s1 = n0 * s0 + 5;
    storage = Kokkos::View<T*, Mem>(label, static_cast<std::size_t>(n1 * s1 + 7));
    Kokkos::LayoutStride layout(static_cast<std::size_t>(n0), static_cast<std::size_t>(s0),
                                static_cast<std::size_t>(n1), static_cast<std::size_t>(s1),
                                static_cast<std::size_t>(n2), static_cast<std::size_t>(s2));
    view = Kokkos::View<T***, Kokkos::LayoutStride, Mem>(storage.data() + 3, layout);
  }
};

// Copies a row-major host array [n0][n1][n2] into any rank-3 device view of that
// shape. Strided views go through a contiguous device copy: Kokkos cannot deep_copy a
// non-contiguous view between host and device memory directly.
template <class View>
void fill_view(const View& v, const std::vector<typename View::non_const_value_type>& host) {
  using T = typename View::non_const_value_type;
  Kokkos::View<T***, Kokkos::LayoutRight, Mem> dense(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dense"),
                                                     v.extent(0), v.extent(1), v.extent(2));
  auto m = Kokkos::create_mirror_view(dense);
  for (std::size_t i = 0; i < host.size(); ++i) m.data()[i] = host[i];
  Kokkos::deep_copy(dense, m);
  Kokkos::deep_copy(v, dense);
}

// Any rank-3 device view as a row-major host vector (through a contiguous device copy).
template <class View>
std::vector<typename View::non_const_value_type> read_view(const View& v) {
  using T = typename View::non_const_value_type;
  Kokkos::View<T***, Kokkos::LayoutRight, Mem> dense(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dense"),
                                                     v.extent(0), v.extent(1), v.extent(2));
  Kokkos::deep_copy(dense, v);
  auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dense);
  return std::vector<T>(m.data(), m.data() + m.size());
}

// Per physical page and dim, max over the page's tokens of |k̂[t][d]| (for the error bound).
inline std::vector<double> page_key_maxima(const std::vector<std::uint8_t>& cache) {
  const std::int64_t pages = static_cast<std::int64_t>(cache.size()) / kPage;
  std::vector<double> m(static_cast<std::size_t>(pages) * kD, 0.0);
  for (std::int64_t p = 0; p < pages; ++p)
    for (int t = 0; t < kBlk; ++t)
      for (int d = 0; d < kD; ++d) {
        const double k = std::fabs(uqref::nv_dequant(cache.data() + p * kPage, t, d));
        if (k > m[p * kD + d]) m[p * kD + d] = k;
      }
  return m;
}

// Everything one score case needs on the host, in the reference's layout.
struct ScoreCase {
  int num_reqs = 0, query_len = 1, heads = 1, max_blocks = 0, init_blocks = 0, local_blocks = 0;
  std::int64_t S = 0;
  std::vector<std::uint8_t> q;        // [num_reqs * QL][H][128]
  std::vector<std::uint8_t> cache;    // [num_blocks][9216]
  std::vector<std::int32_t> tables;   // [num_reqs][max_blocks]
  std::vector<std::int32_t> seq_lens; // [num_reqs]
  std::int64_t num_blocks() const { return static_cast<std::int64_t>(cache.size()) / kPage; }
  std::int64_t rows() const { return static_cast<std::int64_t>(num_reqs) * query_len; }
};

// What a tuned path's score_launch takes of a case besides its views.
inline uq::impl::ScoreParams score_params_of(const ScoreCase& c) {
  uq::impl::ScoreParams p;
  p.query_len = c.query_len;
  p.heads = c.heads;
  p.init_blocks = c.init_blocks;
  p.local_blocks = c.local_blocks;
  p.max_blocks = c.max_blocks;
  return p;
}

// The bad-data case of every scorer: 4 requests of 2 query rows, 2 heads, 5 table columns over
// 7 pages, one init and one local block. Expected: bad_block_ids 2 (request 0's blocks 1 and 2:
// -inf for both heads and rows), negative_seq_lens 1, long_seq_lens 1 (1000 > 5 x 128), and
// the ids of blocks that need only a sentinel never read.
inline ScoreCase bad_ids_and_lengths_case(std::mt19937_64& rng) {
  ScoreCase c;
  c.cache = random_cache(rng, 7, false);
  c.seq_lens = {600, -5, 1000, 300};
  c.num_reqs = 4;
  c.query_len = 2;
  c.heads = 2;
  c.init_blocks = 1;
  c.local_blocks = 1;
  c.max_blocks = 5;
  c.S = 6;
  c.tables = {
      3, -1, 9, 0, 1,    // req 0: blocks 1 (-1) and 2 (9) bad and computed; 4 is local
      2, 2, 2, 2, 2,     // req 1: length -5 -> nothing
      99, 4, 5, 6, -3,   // req 2: block 0 is init only (bad id never read); block 4 local: -3 not read
      1, 2, 1000, 0, 0,  // req 3: L = 300, QL 2: rows see 299 and 300 (3 blocks): block 2 is
                         // local for both rows, so 1000 is never read
  };
  c.q = random_q(rng, c.rows() * c.heads * kD);
  return c;
}

// The reference scores of a case on a poisoned [H][rows][S] buffer.
inline std::vector<float> reference_scores(const ScoreCase& c) {
  std::vector<float> out(static_cast<std::size_t>(c.heads * c.rows() * c.S), poison_value());
  uqref::nv_score(uqtest::reference_score_inputs(c.q.data(), static_cast<std::int64_t>(c.heads) * kD, kD, c.heads,
                                                 c.cache.data(), c.num_blocks(), c.tables.data(), c.max_blocks,
                                                 c.seq_lens.data(), c.num_reqs, c.query_len, c.init_blocks,
                                                 c.local_blocks),
                  out.data(), c.S);
  return out;
}

// Compares scores entry by entry (both [H][rows][S], row-major):
//  * entries the reference leaves poisoned must keep the poison bit for bit;
//  * -inf and the sentinels 1e30 / 1e29 must be bit-exact;
//  * finite computed maxima must agree within score_tolerance (support/score_tolerance.hpp).
struct ScoreComparison {
  std::int64_t exact = 0, close = 0, poison = 0, bound_used = 0, failures = 0;
  double worst_spec_ratio = 0.0;  // max |got - ref| / (1e-4 + 1e-4 |ref|) over the finite entries

  ScoreComparison& operator+=(const ScoreComparison& o) {
    exact += o.exact;
    close += o.close;
    poison += o.poison;
    bound_used += o.bound_used;
    failures += o.failures;
    worst_spec_ratio = std::max(worst_spec_ratio, o.worst_spec_ratio);
    return *this;
  }
};

inline ScoreComparison compare_scores(const ScoreCase& c, const std::vector<float>& ref, const std::vector<float>& got,
                                      const std::vector<double>& key_max, const std::string& what) {
  ScoreComparison r;
  const std::int64_t rows = c.rows();
  for (int h = 0; h < c.heads; ++h)
    for (std::int64_t row = 0; row < rows; ++row)
      for (std::int64_t b = 0; b < c.S; ++b) {
        const std::size_t i = static_cast<std::size_t>((h * rows + row) * c.S + b);
        const float rv = ref[i], gv = got[i];
        bool ok;
        if (bits_of(rv) == kPoisonBits) {
          ok = bits_of(gv) == kPoisonBits;
          ++r.poison;
        } else if (!std::isfinite(rv) || rv == 1e30f || rv == 1e29f) {
          ok = bits_of(gv) == bits_of(rv);
          ++r.exact;
        } else {
          const std::int64_t req = row / c.query_len;
          const std::int32_t page = c.tables[req * c.max_blocks + b];
          double A = 0.0;
          const std::uint8_t* q = c.q.data() + (row * c.heads + h) * kD;
          for (int d = 0; d < kD; ++d) A += std::fabs(uqref::e4m3_value(q[d])) * key_max[page * kD + d];
          const double spec = score_spec_tolerance(rv);
          const double tol = score_tolerance(rv, A);
          if (tol > spec) ++r.bound_used;
          r.worst_spec_ratio = std::max(r.worst_spec_ratio, std::fabs(static_cast<double>(gv) - rv) / spec);
          ok = std::isfinite(gv) && std::fabs(static_cast<double>(gv) - rv) <= tol;
          ++r.close;
        }
        if (!ok) {
          if (++r.failures <= 10)
            ADD_FAILURE() << what << ": scores(h=" << h << ", row=" << row << ", b=" << b << ") = " << gv
                          << " (bits 0x" << std::hex << bits_of(gv) << "), reference " << rv << " (bits 0x"
                          << bits_of(rv) << std::dec << ")";
        }
      }
  return r;
}

// Random distinct pages for each request's blocks; the entries past a request's blocks hold
// ids outside the cache (-7 or num_blocks + 100), which the scorer never reads, so never counts.
inline std::vector<std::int32_t> shuffled_tables(std::mt19937_64& rng, const std::vector<std::int32_t>& lens,
                                                 int max_blocks, std::int64_t num_blocks) {
  std::vector<std::int32_t> pages(static_cast<std::size_t>(num_blocks));
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  std::vector<std::int32_t> t(lens.size() * max_blocks);
  std::size_t next = 0;
  for (std::size_t i = 0; i < lens.size(); ++i) {
    const std::int64_t nb = (std::max(lens[i], 0) + kBlk - 1) / kBlk;
    for (int b = 0; b < max_blocks; ++b)
      t[i * max_blocks + b] =
          b < nb ? pages[next++ % pages.size()] : ((b % 2) ? -7 : static_cast<std::int32_t>(num_blocks + 100));
  }
  return t;
}

// One request per length over `cache`, its blocks on shuffled pages of a block table
// max_blocks wide, S score columns, random E4M3 queries.
inline ScoreCase ragged_case(std::mt19937_64& rng, std::vector<std::uint8_t> cache, std::vector<std::int32_t> lens,
                             int QL, int H, int init, int local, int max_blocks, std::int64_t S) {
  ScoreCase c;
  c.cache = std::move(cache);
  c.seq_lens = std::move(lens);
  c.num_reqs = static_cast<int>(c.seq_lens.size());
  c.query_len = QL;
  c.heads = H;
  c.init_blocks = init;
  c.local_blocks = local;
  c.max_blocks = max_blocks;
  c.S = S;
  c.tables = shuffled_tables(rng, c.seq_lens, c.max_blocks, c.num_blocks());
  c.q = random_q(rng, c.rows() * H * kD);
  return c;
}

// The same with the block table as wide as the longest request needs (at least 1) and one
// spare score column.
inline ScoreCase simple_case(std::mt19937_64& rng, std::vector<std::uint8_t> cache, std::vector<std::int32_t> lens,
                             int QL, int H, int init, int local) {
  std::int32_t maxlen = 0;
  for (auto l : lens) maxlen = std::max(maxlen, l);
  const int max_blocks = std::max(1, (maxlen + kBlk - 1) / kBlk);
  return ragged_case(rng, std::move(cache), std::move(lens), QL, H, init, local, max_blocks, max_blocks + 1);
}

// Device copies of a case's inputs (q and scores in the given view types).
struct DeviceInputs {
  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Mem> cache;
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> tables;
  Kokkos::View<std::int32_t*, Mem> seq_lens;

  explicit DeviceInputs(const ScoreCase& c)
      : cache(to_device(c.cache, "index_cache", c.num_blocks(), kPage)),
        tables(to_device(c.tables, "block_tables", c.num_reqs, c.max_blocks)),
        seq_lens(to_device(c.seq_lens, "seq_lens", c.num_reqs)) {}
};

struct RunResult {
  std::vector<float> scores;  // [H][rows][S], logical order
  uq::Status status;
};

// The paths to test on this device: generic always, plus Native where this build has a tuned
// scorer for it (host builds: generic only, so no extra run in CI).
inline std::vector<uq::Backend> backends_to_test() {
  std::vector<uq::Backend> b{uq::Backend::Generic};
  if (uq::impl::ScoreDispatch<Exec>::tuned_path(uq::impl::device_info(Exec())) != uq::Path::Generic)
    b.push_back(uq::Backend::Native);
  return b;
}

inline uq::Path expected_path(uq::Backend backend, const uq::DeviceInfo& device) {
  return backend == uq::Backend::Generic ? uq::Path::Generic
                                         : uq::impl::ScoreDispatch<Exec>::tuned_path(device);
}

// Runs uq::ScorePlan (check = false) on device copies of the case, q and scores either
// LayoutRight or strided (transposed, padded, dim stride 2), the scores poisoned first.
template <class Cache = Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Mem>>
RunResult run_score(const ScoreCase& c, bool strided, uq::Backend backend, const Cache* cache_override = nullptr) {
  DeviceInputs in(c);
  uq::ScoreConfig cfg;
  cfg.backend = backend;
  cfg.query_len = c.query_len;
  cfg.init_blocks = c.init_blocks;
  cfg.local_blocks = c.local_blocks;
  cfg.check = false;
  uq::ScoreShape shape;
  shape.max_reqs = c.num_reqs + 2;  // a plan may be sized for more requests than a run has
  shape.query_len = c.query_len;
  shape.heads = c.heads;
  shape.max_blocks = c.max_blocks;
  uq::ScorePlan<Exec> plan(Exec(), shape, cfg);
  EXPECT_EQ(plan.path(), expected_path(backend, plan.device()));

  RunResult r;
  auto go = [&](const auto& q, const auto& scores) {
    fill_view(q, c.q);
    Kokkos::deep_copy(scores, poison_value());
    if (cache_override)
      plan.run(q, *cache_override, in.tables, in.seq_lens, scores);
    else
      plan.run(q, in.cache, in.tables, in.seq_lens, scores);
    r.scores = read_view(scores);
  };
  if (strided) {
    StridedArray<std::uint8_t> q("q", c.rows(), c.heads, kD);
    StridedArray<float> scores("scores", c.heads, c.rows(), c.S);
    go(q.view, scores.view);
  } else {
    Kokkos::View<std::uint8_t***, Kokkos::LayoutRight, Mem> q("q", c.rows(), c.heads, kD);
    Kokkos::View<float***, Kokkos::LayoutRight, Mem> scores("scores", c.heads, c.rows(), c.S);
    go(q, scores);
  }
  r.status = plan.status();
  return r;
}

}  // namespace index
}  // namespace uqtest
