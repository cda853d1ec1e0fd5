// Development harness of the sm90 NVFP4 index scorer, standalone CUDA (no
// Kokkos), built by build_score_harness.sh:
//
//   score_harness check     random cases (awkward lengths, causal multi-token queries, every
//                           QL x H tile count, init / local, out-of-contract scale bytes,
//                           NaN queries, bad ids and lengths, strided and unaligned
//                           buffers, forced spans) on today's kernel and the previous one,
//                           against the float64 reference (reference/): worst error /
//                           spec tolerance, and sentinels, -inf and untouched (poisoned)
//                           entries bit for bit. Exit status 1 on any failure.
//   score_harness bad       one bad-data case only (for compute-sanitizer).
//   score_harness perf      the served shapes (4 rows x 1 head, 8 x 4, batch 32, 128k) and
//                           batch 1 / 8 / 64: the speed-of-light read (score_sol.cuh), today's
//                           and the previous kernel, each one event-timed call (median of 9)
//                           and the mean of 20 back-to-back calls, over rotated input copies
//                           (4x the L2 in all); a 2 GiB device-to-device copy for % of copy.
#include "harness_problem.hpp"
#include "score_sol.cuh"

#include "sm90/score_launch_args.hpp"  // launch_score: checks + launch
#include "uqref.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kD = 128, kBlk = 128, kPage = 9216;
constexpr std::uint32_t kPoison = 0x7fc0dead;  // a NaN no kernel writes

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CUDA error %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}
#define CK(x) cuda_check((x), #x)

