// Development harness of the sm90 decode (issue 15), without Kokkos: the new kernels
// (arch/sm90: launch_decode_partitions / launch_decode_reduce), the previous ones (the mma.sync
// kernels of commit 023c211, built from git under the namespace uqold, see build_harness.sh),
// the speed-of-light kernel (arch/sm90/sol.cu) and a 2 GiB device-to-device copy, side by side
// in one process.
//
//   decode_harness check        correctness matrix against the float64 reference (reference/)
//   decode_harness small        one small case of each kind (for compute-sanitizer)
//   decode_harness bench [N [I,J,..]]  the timing table (N: back-to-back calls per measurement,
//                               default 20; I, J: indices of the shapes to run, default all)
//   decode_harness rprobe [N [I,J,..]] where the reducer's time goes (reduce_probe below)
//
// Times: "single" = one call between two events (median of 9, cold inputs); "b2b" = mean of N
// calls back to back on rotating input copies; "graph" = the same N calls captured in one CUDA
// graph, per call. % of SOL = SOL b2b / decode b2b; % of copy = floor bytes / time / copy rate.
#include "sm90/decode_args.hpp"
#include "sm90/decode_launch_args.hpp"  // launch_decode_partitions / _reduce: checks + launch
#include "sm90/launch_sol.hpp"
#include "uq/partitions.hpp"
#include "uqref_ultraquant.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern "C" void uqold_launch_partitions(const void* launch);  // old_adapter.cu
extern "C" void uqold_launch_reduce(const void* launch);

namespace {

cudaStream_t g_stream = nullptr;  // the stream the timed launches use (a capture stream for graphs)

using uq::impl::DecodePartitionsLaunch;
using uq::impl::DecodeReduceLaunch;

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, \
                   cudaGetErrorString(e_));                                                     \
      std::exit(2);                                                                             \
    }                                                                                           \
  } while (0)

float bf16f(std::uint16_t b) {
  std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint16_t f2bf(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

// ------------------------------------------------------------------ a decode case
struct Case {
  std::string name;
  int B = 2, Hk = 1, qg = 6, bs = 64;
  std::vector<int> lens;       // per sequence (raw seq_lens values, may be bad)
  int max_blocks = 0;          // table width (0: enough for the largest valid length)
  int slot_bytes = 272;
  int cache_offset = 0;        // bytes past a 256-byte aligned allocation
  bool q_rotated = false;
  int q_head_pad = 0;          // extra elements between query heads (strided q)
  int out_head_pad = 0;        // extra elements between output heads
  int P = 0;                   // 0: the default choice
  bool lse = true;
  std::vector<std::pair<int, int>> bad_blocks;  // (seq, logical block) -> id -7 or num_blocks + 3
  std::vector<std::pair<int, int>> nan_q;       // (seq, q head) with a NaN in q
  float q_sigma = 1.0f;
  float scale = 1.0f / 16.0f;
  int sc_lo = 118, sc_hi = 130;  // scale bytes uniform in [lo, hi); 1/16 of groups zero
  std::uint64_t seed = 1;
};

struct HostData {
  int nb = 0, hq = 0, max_blocks = 0;
  std::int64_t num_blocks = 0;
  std::vector<std::uint8_t> cache;  // dense [num_blocks][bs][Hk][slot]
  std::vector<std::int32_t> tables, lens;
  std::vector<std::uint16_t> q;  // [B][hq][256 + pad]
  std::int64_t q_stride_head = 0, q_stride_seq = 0;
};

HostData make_host(const Case& c) {
  HostData d;
  std::mt19937_64 rng(c.seed);
  int maxlen = 0;
  for (int L : c.lens) maxlen = std::max(maxlen, L);
  d.max_blocks = c.max_blocks > 0 ? c.max_blocks : std::max(1, (maxlen + c.bs - 1) / c.bs);
  d.hq = c.Hk * c.qg;
  d.num_blocks = static_cast<std::int64_t>(c.B) * d.max_blocks + 2;
  d.cache.resize(static_cast<std::size_t>(d.num_blocks) * c.bs * c.Hk * c.slot_bytes);
  for (std::size_t i = 0; i < d.cache.size(); ++i) {
    const int o = static_cast<int>(i % c.slot_bytes);
    const std::uint64_t r = rng();
    const bool scale = (o >= 128 && o < 136) || (o >= 264 && o < 272);
    if (scale) d.cache[i] = (r & 15) == 0 ? 0 : static_cast<std::uint8_t>(c.sc_lo + (r >> 8) % (c.sc_hi - c.sc_lo));
    else d.cache[i] = static_cast<std::uint8_t>(r >> 16);
  }
  std::vector<std::int32_t> perm(static_cast<std::size_t>(d.num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  d.tables.resize(static_cast<std::size_t>(c.B) * d.max_blocks);
  for (std::size_t i = 0; i < d.tables.size(); ++i) d.tables[i] = perm[i];
  for (auto [s, j] : c.bad_blocks) d.tables[static_cast<std::size_t>(s) * d.max_blocks + j] = (j & 1) ? -7 : static_cast<int>(d.num_blocks) + 3;
  d.lens = c.lens;
  d.q_stride_head = 256 + c.q_head_pad;
  d.q_stride_seq = d.q_stride_head * d.hq;
  d.q.assign(static_cast<std::size_t>(c.B) * d.q_stride_seq, 0x7fc1);  // padding: NaN (never read)
  std::normal_distribution<float> nd(0.0f, c.q_sigma);
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < d.hq; ++h)
      for (int e = 0; e < 256; ++e) d.q[b * d.q_stride_seq + h * d.q_stride_head + e] = f2bf(nd(rng));
  for (auto [s, h] : c.nan_q) d.q[s * d.q_stride_seq + h * d.q_stride_head + 77] = 0x7fc0;
  return d;
}

// Tolerance of the new kernel against the float64 reference, per element (u = 2^-8, the bf16
// unit roundoff; u32 = 2^-24):
//  * bf16 P for P.V, the bf16 partial row, the final bf16 rounding: u (2 + 3u) vmax + u |ref|
//    (as for every path, tests/support/decode_case.hpp);
//  * scores: the FP8 wgmma sums a group's 32 exact products after aligning them to the largest
//    one's exponent and truncating each to 13 fractional bits (and truncates the sum to 14
//    significant bits), so a group's partial is off by < 32 x 2^-13 x 2 max|product| (the 2: a
//    subnormal E4M3 operand may set the alignment one binade above its value) + 2^-13 |partial|
//    <= 2^-7 max_g + 2^-13 sum_g; over the 8 groups |delta s| <= (2^-7 + 2^-13 + 64 u32) score_abs
//    (score_abs = |scale| sum_d |q8 k|; the fp32 promotions and scale as before);
//  * softmax weights then move by at most a factor e^(2 delta): (e^(2 delta) - 1) vmax;
//  * fp32 accumulation of acc, l over n tokens and exp2: (n + 16) u32 4 vmax.
double tol_new(double ref, double vmax, double score_abs, std::int64_t n) {
  const double u = std::ldexp(1.0, -8), u32 = std::ldexp(1.0, -24);
  const double delta = (std::ldexp(1.0, -7) + std::ldexp(1.0, -13) + 64.0 * u32) * score_abs;
  return u * (2.0 + 3.0 * u) * vmax + u * std::fabs(ref) + std::expm1(2.0 * delta) * vmax +
         4.0 * static_cast<double>(n + 16) * u32 * vmax + 1e-30;
}
// The previous kernel's (and the generic path's) tolerance: exact fp16 products, fp32 sums.
double tol_fp32(double ref, double vmax, double score_abs, std::int64_t n) {
  const double u = std::ldexp(1.0, -8), u32 = std::ldexp(1.0, -24);
  const double delta = 64.0 * u32 * score_abs;
  return u * (2.0 + 3.0 * u) * vmax + u * std::fabs(ref) + 2.01 * delta * vmax +
         4.0 * static_cast<double>(n + 16) * u32 * vmax + 1e-30;
}

struct DeviceCase {
  std::uint8_t* cache_alloc = nullptr;
  std::uint8_t* cache = nullptr;
  std::int32_t *tables = nullptr, *lens = nullptr;
  std::uint16_t* q = nullptr;
  std::uint16_t *out = nullptr, *partial = nullptr;
  float *pl = nullptr, *pm = nullptr, *lse = nullptr;
  unsigned long long* counters = nullptr;
  std::int64_t out_stride_head = 0, out_stride_seq = 0, rows = 0;
  int P = 0, tgpp = 0;
};

DeviceCase upload(const Case& c, const HostData& d) {
  DeviceCase g;
  CK(cudaMalloc(&g.cache_alloc, d.cache.size() + 512));
  g.cache = g.cache_alloc + 256 + c.cache_offset;
  CK(cudaMemcpy(g.cache, d.cache.data(), d.cache.size(), cudaMemcpyHostToDevice));
  CK(cudaMalloc(&g.tables, d.tables.size() * 4));
  CK(cudaMemcpy(g.tables, d.tables.data(), d.tables.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&g.lens, d.lens.size() * 4));
  CK(cudaMemcpy(g.lens, d.lens.data(), d.lens.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&g.q, d.q.size() * 2));
  CK(cudaMemcpy(g.q, d.q.data(), d.q.size() * 2, cudaMemcpyHostToDevice));
  const uq::PartitionChoice pc = uq::choose_partitions(c.B, d.max_blocks, c.bs, c.P);
  g.P = pc.partitions;
  g.tgpp = pc.tile_groups_per_part;
  g.out_stride_head = 256 + c.out_head_pad;
  g.out_stride_seq = g.out_stride_head * d.hq;
  CK(cudaMalloc(&g.out, static_cast<std::size_t>(c.B) * g.out_stride_seq * 2));
  g.rows = static_cast<std::int64_t>(c.B) * c.Hk * g.P * c.qg;
  CK(cudaMalloc(&g.partial, static_cast<std::size_t>(g.rows) * 512));
  CK(cudaMalloc(&g.pl, static_cast<std::size_t>(g.rows) * 4));
  CK(cudaMalloc(&g.pm, static_cast<std::size_t>(g.rows) * 4));
  CK(cudaMalloc(&g.lse, static_cast<std::size_t>(c.B) * d.hq * 4));
  CK(cudaMalloc(&g.counters, 8 * 8));
  return g;
}

void release(DeviceCase& g) {
  cudaFree(g.cache_alloc);
  cudaFree(g.tables);
  cudaFree(g.lens);
  cudaFree(g.q);
  cudaFree(g.out);
  cudaFree(g.partial);
  cudaFree(g.pl);
  cudaFree(g.pm);
  cudaFree(g.lse);
  cudaFree(g.counters);
}

DecodePartitionsLaunch part_launch(const Case& c, const HostData& d, const DeviceCase& g, bool with_out) {
  DecodePartitionsLaunch l;
  l.partial_out = g.partial;
  l.partial_l = g.pl;
  l.partial_m = g.pm;
  l.counters = g.counters;
  l.q = g.q;
  l.q_stride_seq = d.q_stride_seq;
  l.q_stride_head = d.q_stride_head;
  l.q_stride_dim = 1;
  l.q_rotated = c.q_rotated;
  l.cache = g.cache;
  l.num_blocks = d.num_blocks;
  l.block_stride = static_cast<std::int64_t>(c.bs) * c.Hk * c.slot_bytes;
  l.block_size = c.bs;
  l.num_kv_heads = c.Hk;
  l.slot_bytes = c.slot_bytes;
  l.block_tables = g.tables;
  l.table_stride_seq = d.max_blocks;
  l.table_stride_block = 1;
  l.max_blocks_per_seq = d.max_blocks;
  l.seq_lens = g.lens;
  l.seq_lens_stride = 1;
  l.num_seqs = c.B;
  l.qg = c.qg;
  l.partitions = g.P;
  l.tgpp = g.tgpp;
  l.scale = c.scale;
  if (with_out && g.P == 1) {  // revision 2: out only when no reducer runs (decode_launch.hpp)
    l.out = g.out;
    l.out_stride_seq = g.out_stride_seq;
    l.out_stride_head = g.out_stride_head;
    l.out_stride_dim = 1;
    l.lse = c.lse ? g.lse : nullptr;
    l.lse_stride_seq = d.hq;
    l.lse_stride_head = 1;
  }
  return l;
}

DecodeReduceLaunch red_launch(const Case& c, const HostData& d, const DeviceCase& g) {
  DecodeReduceLaunch r;
  r.partial_out = g.partial;
  r.partial_l = g.pl;
  r.partial_m = g.pm;
  r.out = g.out;
  r.out_stride_seq = g.out_stride_seq;
  r.out_stride_head = g.out_stride_head;
  r.out_stride_dim = 1;
  r.num_seqs = c.B;
  r.num_kv_heads = c.Hk;
  r.qg = c.qg;
  r.partitions = g.P;
  r.lse = c.lse ? g.lse : nullptr;
  r.lse_stride_seq = d.hq;
  r.lse_stride_head = 1;
  return r;
}

// One decode call of the new path: one launch when P = 1, else partitions + reducer.
void run_new(const DecodePartitionsLaunch& pl, const DecodeReduceLaunch& rl) {
  uq::sm90::launch_decode_partitions(pl);
  if (pl.partitions > 1 || pl.out == nullptr) uq::sm90::launch_decode_reduce(rl);
}
void run_old(const DecodePartitionsLaunch& pl, const DecodeReduceLaunch& rl) {
  DecodePartitionsLaunch p = pl;
  p.out = nullptr;
  p.lse = nullptr;
  DecodeReduceLaunch r = rl;
  r.lse = nullptr;
  uqold_launch_partitions(&p);
  uqold_launch_reduce(&r);
}

// lse of (b, hq) in double (spec §5): log sum_t exp(s_t) over the attended tokens.
double ref_lse(const Case& c, const HostData& d, int b, int hq) {
  double q8[256], k[256];
  uqref::uq_query_q8(&d.q[b * d.q_stride_seq + hq * d.q_stride_head], c.q_rotated, q8);
  const int h = hq / c.qg;
  const std::int64_t cap = static_cast<std::int64_t>(d.max_blocks) * c.bs;
  const std::int64_t L = std::min<std::int64_t>(std::max(d.lens[b], 0), cap);
  std::vector<double> s;
  for (std::int64_t t = 0; t < L; ++t) {
    const std::int32_t id = d.tables[static_cast<std::size_t>(b) * d.max_blocks + t / c.bs];
    if (id < 0 || id >= d.num_blocks) continue;
    const std::uint8_t* slot = &d.cache[((static_cast<std::size_t>(id) * c.bs + t % c.bs) * c.Hk + h) * c.slot_bytes];
    uqref::uq_dequant_k(slot, k);
    double dot = 0.0;
    for (int e = 0; e < 256; ++e) dot += q8[e] * k[e];
    s.push_back(c.scale * dot);
  }
  if (s.empty()) return -INFINITY;
  const double mx = *std::max_element(s.begin(), s.end());
  double sum = 0.0;
  for (double x : s) sum += std::exp(x - mx);
  return mx + std::log(sum);
}

struct Expect {
  unsigned long long bad_blocks = 0, neg = 0, lng = 0, nonfinite = 0;
};
Expect expected_counters(const Case& c, const HostData& d) {
  Expect e;
  const std::int64_t cap = static_cast<std::int64_t>(d.max_blocks) * c.bs;
  for (int b = 0; b < c.B; ++b) {
    std::int64_t L = d.lens[b];
    if (L < 0) ++e.neg, L = 0;
    else if (L > cap) ++e.lng, L = cap;
    for (std::int64_t j = 0; j * c.bs < L; ++j) {
      const std::int32_t id = d.tables[static_cast<std::size_t>(b) * d.max_blocks + j];
      if (id < 0 || id >= d.num_blocks) ++e.bad_blocks;
    }
  }
  e.nonfinite = c.nan_q.size();
  return e;
}

bool is_nan_bf16(std::uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

int g_failures = 0;

// Runs the case on the new kernels (and the old ones when `old`), checks against the
// reference; prints one line. Returns false on failure.
bool check_case(const Case& c, bool old = true) {
  const HostData d = make_host(c);
  DeviceCase g = upload(c, d);
  uqref::DecodeInputs in{};
  in.q = d.q.data();
  in.q_stride_seq = d.q_stride_seq;
  in.q_stride_head = d.q_stride_head;
  in.cache = d.cache.data();
  in.num_blocks = d.num_blocks;
  in.block_size = c.bs;
  in.num_kv_heads = c.Hk;
  in.slot_bytes = c.slot_bytes;
  in.block_tables = d.tables.data();
  in.max_blocks_per_seq = d.max_blocks;
  in.seq_lens = d.lens.data();
  in.num_seqs = c.B;
  in.qg = c.qg;
  in.scale = c.scale;
  in.q_rotated = c.q_rotated;
  const uqref::DecodeResult ref = uqref::uq_decode(in);

  const std::size_t out_elems = static_cast<std::size_t>(c.B) * g.out_stride_seq;
  auto run_and_fetch = [&](bool use_old, bool p1_via_reducer, std::vector<std::uint16_t>& out, std::vector<float>& lse,
                           std::vector<unsigned long long>& cnt, std::vector<std::uint16_t>* partial,
                           std::vector<float>* pl) {
    CK(cudaMemset(g.out, 0xEE, out_elems * 2));  // poison: bf16 0xEEEE (a finite value)
    CK(cudaMemset(g.lse, 0xEE, static_cast<std::size_t>(c.B) * d.hq * 4));
    CK(cudaMemset(g.partial, 0xEE, static_cast<std::size_t>(g.rows) * 512));
    CK(cudaMemset(g.pl, 0xEE, static_cast<std::size_t>(g.rows) * 4));
    CK(cudaMemset(g.pm, 0xEE, static_cast<std::size_t>(g.rows) * 4));
    CK(cudaMemset(g.counters, 0, 64));
    const DecodePartitionsLaunch pl_ = part_launch(c, d, g, !p1_via_reducer);
    const DecodeReduceLaunch rl = red_launch(c, d, g);
    if (use_old) run_old(pl_, rl);
    else run_new(pl_, rl);
    CK(cudaDeviceSynchronize());
    out.resize(out_elems);
    CK(cudaMemcpy(out.data(), g.out, out_elems * 2, cudaMemcpyDeviceToHost));
    lse.resize(static_cast<std::size_t>(c.B) * d.hq);
    CK(cudaMemcpy(lse.data(), g.lse, lse.size() * 4, cudaMemcpyDeviceToHost));
    cnt.resize(8);
    CK(cudaMemcpy(cnt.data(), g.counters, 64, cudaMemcpyDeviceToHost));
    if (partial) {
      partial->resize(static_cast<std::size_t>(g.rows) * 256);
      CK(cudaMemcpy(partial->data(), g.partial, partial->size() * 2, cudaMemcpyDeviceToHost));
      pl->resize(static_cast<std::size_t>(g.rows));
      CK(cudaMemcpy(pl->data(), g.pl, pl->size() * 4, cudaMemcpyDeviceToHost));
    }
  };
  std::vector<std::uint16_t> out, out_old, out_alt, partial;
  std::vector<float> lse, lse_old, lse_alt, plv;
  std::vector<unsigned long long> cnt, cnt_old, cnt_alt;
  run_and_fetch(false, false, out, lse, cnt, &partial, &plv);
  const bool do_old = old && c.cache_offset % 4 == 0 && c.slot_bytes % 4 == 0;
  if (do_old) run_and_fetch(true, true, out_old, lse_old, cnt_old, nullptr, nullptr);
  if (g.P == 1) run_and_fetch(false, true, out_alt, lse_alt, cnt_alt, nullptr, nullptr);

  // compare
  bool ok = true;
  double worst = 0.0, worst_old = 0.0, sum_rel = 0.0, sum_rel_old = 0.0, sum_diff_old = 0.0, worst_fp32 = 0.0;
  std::size_t n = 0, fails = 0, identical = 0;
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < d.hq; ++h) {
      const std::size_t row = static_cast<std::size_t>(b) * d.hq + h;
      const bool nanrow = std::find(c.nan_q.begin(), c.nan_q.end(), std::make_pair(b, h)) != c.nan_q.end();
      for (int e = 0; e < 256; ++e) {
        const std::uint16_t bits = out[b * g.out_stride_seq + h * g.out_stride_head + e];
        const double want = ref.out[row * 256 + e];
        if (nanrow) {
          if (!is_nan_bf16(bits)) {
            if (fails++ < 3) std::printf("    %s: (%d,%d,%d) expected NaN, got %04x\n", c.name.c_str(), b, h, e, bits);
            ok = false;
          }
          continue;
        }
        const double got = bf16f(bits);
        const double vmax = ref.vmax[row * 256 + e];
        const double tol = tol_new(want, vmax, ref.score_abs[row], ref.attended[row]);
        const double err = std::fabs(got - want);
        if (!(err <= tol)) {
          if (fails++ < 3)
            std::printf("    %s: (%d,%d,%d) got %g want %g err %g tol %g (bits %04x)\n", c.name.c_str(), b, h, e, got, want, err,
                        tol, bits);
          ok = false;
        }
        worst = std::max(worst, err / tol);
        worst_fp32 = std::max(worst_fp32, err / tol_fp32(want, vmax, ref.score_abs[row], ref.attended[row]));
        if (ref.attended[row] > 0 && vmax > 0) {
          sum_rel += err / vmax;
          ++n;
        }
        if (do_old) {
          const double go = bf16f(out_old[b * g.out_stride_seq + h * g.out_stride_head + e]);
          worst_old = std::max(worst_old, std::fabs(go - want) / tol_fp32(want, vmax, ref.score_abs[row], ref.attended[row]));
          if (ref.attended[row] > 0 && vmax > 0) {
            sum_rel_old += std::fabs(go - want) / vmax;
            sum_diff_old += std::fabs(go - got) / vmax;
          }
          identical += out_old[b * g.out_stride_seq + h * g.out_stride_head + e] == bits;
        }
      }
      // lse
      if (c.lse) {
        const float got = lse[row];
        if (nanrow) {
          if (got == got) {
            std::printf("    %s: lse (%d,%d) expected NaN, got %g\n", c.name.c_str(), b, h, got);
            ok = false;
          }
        } else {
          const double want = ref_lse(c, d, b, h);
          // lse = M + log(sum): the score error delta moves it by <= delta; fp32 rounding of M,
          // of the log and of the sum: 2^-20 (|M| + 1)
          const double delta = (std::ldexp(1.0, -7) + std::ldexp(1.0, -13) + 64.0 * std::ldexp(1.0, -24)) * ref.score_abs[row];
          const double tl = delta + std::ldexp(1.0, -20) * (std::fabs(want) + 1.0) + 1e-6;
          const bool good = std::isinf(want) ? (std::isinf(got) && got < 0) : std::fabs(got - want) <= tl;
          if (!good) {
            std::printf("    %s: lse (%d,%d) got %.7g want %.7g tol %g\n", c.name.c_str(), b, h, got, want, tl);
            ok = false;
          }
        }
      }
    }
  // every element written (poison gone) is implied by the checks above (0xEEEE = -3.7e28)
  // counters
  const Expect ex = expected_counters(c, d);
  if (cnt[0] != ex.bad_blocks || cnt[1] != ex.neg || cnt[2] != ex.lng || cnt[4] != ex.nonfinite) {
    std::printf("    %s: counters bad %llu/%llu neg %llu/%llu long %llu/%llu nonfinite %llu/%llu (got/want)\n", c.name.c_str(),
                cnt[0], ex.bad_blocks, cnt[1], ex.neg, cnt[2], ex.lng, cnt[4], ex.nonfinite);
    ok = false;
  }
  // The reducer's two shapes (one block per row from kReduceWholeRowMinRows rows,
  // else 8 blocks of 32 dims) give the same bits: reduce the first sequences alone (chunks) and
  // compare with the whole-row result of the full batch (the partials computed again: the runs
  // above overwrote them).
  if (g.P > 1 && static_cast<std::int64_t>(c.B) * d.hq >= uq::sm90::kReduceWholeRowMinRows) {
    std::vector<std::uint16_t> out_few(out_elems);
    std::vector<float> lse_few(lse.size());
    DecodeReduceLaunch rl = red_launch(c, d, g);
    rl.num_seqs = static_cast<int>((uq::sm90::kReduceWholeRowMinRows - 1) / d.hq);
    CK(cudaMemset(g.out, 0xEE, out_elems * 2));
    CK(cudaMemset(g.lse, 0xEE, lse.size() * 4));
    uq::sm90::launch_decode_partitions(part_launch(c, d, g, false));
    uq::sm90::launch_decode_reduce(rl);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out_few.data(), g.out, out_elems * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(lse_few.data(), g.lse, lse.size() * 4, cudaMemcpyDeviceToHost));
    std::size_t diff = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(rl.num_seqs) * g.out_stride_seq; ++i) diff += out[i] != out_few[i];
    for (std::size_t i = 0; c.lse && i < static_cast<std::size_t>(rl.num_seqs) * d.hq; ++i)
      diff += std::memcmp(&lse[i], &lse_few[i], 4) != 0;
    if (diff) {
      std::printf("    %s: chunked and whole-row reducers differ in %zu values\n", c.name.c_str(), diff);
      ok = false;
    }
  }
  // revision 2: partitions with l = 0 write no partial row (it keeps the poison); P = 1 writes out
  // directly, bit-identical to partials + reducer
  if (g.P > 1) {
    std::size_t empty = 0, touched = 0;
    for (std::int64_t r = 0; r < g.rows; ++r)  // partial row r = (bh, p, query row); its l: partial_lm_index
      if (plv[uq::sm90::partial_lm_index(r / c.qg / g.P, static_cast<int>(r % c.qg), static_cast<int>(r / c.qg % g.P), g.P,
                                         c.qg)] == 0.0f) {
        ++empty;
        for (int e = 0; e < 256; ++e) touched += partial[r * 256 + e] != 0xEEEE;
      }
    if (touched) {
      std::printf("    %s: %zu elements of empty partitions' rows written\n", c.name.c_str(), touched);
      ok = false;
    }
  } else {
    std::size_t diff = 0;
    for (std::size_t i = 0; i < out.size(); ++i) diff += out[i] != out_alt[i];
    for (std::size_t i = 0; i < lse.size() && c.lse; ++i) diff += std::memcmp(&lse[i], &lse_alt[i], 4) != 0;
    if (diff) {
      std::printf("    %s: P = 1 direct out differs from partials + reducer in %zu values\n", c.name.c_str(), diff);
      ok = false;
    }
  }
  std::printf("%-4s %-34s P %4d | new: max err/tol %.3f (fp32 tol %.2f), mean |err|/vmax %.2e", ok ? "ok" : "FAIL",
              c.name.c_str(), g.P, worst, worst_fp32, n ? sum_rel / n : 0.0);
  if (do_old)
    std::printf(" | old: max %.3f mean %.2e | new-old mean %.2e, %.1f%% identical", worst_old, n ? sum_rel_old / n : 0.0,
                n ? sum_diff_old / n : 0.0, 100.0 * identical / std::max<std::size_t>(1, out.size()));
  std::printf("\n");
  release(g);
  if (!ok) ++g_failures;
  return ok;
}

std::vector<int> ragged(int n, std::uint64_t seed, int maxlen) {
  const int base[] = {0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000, 3001};
  std::vector<int> v;
  std::mt19937 r(static_cast<unsigned>(seed));
  for (int i = 0; i < n; ++i) v.push_back(i < 13 ? std::min(base[i], maxlen) : static_cast<int>(r() % maxlen));
  return v;
}

void check_all(bool small) {
  std::vector<Case> cs;
  for (int qg : {6, 8, 16})
    for (int bs : {16, 32, 64, 128, 256}) {
      Case c;
      c.name = "ragged qg" + std::to_string(qg) + " bs" + std::to_string(bs);
      c.qg = qg;
      c.bs = bs;
      c.B = small ? 3 : 13;
      c.lens = ragged(c.B, qg * 100 + bs, 3001);
      c.seed = qg * 7 + bs;
      c.q_head_pad = 64;
      cs.push_back(c);
      if (small) break;
    }
  for (int P : {1, 2, 3, 7, 64, 512}) {
    Case c;
    c.name = "forced P " + std::to_string(P);
    c.B = 3;
    c.qg = P % 2 ? 16 : 6;
    c.lens = {2000, 1, 700};
    c.P = P;
    c.seed = 100 + P;
    cs.push_back(c);
    if (small && P > 3) break;
  }
  {
    Case c;
    c.name = "long contexts, default P";
    c.lens = {75000, 140000, 1};
    c.B = 3;
    c.seed = 75;
    if (!small) cs.push_back(c);
  }
  {
    Case c;
    c.name = "rotated q, Hk 3, qg 8";
    c.q_rotated = true;
    c.q_sigma = 0.3f;
    c.Hk = 3;
    c.qg = 8;
    c.B = 3;
    c.bs = 32;
    c.lens = {257, 1, 1500};
    cs.push_back(c);
  }
  for (int slot : {288, 276}) {
    Case c;
    c.name = "padded slot " + std::to_string(slot) + ", Hk 2";
    c.slot_bytes = slot;
    c.Hk = 2;
    c.B = 2;
    c.lens = {300, 65};
    c.seed = slot;
    cs.push_back(c);
  }
  for (int off : {4, 1}) {
    Case c;
    c.name = "cache offset " + std::to_string(off);
    c.cache_offset = off;
    c.qg = 8;
    c.B = 3;
    c.lens = {300, 17, 0};
    c.seed = 60 + off;
    cs.push_back(c);
  }
  {
    Case c;
    c.name = "strided out, P 1, qg 16";
    c.out_head_pad = 24;
    c.P = 1;
    c.qg = 16;
    c.B = 2;
    c.lens = {513, 64};
    cs.push_back(c);
  }
  {  // tiny group scales 2^-126 .. 2^-115: V's smallest values are bf16 subnormals in the MMA
    Case c;
    c.name = "scale bytes 1..12";
    c.sc_lo = 1;
    c.sc_hi = 13;
    c.B = 2;
    c.lens = {700, 33};
    c.seed = 72;
    cs.push_back(c);
  }
  {  // bytes 128..132 (the single-multiply V operand's top) mixed with small ones
    Case c;
    c.name = "scale bytes 100..133";
    c.sc_lo = 100;
    c.sc_hi = 133;
    c.scale = 1e-3f;
    c.B = 2;
    c.lens = {700, 33};
    c.seed = 73;
    cs.push_back(c);
  }
  for (int big : {0, 1}) {
    Case c;
    c.name = big ? "scale bytes 126..140" : "scale bytes 55..70";
    c.sc_lo = big ? 126 : 55;
    c.sc_hi = big ? 140 : 70;
    c.scale = big ? 1e-4f : 1.0f / 16.0f;
    c.B = 2;
    c.lens = {700, 33};
    c.seed = 70 + big;
    cs.push_back(c);
  }
  {  // peaked scores: a tile's maximum often lies more than 2^8 above the running one (the
     // kernel's lazy rescale must notice and redo the tile)
    Case c;
    c.name = "softmax scale 2 (moving maxima)";
    c.scale = 2.0f;
    c.B = 3;
    c.lens = {3000, 700, 65};
    c.seed = 77;
    cs.push_back(c);
  }
  {
    Case c;
    c.name = "large q (e4m3 saturates)";
    c.q_sigma = 600.0f;
    c.scale = 1e-3f;
    c.qg = 8;
    c.B = 2;
    c.lens = {513, 64};
    cs.push_back(c);
  }
  for (int hk : {1, 2}) {
    Case c;
    c.name = "bad data, Hk " + std::to_string(hk);
    c.Hk = hk;
    c.bs = 32;
    c.B = 4;
    c.max_blocks = 8;
    c.lens = {190, -5, 100, 8 * 32 + 40};
    c.bad_blocks = {{0, 1}, {0, 6}, {2, 0}};
    c.nan_q = {{0, 2}, {3, 5}};
    c.seed = 90 + hk;
    cs.push_back(c);
  }
  {
    Case c;
    c.name = "bad data, P 1, bs 16";
    c.bs = 16;
    c.B = 3;
    c.P = 1;
    c.lens = {40, 5, 0};
    c.bad_blocks = {{0, 0}, {0, 1}, {0, 2}, {1, 0}};
    c.nan_q = {{2, 1}};
    cs.push_back(c);
  }
  // Many query rows: the whole-row reducer (and its bit-identity with the chunked one, above),
  // ragged lengths, non-finite q rows, forced P above 512 (strands of several passes).
  for (int P : {0, 7, 600}) {
    Case c;
    c.name = "many rows, P " + std::to_string(P);
    c.B = P == 600 ? 44 : 50;
    c.Hk = P == 7 ? 1 : 2;
    c.qg = P == 7 ? 6 : 8;
    c.lens = ragged(c.B, 500 + P, 2200);
    c.P = P;
    c.nan_q = {{5, 1}};
    c.seed = 300 + P;
    if (!small || P == 7) cs.push_back(c);
  }
  for (const Case& c : cs) check_case(c);
}

// ------------------------------------------------------------------ timing
struct Shape {
  int B, ctx, qg, Hk, bs;
  int ragged = 0;  // > 0: lengths uniform in [1, ragged] (an engine's live batch) in a table of ctx tokens
  std::string name() const {
    return "B" + std::to_string(B) + (ragged ? " rag" + std::to_string(ragged) + "/" : " ctx") + std::to_string(ctx) +
           " QG" + std::to_string(qg) + " Hk" + std::to_string(Hk) + " BS" + std::to_string(bs);
  }
};

// Timed caches: random code bytes, scale bytes 118 + (0 .. span - 1) (span = UQ_HARNESS_SCALE_SPAN,
// default 12: bytes 118..129; 10 gives 118..127, V group maxima below 8), 1/32 of them zero.
__global__ void fill_cache(std::uint8_t* p, std::int64_t n, std::uint64_t seed, int span) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + seed;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    const int o = static_cast<int>(i % 272);
    const bool scale = (o >= 128 && o < 136) || o >= 264;
    p[i] = scale ? ((x & 31) == 0 ? 0 : static_cast<std::uint8_t>(118 + (x >> 8) % span)) : static_cast<std::uint8_t>(x >> 16);
  }
}