template <class T>
T* to_device(const std::vector<T>& v, std::size_t pad_bytes = 0) {
  void* p = nullptr;
  CK(cudaMalloc(&p, v.size() * sizeof(T) + pad_bytes + 16));
  CK(cudaMemcpy(static_cast<char*>(p) + pad_bytes, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return reinterpret_cast<T*>(static_cast<char*>(p) + pad_bytes);
}

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

int sm_count() {
  int dev = 0, n = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
  return n;
}

std::vector<std::uint8_t> format_table() {
  std::vector<std::uint8_t> t(2048);
  for (int s = 0; s < 256; ++s) {
    const std::uint64_t e = uqref::nv_lut_entry(static_cast<std::uint8_t>(s));
    for (int i = 0; i < 8; ++i) t[8 * s + i] = static_cast<std::uint8_t>(e >> (8 * i));
  }
  return t;
}

// ---------------------------------------------------------------- a host case
struct Case {
  std::string name;
  int num_reqs = 0, query_len = 1, heads = 1, max_blocks = 0, init_blocks = 0, local_blocks = 0;
  std::int64_t S = 0;  // score row length (>= max_blocks)
  std::int64_t num_blocks = 0;
  std::vector<std::uint8_t> cache, q;  // q dense [rows][H][128]
  std::vector<std::int32_t> tables, lens;
  int span = 0;               // forced span (0: the launcher's choice)
  std::size_t cache_misalign = 0;
  bool strided = false;       // q and scores with padded strides
  std::int64_t rows() const { return static_cast<std::int64_t>(num_reqs) * query_len; }
};

std::vector<std::uint8_t> random_cache(std::mt19937_64& rng, std::int64_t blocks, int max_scale, bool writer) {
  std::vector<std::uint8_t> c(static_cast<std::size_t>(blocks) * kPage, 0);
  if (writer) {  // realistic keys through the reference writer
    std::normal_distribution<double> n(0.0, 1.0);
    const std::int64_t T = blocks * kBlk;
    std::vector<float> keys(static_cast<std::size_t>(T) * kD);
    for (std::int64_t t = 0; t < T; ++t) {
      const double scale = std::exp(2.0 * n(rng));  // magnitudes spread over decades
      for (int d = 0; d < kD; ++d) keys[t * kD + d] = static_cast<float>(scale * n(rng));
    }
    std::vector<std::int64_t> slots(T);
    std::iota(slots.begin(), slots.end(), 0);
    uqref::nv_write_index_keys(keys.data(), slots.data(), T, c.data(), blocks);
    return c;
  }
  std::uniform_int_distribution<int> byte(0, 255), scale(0, max_scale);
  for (std::int64_t p = 0; p < blocks; ++p) {
    for (int i = 0; i < 8192; ++i) c[p * kPage + i] = static_cast<std::uint8_t>(byte(rng));
    for (int i = 8192; i < kPage; ++i) c[p * kPage + i] = static_cast<std::uint8_t>(scale(rng));
  }
  return c;
}

std::vector<std::uint8_t> random_q(std::mt19937_64& rng, std::int64_t n, double sigma) {
  std::normal_distribution<double> d(0.0, sigma);
  std::vector<std::uint8_t> q(static_cast<std::size_t>(n));
  for (auto& b : q) b = uqref::e4m3_round(d(rng));
  return q;
}

Case make_case(std::mt19937_64& rng, const std::string& name, std::vector<std::uint8_t> cache,
               std::vector<std::int32_t> lens, int QL, int H, int init, int local, double q_sigma = 2.0) {
  Case c;
  c.name = name;
  c.cache = std::move(cache);
  c.num_blocks = static_cast<std::int64_t>(c.cache.size() / kPage);
  c.lens = std::move(lens);
  c.num_reqs = static_cast<int>(c.lens.size());
  c.query_len = QL;
  c.heads = H;
  c.init_blocks = init;
  c.local_blocks = local;
  int mb = 1;
  for (auto l : c.lens) mb = std::max(mb, (std::max(l, 0) + kBlk - 1) / kBlk);
  c.max_blocks = mb;
  c.S = mb + 1;
  std::vector<std::int32_t> pages(static_cast<std::size_t>(c.num_blocks));
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  c.tables.resize(static_cast<std::size_t>(c.num_reqs) * mb);
  std::size_t next = 0;
  for (int i = 0; i < c.num_reqs; ++i) {
    const int nb = (std::max(c.lens[i], 0) + kBlk - 1) / kBlk;
    for (int b = 0; b < mb; ++b)
      c.tables[static_cast<std::size_t>(i) * mb + b] =
          b < nb ? pages[next++ % pages.size()] : ((b % 2) ? -7 : static_cast<std::int32_t>(c.num_blocks + 100));
  }
  c.q = random_q(rng, c.rows() * H * kD, q_sigma);
  return c;
}

// Per page and dim, max |k̂| over the page's tokens (the derived fp32 bound's ingredient).
std::vector<double> page_key_maxima(const Case& c) {
  std::vector<double> m(static_cast<std::size_t>(c.num_blocks) * kD, 0.0);
  for (std::int64_t p = 0; p < c.num_blocks; ++p)
    for (int t = 0; t < kBlk; ++t)
      for (int d = 0; d < kD; ++d) {
        const double v = std::fabs(uqref::nv_dequant(c.cache.data() + p * kPage, t, d));
        double& x = m[p * kD + d];
        x = std::isnan(v) ? x : std::max(x, v);
      }
  return m;
}

std::vector<float> reference(const Case& c) {
  std::vector<float> out(static_cast<std::size_t>(c.heads) * c.rows() * c.S);
  for (auto& v : out) std::memcpy(&v, &kPoison, 4);
  uqref::ScoreInputs in{c.q.data(), static_cast<std::int64_t>(c.heads) * kD, kD, c.cache.data(), c.num_blocks,
                        c.tables.data(), c.max_blocks, c.lens.data(), c.num_reqs, c.query_len, c.heads,
                        c.init_blocks, c.local_blocks};
  uqref::nv_score(in, out.data(), c.S);
  return out;
}

struct DeviceCase {
  harness::Problem p;
  float* scores_base = nullptr;
  std::size_t scores_elems = 0;
  std::int64_t h_stride = 0, r_stride = 0, b_stride = 1;
};

DeviceCase upload(const Case& c) {
  static std::uint8_t* table = to_device(format_table());
  DeviceCase d;
  harness::Problem& p = d.p;
  const int H = c.heads;
  // q: dense or [rows][H][128] with row stride H*128 + 64 and head stride 128 + 16.
  std::int64_t q_row = static_cast<std::int64_t>(H) * kD, q_head = kD;
  std::vector<std::uint8_t> q = c.q;
  if (c.strided) {
    q_head = kD + 16;
    q_row = H * q_head + 64;
    q.assign(static_cast<std::size_t>(c.rows()) * q_row, 0x7f);  // NaN in the gaps: never read
    for (std::int64_t r = 0; r < c.rows(); ++r)
      for (int h = 0; h < H; ++h)
        std::memcpy(&q[r * q_row + h * q_head], &c.q[(r * H + h) * kD], kD);
  }
  p.q = to_device(q);
  p.q_row = q_row;
  p.q_head = q_head;
  p.q_dim = 1;
  p.cache = to_device(c.cache, c.cache_misalign);
  p.num_blocks = c.num_blocks;
  p.table = table;
  p.block_tables = to_device(c.tables);
  p.t_req = c.max_blocks;
  p.t_block = 1;
  p.seq_lens = to_device(c.lens);
  p.num_reqs = c.num_reqs;
  p.query_len = c.query_len;
  p.heads = H;
  p.max_blocks = c.max_blocks;
  p.init_blocks = c.init_blocks;
  p.local_blocks = c.local_blocks;
  p.sm_count = sm_count();
  p.span = c.span;
  // scores: [H][rows][S] dense, or block stride 2 and padded rows when strided.
  d.b_stride = c.strided ? 2 : 1;
  d.r_stride = c.S * d.b_stride + (c.strided ? 3 : 0);
  d.h_stride = c.rows() * d.r_stride + (c.strided ? 5 : 0);
  d.scores_elems = static_cast<std::size_t>(H) * d.h_stride;
  CK(cudaMalloc(&d.scores_base, d.scores_elems * 4));
  p.scores = d.scores_base;
  p.s_head = d.h_stride;
  p.s_row = d.r_stride;
  p.s_block = d.b_stride;
  CK(cudaMalloc(&p.counters, 8 * sizeof(unsigned long long)));
  return d;
}

void new_score(const harness::Problem& p) {
  uq::sm90::ScoreLaunch l;
  l.stream = p.stream;
  l.scores = p.scores;
  l.scores_stride_head = p.s_head;
  l.scores_stride_row = p.s_row;
  l.scores_stride_block = p.s_block;
  l.counters = p.counters;
  l.q = p.q;
  l.q_stride_row = p.q_row;
  l.q_stride_head = p.q_head;
  l.q_stride_dim = p.q_dim;
  l.index_cache = p.cache;
  l.num_blocks = p.num_blocks;
  l.dequant_table = p.table;
  l.block_tables = p.block_tables;
  l.table_stride_req = p.t_req;
  l.table_stride_block = p.t_block;
  l.seq_lens = p.seq_lens;
  l.num_reqs = p.num_reqs;
  l.query_len = p.query_len;
  l.heads = p.heads;
  l.max_blocks = p.max_blocks;
  l.init_blocks = p.init_blocks;
  l.local_blocks = p.local_blocks;
  l.knobs = uq::sm90::choose_score_knobs(p.num_reqs, p.max_blocks, p.query_len, p.heads, p.sm_count);
  if (p.span > 0) l.knobs.span = p.span;
  uq::sm90::launch_score(l);
}

struct Outcome {
  std::vector<float> scores;  // [H][rows][S] gathered from the strided buffer
  unsigned long long counters[3];
};

Outcome run(const Case& c, const DeviceCase& d, bool old_kernel) {
  std::vector<std::uint32_t> poison(d.scores_elems, kPoison);
  CK(cudaMemcpy(d.scores_base, poison.data(), d.scores_elems * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(d.p.counters, 0, 8 * sizeof(unsigned long long)));
  if (old_kernel) harness::old_score(d.p);
  else new_score(d.p);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> raw(d.scores_elems);
  CK(cudaMemcpy(raw.data(), d.scores_base, d.scores_elems * 4, cudaMemcpyDeviceToHost));
  Outcome o;
  o.scores.resize(static_cast<std::size_t>(c.heads) * c.rows() * c.S);
  for (int h = 0; h < c.heads; ++h)
    for (std::int64_t r = 0; r < c.rows(); ++r)
      for (std::int64_t b = 0; b < c.S; ++b)
        o.scores[(h * c.rows() + r) * c.S + b] = raw[h * d.h_stride + r * d.r_stride + b * d.b_stride];
  // The gaps of a strided buffer stay poisoned.
  std::size_t touched_gaps = 0;
  if (c.strided) {
    std::vector<char> is_entry(d.scores_elems, 0);
    for (int h = 0; h < c.heads; ++h)
      for (std::int64_t r = 0; r < c.rows(); ++r)
        for (std::int64_t b = 0; b < c.S; ++b) is_entry[h * d.h_stride + r * d.r_stride + b * d.b_stride] = 1;
    for (std::size_t i = 0; i < d.scores_elems; ++i) touched_gaps += !is_entry[i] && bits(raw[i]) != kPoison;
  }
  if (touched_gaps) std::printf("  !! %zu entries outside the score tensor written\n", touched_gaps);
  unsigned long long cnt[8];
  CK(cudaMemcpy(cnt, d.p.counters, sizeof(cnt), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 3; ++i) o.counters[i] = cnt[i];
  if (touched_gaps) o.counters[0] += 1000000;  // forces a failure below
  return o;
}

// Expected counters: bad block ids among the needed blocks, negative and long lengths.
void expected_counters(const Case& c, unsigned long long (&e)[3]) {
  e[0] = e[1] = e[2] = 0;
  for (int i = 0; i < c.num_reqs; ++i) {
    long long L = c.lens[i];
    if (L < 0) ++e[1], L = 0;
    if (L > static_cast<long long>(c.max_blocks) * kBlk) ++e[2], L = static_cast<long long>(c.max_blocks) * kBlk;
    const long long nb = (L + kBlk - 1) / kBlk;
    for (long long b = c.init_blocks; b < nb - c.local_blocks; ++b) {
      const std::int32_t id = c.tables[static_cast<std::size_t>(i) * c.max_blocks + b];
      e[0] += id < 0 || id >= c.num_blocks;
    }
  }
}

bool compare(const Case& c, const std::vector<float>& ref, const Outcome& got, const std::vector<double>& key_max,
             const char* who) {
  const double gamma = 128.0 * std::ldexp(1.0, -24) / (1.0 - 128.0 * std::ldexp(1.0, -24));
  long long exact = 0, close = 0, poison = 0, bad = 0, bound_used = 0;
  double worst = 0.0;
  for (int h = 0; h < c.heads; ++h)
    for (std::int64_t row = 0; row < c.rows(); ++row)
      for (std::int64_t b = 0; b < c.S; ++b) {
        const std::size_t i = static_cast<std::size_t>((h * c.rows() + row) * c.S + b);
        const float rv = ref[i], gv = got.scores[i];
        bool ok;
        if (bits(rv) == kPoison) {
          ok = bits(gv) == kPoison;
          ++poison;
        } else if (!std::isfinite(rv) || rv == 1e30f || rv == 1e29f) {
          ok = bits(gv) == bits(rv);
          ++exact;
        } else {
          const std::int64_t req = row / c.query_len;
          const std::int32_t page = c.tables[req * c.max_blocks + b];
          double A = 0.0;
          const std::uint8_t* q = c.q.data() + (row * c.heads + h) * kD;
          for (int d = 0; d < kD; ++d) A += std::fabs(uqref::e4m3_value(q[d])) * key_max[page * kD + d];
          const double spec = 1e-4 + 1e-4 * std::fabs(rv);
          const double derived = gamma * A + std::ldexp(1.0, -23) * std::fabs(rv);
          bound_used += derived > spec;
          worst = std::max(worst, std::fabs(static_cast<double>(gv) - rv) / spec);
          ok = std::isfinite(gv) && std::fabs(static_cast<double>(gv) - rv) <= std::max(spec, derived);
          ++close;
        }
        if (!ok && ++bad <= 5)
          std::printf("  %s MISMATCH h=%d row=%lld b=%lld: got %.9g (0x%08x) ref %.9g (0x%08x)\n", who, h,
                      static_cast<long long>(row), static_cast<long long>(b), gv, bits(gv), rv, bits(rv));
      }
  unsigned long long e[3];
  expected_counters(c, e);
  const bool counters_ok = got.counters[0] == e[0] && got.counters[1] == e[1] && got.counters[2] == e[2];
  std::printf("  %-4s %s: %lld exact, %lld close (worst err / spec tol %.3g, derived bound used %lld), %lld "
              "untouched, counters %llu/%llu/%llu (expected %llu/%llu/%llu)%s\n",
              who, bad ? "FAIL" : "ok", exact, close, worst, bound_used, poison, got.counters[0], got.counters[1],
              got.counters[2], e[0], e[1], e[2], counters_ok ? "" : " COUNTERS WRONG");
  return bad == 0 && counters_ok;
}

std::vector<Case> cases(bool bad_only) {
  std::vector<Case> v;
  std::mt19937_64 rng(2026);
  auto add = [&](Case c) { v.push_back(std::move(c)); };
  if (!bad_only) {
    // Every column-tile count, causal rows, awkward lengths, init / local, writer-made keys.
    const std::vector<std::int32_t> lens = {3000, 1, 129, 0, 2047, 640, 128, 5 * 128 + 77};
    auto cache = random_cache(rng, 140, 0x58, true);
    for (auto [QL, H] : std::vector<std::pair<int, int>>{{1, 1}, {4, 1}, {8, 4}, {3, 2}, {32, 1}, {2, 4}, {5, 4},
                                                         {6, 2}, {16, 2}, {7, 1}})
      add(make_case(rng, "writer keys QL " + std::to_string(QL) + " H " + std::to_string(H), cache, lens, QL, H, 1,
                    2));
    // Random code bytes, scales up to 0x7e (saturation), no sentinels.
    auto rcache = random_cache(rng, 60, 0x7e, false);
    add(make_case(rng, "random codes, scales <= 0x7e, QL 8 H 4", rcache, {60 * 128}, 8, 4, 0, 0));
    add(make_case(rng, "random codes, QL 4 H 1, one request", rcache, {57 * 128 + 5}, 4, 1, 0, 0));
    // Tiny scales (E4M3 subnormal keys) and q with wide range.
    auto tiny = random_cache(rng, 20, 0x0c, false);
    add(make_case(rng, "tiny scales, wide q", tiny, {20 * 128 - 3, 700}, 2, 2, 0, 1, 60.0));
    // Out-of-contract scale bytes: NaN (0x7f, 0xff), negative.
    {
      auto oc = random_cache(rng, 12, 0x50, false);
      for (int t = 0; t < kBlk; t += 3) oc[0 * kPage + 8192 + t * 8 + (t % 8)] = 0x7f;
      for (int t = 0; t < kBlk; ++t) oc[1 * kPage + 8192 + t * 8 + 2] = 0xff;
      for (int t = 0; t < kBlk; t += 2) oc[2 * kPage + 8192 + t * 8 + (t % 8)] |= 0x80;  // negative scales
      for (int p = 3; p < 12; ++p)
        for (int t = 0; t < kBlk; t += 5) oc[p * kPage + 8192 + t * 8 + (t + p) % 8] ^= 0x80;
      Case c = make_case(rng, "NaN and negative scale bytes", oc, {12 * 128}, 4, 2, 0, 0);
      std::vector<std::int32_t> id(12);
      std::iota(id.begin(), id.end(), 0);
      std::copy(id.begin(), id.end(), c.tables.begin());
      add(c);
    }
    // NaN query bytes in some rows, q = 0 elsewhere.
    {
      Case c = make_case(rng, "NaN and zero queries", rcache, {30 * 128, 2000}, 4, 2, 1, 1);
      for (int d = 0; d < kD; d += 7) c.q[(1 * 2 + 0) * kD + d] = 0x7f;     // row 1 head 0: some NaN
      for (int d = 0; d < kD; ++d) c.q[(2 * 2 + 1) * kD + d] = 0x00;        // row 2 head 1: zero
      for (int d = 0; d < kD; ++d) c.q[(5 * 2 + 1) * kD + d] = d ? 0 : 0xff;  // NaN in one dim only
      add(c);
    }
    // Strided q and scores, unaligned cache (byte copies), forced spans.
    {
      Case c = make_case(rng, "strided q + scores, unaligned cache", rcache, {3000, 1, 129, 2047}, 3, 2, 1, 1);
      c.strided = true;
      c.cache_misalign = 4;
      add(c);
      Case s1 = make_case(rng, "span 1", rcache, {3000, 1, 129, 2047, 7000}, 8, 4, 2, 1);
      s1.span = 1;
      add(s1);
      Case s3 = make_case(rng, "span 3, strided", rcache, {3000, 1, 129, 2047, 7000}, 4, 1, 0, 0);
      s3.span = 3;
      s3.strided = true;
      add(s3);
    }
    // Many requests, ragged with zeros.
    {
      std::vector<std::int32_t> lens(300);
      std::uniform_int_distribution<int> len(0, 2100);
      for (auto& l : lens) l = len(rng) % 7 == 0 ? 0 : len(rng);
      add(make_case(rng, "300 requests", random_cache(rng, 40, 0x50, false), lens, 2, 2, 1, 1));
    }
  }
  // Bad data: bad block ids, negative and too long lengths, NaN scales, an unaligned cache too.
  for (int misalign : {0, 8}) {
    auto bc = random_cache(rng, 30, 0x50, false);
    for (int t = 0; t < kBlk; t += 11) bc[4 * kPage + 8192 + t * 8 + 1] = 0xff;
    Case c = make_case(rng, std::string("bad ids and lengths") + (misalign ? ", unaligned" : ""), bc,
                       {2000, -5, 1500, 900, 3000}, 4, 2, 1, 1);
    c.lens[3] = c.max_blocks * kBlk + 999;  // too long
    for (std::size_t i = 0; i < c.tables.size(); i += 3) c.tables[i] = (i % 2) ? -1 : static_cast<std::int32_t>(c.num_blocks + i);
    c.cache_misalign = misalign;
    c.span = 2;
    add(c);
  }
  return v;
}

int check(bool bad_only, bool with_old) {
  bool all_ok = true;
  for (const Case& c : cases(bad_only)) {
    std::printf("[%s] reqs %d, QL %d, H %d, max_blocks %d, init %d, local %d%s\n", c.name.c_str(), c.num_reqs,
                c.query_len, c.heads, c.max_blocks, c.init_blocks, c.local_blocks, c.span ? ", forced span" : "");
    const std::vector<float> ref = reference(c);
    const std::vector<double> km = page_key_maxima(c);
    const DeviceCase d = upload(c);
    all_ok &= compare(c, ref, run(c, d, false), km, "new");
    if (with_old) compare(c, ref, run(c, d, true), km, "old");  // informational
    // Same bits on a second run (no races).
    const Outcome a = run(c, d, false), b = run(c, d, false);
    if (std::memcmp(a.scores.data(), b.scores.data(), a.scores.size() * 4) != 0) {
      std::printf("  !! new kernel: two runs differ\n");
      all_ok = false;
    }
  }
  std::printf("check: %s\n", all_ok ? "ALL OK" : "FAILURES");
  return all_ok ? 0 : 1;
}

// ---------------------------------------------------------------- performance
__global__ void fill_cache(std::uint8_t* c, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) {
    unsigned long long x = static_cast<unsigned long long>(i) + seed;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    const unsigned h = static_cast<unsigned>(x);
    c[i] = static_cast<std::uint8_t>(i % kPage >= 8192 ? 0x28 + h % 40 : h);  // as perf/bench_score.cpp
  }
}

double copy_bandwidth() {
  const std::size_t bytes = std::size_t(2) << 30;
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int i = 0; i < 7; ++i) {
    cudaEventRecord(e0);
    CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float m;
    cudaEventElapsedTime(&m, e0, e1);
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

template <class F>
void time_it(F f, int copies, double& single_us, double& b2b_us) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int i = 0; i < std::min(copies, 3); ++i) f(i);  // warm-up
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < 9; ++i) {
    cudaEventRecord(e0);
    f(i % copies);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float m;
    cudaEventElapsedTime(&m, e0, e1);
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  single_us = ms[4] * 1e3;
  const int n = 20;
  cudaEventRecord(e0);
  for (int i = 0; i < n; ++i) f(i % copies);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float m;
  cudaEventElapsedTime(&m, e0, e1);
  b2b_us = m * 1e3 / n;
  CK(cudaGetLastError());
}

int perf(bool with_old, const char* only) {
  const double copy = copy_bandwidth();
  std::printf("copy bandwidth (2 GiB device-to-device, median of 7): %.1f GB/s\n", copy);
  int l2 = 0, dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
  struct Shape {
    int batch, ctx, QL, H;
  };
  const std::vector<Shape> shapes = {{32, 131072, 4, 1}, {32, 131072, 8, 4}, {1, 131072, 1, 1},
                                     {8, 131072, 1, 1},  {64, 131072, 1, 1}, {1, 131072, 4, 1},
                                     {1, 131072, 8, 4}};
  std::printf("%-22s %9s | %8s %8s | %8s %8s %6s %6s | %8s %8s %6s\n", "shape", "MB", "sol 1x", "sol b2b", "new 1x",
              "new b2b", "%sol", "%copy", "old 1x", "old b2b", "%sol");
  for (const Shape& s : shapes) {
    char name[64];
    std::snprintf(name, sizeof(name), "B%d ctx%d QL%d H%d", s.batch, s.ctx, s.QL, s.H);
    if (only && !std::strstr(name, only)) continue;
    const int nb = s.ctx / kBlk, cols = s.QL * s.H;
    const long long pages = static_cast<long long>(s.batch) * nb;
    const int init = 0, local = 1;  // as perf/bench_score.cpp
    std::vector<std::int32_t> lens(s.batch, s.ctx);
    const uqsol::SolPlan plan = uqsol::make_sol_plan(lens, nb, init, local);
    const double bytes = plan.total * 9216.0 + 4.0 * plan.total + static_cast<double>(s.batch) * cols * 128.0 +
                         4.0 * s.batch * cols * nb;
    const int copies = static_cast<int>(std::min<long long>(64, std::max<long long>(1, (4ll * l2 + static_cast<long long>(bytes) - 1) / static_cast<long long>(bytes))));
    std::vector<harness::Problem> probs(copies);
    std::vector<uqsol::SolArgs> sols(copies);
    std::mt19937_64 rng(7);
    std::uint8_t* table = to_device(format_table());
    std::int64_t* first = to_device(plan.first);
    std::int32_t* lo = to_device(plan.lo);
    std::int32_t* dlens = to_device(lens);
    unsigned* sink;
    CK(cudaMalloc(&sink, 4));
    float* sol_out;
    CK(cudaMalloc(&sol_out, plan.total * cols * 4 + 16));
    for (int k = 0; k < copies; ++k) {
      std::uint8_t* cache;
      CK(cudaMalloc(&cache, pages * kPage));
      fill_cache<<<2048, 256>>>(cache, pages * kPage, 99 + k);
      std::vector<std::int32_t> perm(pages);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      const std::vector<std::uint8_t> q = random_q(rng, static_cast<std::int64_t>(s.batch) * cols * kD, 2.0);
      harness::Problem& p = probs[k];
      p.cache = cache;
      p.num_blocks = pages;
      p.block_tables = to_device(perm);
      p.t_req = nb;
      p.t_block = 1;
      p.seq_lens = dlens;
      p.q = to_device(q);
      p.q_row = static_cast<std::int64_t>(s.H) * kD;
      p.q_head = kD;
      p.q_dim = 1;
      p.table = table;
      p.num_reqs = s.batch;
      p.query_len = s.QL;
      p.heads = s.H;
      p.max_blocks = nb;
      p.init_blocks = init;
      p.local_blocks = local;
      p.sm_count = sm_count();
      CK(cudaMalloc(&p.scores, static_cast<std::size_t>(s.H) * s.batch * s.QL * nb * 4));
      p.s_head = static_cast<std::int64_t>(s.batch) * s.QL * nb;
      p.s_row = nb;
      p.s_block = 1;
      CK(cudaMalloc(&p.counters, 64));
      CK(cudaMemset(p.counters, 0, 64));
      uqsol::SolArgs& a = sols[k];
      a.cache = cache;
      a.block_tables = p.block_tables;
      a.t_req = nb;
      a.t_block = 1;
      a.first = first;
      a.lo = lo;
      a.num_reqs = s.batch;
      a.total = plan.total;
      a.q = p.q;
      a.q_bytes = static_cast<std::int64_t>(cols) * kD;
      a.out = sol_out;
      a.cols = cols;
      a.sink = sink;
    }
    CK(cudaDeviceSynchronize());
    double sol1, solb, new1, newb, old1 = 0, oldb = 0;
    time_it([&](int k) { uqsol::launch_sol(sols[k], nullptr); }, copies, sol1, solb);
    time_it([&](int k) { new_score(probs[k]); }, copies, new1, newb);
    // HARNESS_SPANS="s1,s2,...": today's kernel again with forced spans (knob exploration).
    if (const char* spans = std::getenv("HARNESS_SPANS")) {
      for (const char* p = spans; *p;) {
        const int span = std::atoi(p);
        double a1, ab;
        for (auto& pr : probs) pr.span = span;
        time_it([&](int k) { new_score(probs[k]); }, copies, a1, ab);
        for (auto& pr : probs) pr.span = 0;
        std::printf("%-22s   span %4d: new 1x %.1f us, b2b %.1f us (%.1f%% sol)\n", name, span, a1, ab, 100.0 * solb / ab);
        while (*p && *p != ',') ++p;
        if (*p) ++p;
      }
    }
    if (with_old) time_it([&](int k) { harness::old_score(probs[k]); }, copies, old1, oldb);
    unsigned long long cnt[3];
    CK(cudaMemcpy(cnt, probs[0].counters, sizeof(cnt), cudaMemcpyDeviceToHost));
    std::printf("%-22s %9.1f | %8.1f %8.1f | %8.1f %8.1f %5.1f%% %5.1f%% | %8.1f %8.1f %5.1f%%%s\n", name,
                bytes / 1e6, sol1, solb, new1, newb, 100.0 * solb / newb, 100.0 * bytes / (newb * 1e-6) / 1e9 / copy,
                old1, oldb, oldb > 0 ? 100.0 * solb / oldb : 0.0,
                cnt[0] || cnt[1] || cnt[2] ? "  (COUNTERS NON-ZERO)" : "");
    std::printf("%-22s            sol %.1f%% of copy (b2b); single-call %%sol: new %.1f%%, old %.1f%%; copies %d\n",
                "", 100.0 * bytes / (solb * 1e-6) / 1e9 / copy, 100.0 * sol1 / new1, old1 > 0 ? 100.0 * sol1 / old1 : 0.0,
                copies);
    for (auto& p : probs) {
      cudaFree(const_cast<std::uint8_t*>(p.cache));
      cudaFree(p.scores);
    }
    CK(cudaDeviceSynchronize());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  const bool with_old = !(argc > 2 && std::string(argv[2]) == "--no-old");
  const char* only = argc > 3 ? argv[3] : nullptr;
  if (mode == "check") return check(false, with_old);
  if (mode == "bad") return check(true, false);
  if (mode == "perf") return perf(with_old, only);
  std::fprintf(stderr, "usage: score_harness check|bad|perf [--no-old|--old [shape filter]]\n");
  return 2;
}