struct TimedInputs {
  std::uint8_t* cache;
  std::int32_t* tables;
  std::int32_t* lens;
  std::uint16_t* q;
};

float elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  return ms * 1000.0f;
}

template <class F>
void time_fn(F&& f, int ncopies, int reps, float& single, float& b2b, float* graph) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 2 * ncopies; ++i) f(i % ncopies);
  CK(cudaDeviceSynchronize());
  std::vector<float> ts;
  for (int i = 0; i < 9; ++i) {
    CK(cudaEventRecord(e0));
    f(i % ncopies);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    ts.push_back(elapsed(e0, e1));
  }
  std::sort(ts.begin(), ts.end());
  single = ts[4];
  CK(cudaEventRecord(e0));
  for (int i = 0; i < reps; ++i) f(i % ncopies);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  b2b = elapsed(e0, e1) / reps;
  if (graph) {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    g_stream = s;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < reps; ++i) f(i % ncopies);
    CK(cudaStreamEndCapture(s, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    float best = 1e30f;
    for (int k = 0; k < 3; ++k) {
      CK(cudaEventRecord(e0, s));
      CK(cudaGraphLaunch(ge, s));
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      best = std::min(best, elapsed(e0, e1) / reps);
    }
    *graph = best;
    g_stream = nullptr;
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(gr);
    cudaStreamDestroy(s);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

double copy_bandwidth() {
  const std::size_t n = std::size_t(1) << 30;
  void *a, *b;
  CK(cudaMalloc(&a, n));
  CK(cudaMalloc(&b, n));
  CK(cudaMemset(a, 1, n));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
  std::vector<float> ts;
  for (int i = 0; i < 7; ++i) {
    CK(cudaEventRecord(e0));
    CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    ts.push_back(elapsed(e0, e1));
  }
  std::sort(ts.begin(), ts.end());
  cudaFree(a);
  cudaFree(b);
  return 2.0 * n / (ts[3] * 1e-6) * 1e-9;  // GB/s, read + write
}

// One timed shape: rotating input copies (together more than 4x the L2), the plan's partials
// and outputs, and the launch descriptions of copy i.
struct TimedCase {
  Shape s;
  int nb = 0, copies = 0;
  double floor_bytes = 0;
  uq::PartitionChoice pc{};
  std::vector<TimedInputs> ins;
  std::uint16_t *partial = nullptr, *out = nullptr;
  float *pl = nullptr, *pm = nullptr;
  unsigned long long* counters = nullptr;
  unsigned* sink = nullptr;

  TimedCase(const Shape& shape, int l2) : s(shape) {
    nb = (s.ctx + s.bs - 1) / s.bs;
    const std::int64_t blocks = static_cast<std::int64_t>(s.B) * nb;
    const std::int64_t cache_bytes = blocks * s.bs * s.Hk * 272;
    std::vector<std::int32_t> lens(s.B, s.ctx);
    if (s.ragged > 0) {
      std::mt19937 lr(11);
      for (auto& x : lens) x = 1 + static_cast<int>(lr() % static_cast<unsigned>(s.ragged));
    }
    double tokens = 0;
    for (int x : lens) tokens += x;
    floor_bytes = tokens * s.Hk * 272.0 + 4.0 * s.B * nb + 4.0 * s.B * s.Hk * s.qg * 256;
    copies = static_cast<int>(std::min<std::int64_t>(8, std::max<std::int64_t>(1, (4ll * l2 + cache_bytes - 1) / cache_bytes)));
    ins.resize(copies);
    std::mt19937 rng(7);
    for (int i = 0; i < copies; ++i) {
      CK(cudaMalloc(&ins[i].cache, cache_bytes));
      const char* span_env = std::getenv("UQ_HARNESS_SCALE_SPAN");
      fill_cache<<<1024, 256>>>(ins[i].cache, cache_bytes, 1234 + i, span_env ? std::atoi(span_env) : 12);
      std::vector<std::int32_t> perm(static_cast<std::size_t>(blocks));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      CK(cudaMalloc(&ins[i].tables, blocks * 4));
      CK(cudaMemcpy(ins[i].tables, perm.data(), blocks * 4, cudaMemcpyHostToDevice));
      CK(cudaMalloc(&ins[i].lens, s.B * 4));
      CK(cudaMemcpy(ins[i].lens, lens.data(), s.B * 4, cudaMemcpyHostToDevice));
      std::vector<std::uint16_t> q(static_cast<std::size_t>(s.B) * s.Hk * s.qg * 256);
      for (auto& x : q) x = f2bf(static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 400.0f);
      CK(cudaMalloc(&ins[i].q, q.size() * 2));
      CK(cudaMemcpy(ins[i].q, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
    }
    pc = uq::choose_partitions(s.B, nb, s.bs, 0);
    const std::int64_t rows = static_cast<std::int64_t>(s.B) * s.Hk * pc.partitions * s.qg;
    CK(cudaMalloc(&partial, rows * 512));
    CK(cudaMalloc(&pl, rows * 4));
    CK(cudaMalloc(&pm, rows * 4));
    CK(cudaMalloc(&out, static_cast<std::size_t>(s.B) * s.Hk * s.qg * 512));
    CK(cudaMalloc(&counters, 64));
    CK(cudaMalloc(&sink, 4 * 65536));
    CK(cudaMemset(counters, 0, 64));
  }
  TimedCase(const TimedCase&) = delete;
  TimedCase& operator=(const TimedCase&) = delete;
  ~TimedCase() {
    for (auto& x : ins) {
      cudaFree(x.cache);
      cudaFree(x.tables);
      cudaFree(x.lens);
      cudaFree(x.q);
    }
    cudaFree(partial);
    cudaFree(pl);
    cudaFree(pm);
    cudaFree(out);
    cudaFree(counters);
    cudaFree(sink);
  }

  void make(int i, DecodePartitionsLaunch& l, DecodeReduceLaunch& r) const {
    l = DecodePartitionsLaunch{};
    l.stream = g_stream;
    l.partial_out = partial;
    l.partial_l = pl;
    l.partial_m = pm;
    l.counters = counters;
    l.q = ins[i].q;
    l.q_stride_seq = static_cast<std::int64_t>(s.Hk) * s.qg * 256;
    l.q_stride_head = 256;
    l.cache = ins[i].cache;
    l.num_blocks = static_cast<std::int64_t>(s.B) * nb;
    l.block_stride = static_cast<std::int64_t>(s.bs) * s.Hk * 272;
    l.block_size = s.bs;
    l.num_kv_heads = s.Hk;
    l.slot_bytes = 272;
    l.block_tables = ins[i].tables;
    l.table_stride_seq = nb;
    l.max_blocks_per_seq = nb;
    l.seq_lens = ins[i].lens;
    l.num_seqs = s.B;
    l.qg = s.qg;
    l.partitions = pc.partitions;
    l.tgpp = pc.tile_groups_per_part;
    l.scale = 1.0f / 16.0f;
    l.out = pc.partitions == 1 ? out : nullptr;
    l.out_stride_seq = static_cast<std::int64_t>(s.Hk) * s.qg * 256;
    l.out_stride_head = 256;
    r = DecodeReduceLaunch{};
    r.stream = g_stream;
    r.partial_out = partial;
    r.partial_l = pl;
    r.partial_m = pm;
    r.out = out;
    r.out_stride_seq = l.out_stride_seq;
    r.out_stride_head = 256;
    r.num_seqs = s.B;
    r.num_kv_heads = s.Hk;
    r.qg = s.qg;
    r.partitions = pc.partitions;
  }
  template <class F>
  void time(F&& f, int reps, float& single, float& b2b, float* graph) const {
    time_fn(
        [&](int i) {
          DecodePartitionsLaunch l;
          DecodeReduceLaunch r;
          make(i, l, r);
          f(l, r);
        },
        copies, reps, single, b2b, graph);
  }
};

void bench(int reps, const std::vector<Shape>& shapes) {
  const double copy = copy_bandwidth();
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  std::printf("copy bandwidth (1 GiB D2D, read + write): %.1f GB/s; L2 %d MB\n", copy, l2 >> 20);
  std::printf("%-28s %4s | %8s %8s | %8s %8s %8s %8s | %8s %8s | %6s %6s %6s\n", "shape", "P", "old 1x", "old b2b", "new 1x",
              "new b2b", "graph", "part b2b", "SOL 1x", "SOL b2b", "%SOL", "%copy", "%SOLg");
  for (const Shape& s : shapes) {
    const TimedCase c(s, l2);
    float o1, ob, n1, nb2b, ng, pb, s1, sb, sg;
    float dummy1;
    c.time([](const DecodePartitionsLaunch& l, const DecodeReduceLaunch& r) { run_old(l, r); }, reps, o1, ob, nullptr);
    c.time([](const DecodePartitionsLaunch& l, const DecodeReduceLaunch& r) { run_new(l, r); }, reps, n1, nb2b, &ng);
    c.time([](const DecodePartitionsLaunch& l, const DecodeReduceLaunch&) { uq::sm90::launch_decode_partitions(l); }, reps,
           dummy1, pb, nullptr);
    c.time([&](const DecodePartitionsLaunch& l, const DecodeReduceLaunch&) { uq::sm90::launch_decode_sol(l, c.sink); }, reps,
           s1, sb, &sg);
    std::vector<unsigned long long> cnt(8);
    CK(cudaMemcpy(cnt.data(), c.counters, 64, cudaMemcpyDeviceToHost));
    std::printf("%-28s %4d | %8.1f %8.1f | %8.1f %8.1f %8.1f %8.1f | %8.1f %8.1f | %6.1f %6.1f %6.1f%s\n", s.name().c_str(),
                c.pc.partitions, o1, ob, n1, nb2b, ng, pb, s1, sb, 100.0 * sb / nb2b,
                100.0 * c.floor_bytes / (nb2b * 1e-6) * 1e-9 / copy, 100.0 * sg / ng,
                (cnt[0] | cnt[1] | cnt[2] | cnt[4]) ? "  (counters nonzero!)" : "");
    std::fflush(stdout);
  }
}

// Probes of the reducer's cost at few rows (mode rprobe): the chunk reducer's grid and launch
// (8 blocks of 256 threads per query row, programmatic serialization), doing only a prefix of
// its work. Stage 0: griddepcontrol.wait only; 1: + l and m of the thread's 8 partitions and
// their maximum; 2: + the partial rows of those with l > 0 (loaded after l, as the reducer must);
// 3: one l a thread; 4: stage 1 after an L2 prefetch (issued before the wait) of the l and m
// lines; 5: stage 2 after a prefetch of those and of the partial rows. The results feed a store
// that never happens, so the loads stay.
template <int kStage>
__global__ void __launch_bounds__(256) reduce_probe_kernel(const DecodeReduceLaunch a, unsigned* sink) {
  const int tid = threadIdx.x, chunk = static_cast<int>(blockIdx.x % 8);
  const std::int64_t row = blockIdx.x / 8;
  const int hq_count = a.num_kv_heads * a.qg, hq = static_cast<int>(row % hq_count);
  const std::int64_t first = (row / hq_count * a.num_kv_heads + hq / a.qg) * a.partitions * a.qg + hq % a.qg;
  const std::int64_t lm = uq::sm90::partial_lm_index(row / hq_count * a.num_kv_heads + hq / a.qg, hq % a.qg, 0, a.partitions, a.qg);
  const int strand = tid / 4, d0 = chunk * 32 + 8 * (tid % 4);
  if constexpr (kStage >= 4) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int p = strand + 64 * u;
      if (p >= a.partitions) break;
      asm volatile("prefetch.global.L2 [%0];\n" ::"l"(a.partial_l + lm + p));
      asm volatile("prefetch.global.L2 [%0];\n" ::"l"(a.partial_m + lm + p));
      if (kStage == 5)
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(a.partial_out + (first + static_cast<std::int64_t>(p) * a.qg) * 256 + d0));
    }
  }
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  unsigned acc = 0;
  if constexpr (kStage == 3) acc = __float_as_uint(a.partial_l[lm + strand]);
  if constexpr (kStage == 1 || kStage == 2 || kStage >= 4) {
    float lv[8], mv[8], mx = -INFINITY;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int p = strand + 64 * u;
      lv[u] = p < a.partitions ? a.partial_l[lm + p] : 0.0f;
      mv[u] = p < a.partitions ? a.partial_m[lm + p] : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < 8; ++u)
      if (lv[u] > 0.0f) mx = fmaxf(mx, mv[u]);
    acc = __float_as_uint(mx);
    if constexpr (kStage == 2 || kStage == 5) {
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (lv[u] > 0.0f) {
          const uint4 v = *reinterpret_cast<const uint4*>(
              a.partial_out + (first + static_cast<std::int64_t>(strand + 64 * u) * a.qg) * 256 + d0);
          acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    }
  }
  if (acc == 0x01234567u) sink[blockIdx.x & 65535] = acc;
}

template <int kStage>
void launch_reduce_probe(const DecodeReduceLaunch& r, unsigned* sink) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(static_cast<std::int64_t>(r.num_seqs) * r.num_kv_heads * r.qg * 8));
  cfg.blockDim = dim3(256);
  cfg.stream = g_stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, reduce_probe_kernel<kStage>, r, sink));
}

// Where the reducer's time goes at few rows: b2b per call of the partition kernel alone, with
// the reducer, with each probe in its place, and of the reducer and probe 2 alone.
void reduce_probe(int reps, const std::vector<Shape>& shapes) {
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  std::printf("%-28s %4s | %8s %8s | %8s %8s %8s %8s %8s %8s | %8s %8s\n", "shape", "P", "part", "+reduce", "+probe0",
              "+probe1", "+probe2", "+probe3", "+probe4", "+probe5", "reduce", "probe2");
  for (const Shape& s : shapes) {
    const TimedCase c(s, l2);
    float x, part, full, p0, p1, p2, p3, p4, p5, ra, pa;
    using L = DecodePartitionsLaunch;
    using R = DecodeReduceLaunch;
    c.time([](const L& l, const R&) { uq::sm90::launch_decode_partitions(l); }, reps, x, part, nullptr);
    c.time([](const L& l, const R& r) { run_new(l, r); }, reps, x, full, nullptr);
    c.time([&](const L& l, const R& r) { uq::sm90::launch_decode_partitions(l); launch_reduce_probe<0>(r, c.sink); }, reps, x, p0, nullptr);
    c.time([&](const L& l, const R& r) { uq::sm90::launch_decode_partitions(l); launch_reduce_probe<1>(r, c.sink); }, reps, x, p1, nullptr);
    c.time([&](const L& l, const R& r) { uq::sm90::launch_decode_partitions(l); launch_reduce_probe<2>(r, c.sink); }, reps, x, p2, nullptr);
    c.time([&](const L& l, const R& r) { uq::sm90::launch_decode_partitions(l); launch_reduce_probe<3>(r, c.sink); }, reps, x, p3, nullptr);
    c.time([&](const L& l, const R& r) { uq::sm90::launch_decode_partitions(l); launch_reduce_probe<4>(r, c.sink); }, reps, x, p4, nullptr);
    c.time([&](const L& l, const R& r) { uq::sm90::launch_decode_partitions(l); launch_reduce_probe<5>(r, c.sink); }, reps, x, p5, nullptr);
    c.time([](const L&, const R& r) { uq::sm90::launch_decode_reduce(r); }, reps, x, ra, nullptr);
    c.time([&](const L&, const R& r) { launch_reduce_probe<2>(r, c.sink); }, reps, x, pa, nullptr);
    std::printf("%-28s %4d | %8.2f %8.2f | %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f | %8.2f %8.2f\n", s.name().c_str(),
                c.pc.partitions, part, full, p0, p1, p2, p3, p4, p5, ra, pa);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("device %s, %d SMs, cc %d.%d\n", p.name, p.multiProcessorCount, p.major, p.minor);
  try {
    if (mode == "check" || mode == "small") {
      check_all(mode == "small");
      std::printf("%s: %d failing cases\n", mode.c_str(), g_failures);
      return g_failures ? 1 : 0;
    }
    if (mode == "bench" || mode == "ncu" || mode == "rprobe") {
      const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
      std::vector<Shape> shapes = {{4, 75000, 6, 1, 64},  {1, 131072, 6, 1, 64}, {16, 131072, 6, 1, 64}, {64, 131072, 6, 1, 64},
                                   {4, 65536, 8, 1, 64},  {4, 65536, 16, 1, 64}, {4, 75000, 6, 1, 16},   {4, 75000, 6, 1, 256},
                                   {4, 75000, 6, 4, 64},  {1, 4096, 6, 1, 64},   {64, 4096, 6, 1, 64},   {16, 16384, 6, 1, 64},
                                   // 12, 13: the engine-sized plan of perf/bench_decode.cpp (256 sequences, Hk 4, a
                                   // 128k-token table) with ragged lengths (mean 4k) and full ones
                                   {256, 131072, 6, 4, 64, 8191}, {256, 131072, 6, 4, 64}};
      if (argc > 3) {  // a comma-separated list of shape indices
        std::vector<Shape> pick;
        for (const char* c = argv[3]; *c;) {
          pick.push_back(shapes.at(std::strtol(c, nullptr, 10)));
          while (*c && *c != ',') ++c;
          if (*c) ++c;
        }
        shapes = pick;
      }
      if (mode == "rprobe") reduce_probe(reps, shapes);
      else bench(reps, shapes);
      return 0;
    }
  } catch (const std::exception& e) {
    std::printf("exception: %s\n", e.what());
    return 3;
  }
  std::printf("unknown mode %s\n", mode.c_str());
  return 2;
}
