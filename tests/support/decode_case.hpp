// A decode test case: builds sequences, a paged cache (written by uq::write_kv into
// blocks in shuffled order, unused blocks full of garbage), a possibly strided q, runs
// a decode path and compares it with the float64 reference (reference/) within
// the tolerance derived below. Used by the generic tests and by every tuned path.
#pragma once

#include "support/decode_tolerance.hpp"
#include "support/lse_tolerance.hpp"
#include "support/reference_inputs.hpp"
#include "support/test_util.hpp"
#include "uq/uq.hpp"
#include "uqref.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace uqtest {

struct DecodeCase {
  int qg = 6;
  int block_size = 64;
  int num_kv_heads = 1;
  std::vector<int> seq_lens = {100};
  int max_blocks_per_seq = 0;  // 0: just enough for the longest sequence
  int spare_blocks = 3;        // unused (garbage) blocks in the cache
  int slot_bytes = 272;
  bool shuffle_blocks = true;
  bool strided_q = true;       // q is the first heads of a fused [B, Hq + 2 Hk, 256] QKV tensor
  bool q_rotated = false;
  int partitions = 0;
  float scale = 1.0f / 16.0f;
  float q_sigma = 1.0f;
  float kv_sigma = 1.0f;
  // K of token t (its position in its sequence) scaled by 2^(k_step_log2 x ((t % 256) / 64)):
  // scores that jump tile after tile within every 256 tokens and fall back after them.
  int k_step_log2 = 0;
  std::uint64_t seed = 1;
  // Corrupt inputs after the cache is written: (sequence, logical block) -> bad id.
  std::vector<std::pair<int, int>> bad_blocks;
  std::vector<std::pair<int, int>> raw_seq_len_overrides;  // (sequence, value) passed to decode
  // q elements replaced after generation: (sequence, query head, dim, bf16 bits), e.g. a NaN or
  // an infinity (spec §6).
  struct QElement {
    int seq, head, dim;
    std::uint16_t bits;
  };
  std::vector<QElement> q_overrides;

  std::string name() const {
    std::string s = "qg" + std::to_string(qg) + " bs" + std::to_string(block_size) + " hk" +
                    std::to_string(num_kv_heads) + " P" + std::to_string(partitions) +
                    (q_rotated ? " rot" : " raw") + " lens";
    for (int l : seq_lens) s += " " + std::to_string(l);
    return s;
  }
};

// The ragged batch of the decode test matrix: 0, 1, 15, 16, 17, 255, 256, 257, a longer
// sequence, and the table's maximum (one block more than the longest, so the window is
// rarely a multiple of a tile-group). Shared by every decode path's tests.
inline DecodeCase ragged_matrix_case(int qg, int block_size, int longest, std::uint64_t seed) {
  DecodeCase c;
  c.qg = qg;
  c.block_size = block_size;
  c.seq_lens = {0, 1, 15, 16, 17, 255, 256, 257, longest};
  c.max_blocks_per_seq = (longest + block_size - 1) / block_size + 1;
  c.seq_lens.push_back(c.max_blocks_per_seq * block_size);
  c.seed = seed;
  return c;
}

// Four sequences over two KV heads at QG 8: a long one, a short one, an empty one and one just
// past a tile: the plan-reuse, strided-output and caller-workspace tests' case.
inline DecodeCase plan_reuse_case(int longest = 1000) {
  DecodeCase c;
  c.qg = 8;
  c.num_kv_heads = 2;
  c.seq_lens = {longest, 3, 0, 257};
  return c;
}

// A forced partition count over a mix of long, short and empty sequences.
inline DecodeCase forced_partitions_case(int partitions, std::uint64_t seed) {
  DecodeCase c;
  c.qg = 8;
  c.block_size = 32;
  c.seq_lens = {2999, 17, 0, 1024};
  c.partitions = partitions;
  c.seed = seed;
  return c;
}

// Host-side data of a built case.
struct DecodeData {
  int num_seqs = 0, hq = 0, max_blocks = 0;
  std::int64_t num_blocks = 0;
  std::vector<std::uint16_t> qkv;       // [B][Hq + 2 Hk][256], q = heads [0, Hq)
  std::vector<std::uint8_t> cache;      // [NB][BS][Hk][slot_bytes]
  std::vector<std::int32_t> tables;     // [B][max_blocks]
  std::vector<std::int32_t> seq_lens;   // as passed to decode
  std::vector<std::uint16_t> kv;        // unquantised K then V [2][T][Hk][256] (for cosine checks)
};

inline DecodeData build_decode_data(const DecodeCase& c) {
  DecodeData d;
  d.num_seqs = static_cast<int>(c.seq_lens.size());
  d.hq = c.num_kv_heads * c.qg;
  int longest = 0;
  for (int l : c.seq_lens) longest = std::max(longest, l);
  d.max_blocks = c.max_blocks_per_seq > 0 ? c.max_blocks_per_seq : (longest + c.block_size - 1) / c.block_size;
  std::int64_t used = 0;
  for (int l : c.seq_lens) used += (l + c.block_size - 1) / c.block_size;
  d.num_blocks = used + c.spare_blocks;
  std::mt19937_64 rng(c.seed);

  // Cache starts as garbage: random bytes with scale bytes in a sane range, so a kernel
  // reading a block it should not gives a visibly wrong (not NaN-free-by-luck) answer.
  const std::size_t slot = static_cast<std::size_t>(c.slot_bytes);
  d.cache.resize(static_cast<std::size_t>(d.num_blocks) * c.block_size * c.num_kv_heads * slot);
  std::uniform_int_distribution<int> byte(0, 255), scale_byte(120, 130);
  for (std::size_t i = 0; i < d.cache.size(); ++i) {
    const std::size_t off = i % slot;
    const bool is_scale = (off >= 128 && off < 136) || (off >= 264 && off < 272);
    d.cache[i] = static_cast<std::uint8_t>(is_scale ? scale_byte(rng) : byte(rng));
  }

  // Block tables: a permutation of the physical blocks; entries past a sequence's end
  // point at arbitrary (valid) blocks, as a real allocator leaves them.
  std::vector<std::int32_t> phys(static_cast<std::size_t>(d.num_blocks));
  std::iota(phys.begin(), phys.end(), 0);
  if (c.shuffle_blocks) std::shuffle(phys.begin(), phys.end(), rng);
  d.tables.assign(static_cast<std::size_t>(d.num_seqs) * d.max_blocks, 0);
  std::size_t next = 0;
  for (int b = 0; b < d.num_seqs; ++b) {
    const int nb = (c.seq_lens[b] + c.block_size - 1) / c.block_size;
    for (int j = 0; j < d.max_blocks; ++j)
      d.tables[static_cast<std::size_t>(b) * d.max_blocks + j] =
          j < nb ? phys[next++] : phys[static_cast<std::size_t>(rng() % phys.size())];
  }

  // K, V for every token, written through uq::write_kv (tested bit-exact elsewhere).
  std::int64_t T = 0;
  for (int l : c.seq_lens) T += l;
  RowGenerator kgen(c.seed * 7 + 1), vgen(c.seed * 7 + 2);
  d.kv.resize(static_cast<std::size_t>(2 * T) * c.num_kv_heads * 256);
  std::vector<std::int64_t> slots(static_cast<std::size_t>(T));
  std::int64_t tok = 0;
  for (int b = 0; b < d.num_seqs; ++b)
    for (int t = 0; t < c.seq_lens[b]; ++t, ++tok) {
      const std::int64_t block = d.tables[static_cast<std::size_t>(b) * d.max_blocks + t / c.block_size];
      slots[static_cast<std::size_t>(tok)] = block * c.block_size + t % c.block_size;
      for (int h = 0; h < c.num_kv_heads; ++h) {
        kgen.fill(&d.kv[(static_cast<std::size_t>(tok) * c.num_kv_heads + h) * 256],
                  std::ldexp(c.kv_sigma, c.k_step_log2 * ((t % 256) / 64)));
        vgen.fill(&d.kv[(static_cast<std::size_t>(T + tok) * c.num_kv_heads + h) * 256], c.kv_sigma);
      }
    }
  if (T > 0) {
    auto cache = to_device(d.cache, "cache", d.num_blocks, c.block_size, c.num_kv_heads, c.slot_bytes);
    std::vector<uq::bf16> kb(d.kv.size() / 2), vb(d.kv.size() / 2);
    for (std::size_t i = 0; i < kb.size(); ++i) {
      kb[i].bits = d.kv[i];
      vb[i].bits = d.kv[kb.size() + i];
    }
    auto k = to_device(kb, "k", T, c.num_kv_heads, 256);
    auto v = to_device(vb, "v", T, c.num_kv_heads, 256);
    auto s = to_device(slots, "slots", T);
    uq::write_kv(k, v, s, cache);
    d.cache = to_host(cache);
  }

  // Queries: the q part of a fused QKV tensor; the K/V heads hold garbage.
  const int heads = d.hq + 2 * c.num_kv_heads;
  d.qkv.resize(static_cast<std::size_t>(d.num_seqs) * heads * 256);
  RowGenerator qgen(c.seed * 7 + 3, 256, 0);
  for (std::size_t r = 0; r < d.qkv.size() / 256; ++r) qgen.fill(&d.qkv[r * 256], c.q_sigma);

  for (const auto& e : c.q_overrides)
    d.qkv[(static_cast<std::size_t>(e.seq) * heads + e.head) * 256 + e.dim] = e.bits;

  d.seq_lens.assign(c.seq_lens.begin(), c.seq_lens.end());
  for (auto [b, len] : c.raw_seq_len_overrides) d.seq_lens[static_cast<std::size_t>(b)] = len;
  for (auto [b, j] : c.bad_blocks)
    d.tables[static_cast<std::size_t>(b) * d.max_blocks + j] = (j % 2) ? -1 - j : static_cast<std::int32_t>(d.num_blocks + j);
  return d;
}

inline uqref::DecodeResult reference_decode(const DecodeCase& c, const DecodeData& d) {
  const int heads = d.hq + 2 * c.num_kv_heads;  // a fused qkv row
  uqref::DecodeInputs in = reference_decode_inputs(d.qkv.data(), heads, c.qg, d.cache.data(), d.num_blocks,
                                                   c.block_size, c.num_kv_heads, c.slot_bytes, d.tables.data(),
                                                   d.max_blocks, d.seq_lens.data(), d.num_seqs, c.scale);
  in.q_rotated = c.q_rotated;
  return uqref::uq_decode(in);
}

// Runs a decode path over the case and checks it. `run` gets the device views and
// must fill out (and lse, for the runners that take it); it may throw.
using DecodeRunner = std::function<void(const Kokkos::View<const uq::bf16***, Kokkos::LayoutStride, Mem>& q,
                                        const Kokkos::View<const std::uint8_t****, Kokkos::LayoutRight, Mem>& cache,
                                        const Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Mem>& tables,
                                        const Kokkos::View<const std::int32_t*, Kokkos::LayoutRight, Mem>& lens,
                                        const Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem>& out)>;
// lse: [B, Hq] float, viewed transposed over a [Hq, B] buffer (vLLM's layout): any strides.
using LseView = Kokkos::View<float**, Kokkos::LayoutStride, Mem>;
using DecodeRunnerLse = std::function<void(const Kokkos::View<const uq::bf16***, Kokkos::LayoutStride, Mem>& q,
                                           const Kokkos::View<const std::uint8_t****, Kokkos::LayoutRight, Mem>& cache,
                                           const Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Mem>& tables,
                                           const Kokkos::View<const std::int32_t*, Kokkos::LayoutRight, Mem>& lens,
                                           const Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem>& out,
                                           const LseView& lse)>;

// The value an lse view holds before a run: finite, so that a missing write is never taken
// for the -inf of an empty sequence or the NaN of a non-finite query.
inline constexpr float kPoisonLse = 12345.0f;

struct DecodeCheck {
  std::vector<std::uint16_t> out;  // [B][Hq][256] bits
  std::vector<float> lse;          // [B][Hq] (check_decode_lse only)
  double max_err_over_tol = 0.0;
  double max_lse_err_over_tol = 0.0;
};

// A case's inputs on the device as the decode entry points take them: q is the query heads of
// a fused [B, Hq + 2 Hk, 256] QKV buffer (strided rows; its K/V heads hold garbage), or a
// dense copy when the case asks for one.
struct DeviceDecodeInputs {
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> fused;  // q's storage
  Kokkos::View<const uq::bf16***, Kokkos::LayoutStride, Mem> q;
  Kokkos::View<const std::uint8_t****, Kokkos::LayoutRight, Mem> cache;
  Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Mem> tables;
  Kokkos::View<const std::int32_t*, Kokkos::LayoutRight, Mem> lens;
};

inline DeviceDecodeInputs decode_inputs_on_device(const DecodeCase& c, const DecodeData& d) {
  DeviceDecodeInputs in;
  const int heads = d.hq + 2 * c.num_kv_heads;
  std::vector<uq::bf16> qkv(d.qkv.size());
  for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i].bits = d.qkv[i];
  in.fused = to_device(qkv, "qkv", d.num_seqs, heads, 256);
  if (c.strided_q) {
    in.q = Kokkos::subview(in.fused, Kokkos::ALL, std::make_pair(0, d.hq), Kokkos::ALL);
  } else {
    std::vector<uq::bf16> dense;
    for (int b = 0; b < d.num_seqs; ++b)
      for (int h = 0; h < d.hq; ++h)
        for (int e = 0; e < 256; ++e) dense.push_back(qkv[(static_cast<std::size_t>(b) * heads + h) * 256 + e]);
    in.q = Kokkos::View<const uq::bf16***, Kokkos::LayoutStride, Mem>(to_device(dense, "q", d.num_seqs, d.hq, 256));
  }
  in.cache = to_device(d.cache, "cache", d.num_blocks, c.block_size, c.num_kv_heads, c.slot_bytes);
  in.tables = to_device(d.tables, "tables", d.num_seqs, d.max_blocks);
  in.lens = to_device(d.seq_lens, "lens", d.num_seqs);
  return in;
}

// A path-specific tolerance (a path whose numerics differ from the generic derivation above, e.g.
// the sm90 FP8 QK): element i of row `row`; empty = decode_tolerance.
using DecodeTolerance =
    std::function<double(const DecodeData& d, const uqref::DecodeResult& ref, std::size_t row, std::size_t i)>;
// The same for the lse of row `row`; empty = lse_tolerance.
using LseTolerance = std::function<double(const DecodeData& d, const uqref::DecodeResult& ref, std::size_t row)>;

// Checks out (and, with want_lse, lse) against the reference: every element within the
// tolerance; a sequence without tokens gives exactly +0 and lse -inf; a non-finite query row
// (spec §6) gives NaN everywhere and a NaN lse.
inline DecodeCheck check_decode_impl(const DecodeCase& c, bool want_lse, const DecodeRunnerLse& run,
                                     const DecodeTolerance& tolerance = {}, const LseTolerance& lse_tol = {}) {
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> out("out", d.num_seqs, d.hq, 256);
  Kokkos::deep_copy(out, uq::bf16{kPoisonBf16});
  DeviceView<float**> lse_storage("lse storage", d.hq, d.num_seqs);
  Kokkos::deep_copy(lse_storage, kPoisonLse);
  const LseView lse(lse_storage.data(), Kokkos::LayoutStride(static_cast<std::size_t>(d.num_seqs), 1,
                                                             static_cast<std::size_t>(d.hq),
                                                             static_cast<std::size_t>(d.num_seqs)));

  run(in.q, in.cache, in.tables, in.lens, out, lse);

  const uqref::DecodeResult ref = reference_decode(c, d);
  DecodeCheck result;
  result.out.reserve(out.size());
  for (const uq::bf16& x : to_host(out)) result.out.push_back(x.bits);
  if (want_lse) result.lse = to_host(lse);
  int reported = 0;
  for (int b = 0; b < d.num_seqs; ++b)
    for (int h = 0; h < d.hq; ++h) {
      const std::size_t row = static_cast<std::size_t>(b) * d.hq + h;
      const bool nonfinite = ref.nonfinite_q[row] != 0;
      for (int e = 0; e < 256; ++e) {
        const std::size_t i = row * 256 + e;
        const double got = uq::codec::bf16_to_float(uq::bf16{result.out[i]});
        if (nonfinite) {
          if (!std::isnan(got) && reported++ < 5)
            ADD_FAILURE() << c.name() << ": seq " << b << " head " << h << " has a non-finite q: dim " << e
                          << " must be NaN, got " << got;
          continue;
        }
        const double want = ref.out[i];
        const double tol = tolerance ? tolerance(d, ref, row, i)
                                     : decode_tolerance(want, ref.vmax[i], ref.score_abs[row], ref.attended[row]);
        const double err = std::fabs(got - want);
        result.max_err_over_tol = std::max(result.max_err_over_tol, std::isfinite(got) ? err / tol : INFINITY);
        if (!(err <= tol) && reported++ < 5)
          ADD_FAILURE() << c.name() << ": seq " << b << " head " << h << " dim " << e << ": got " << got
                        << ", reference " << want << ", |err| " << err << " > tol " << tol;
        if (ref.attended[row] == 0 && result.out[i] != 0 && reported++ < 5)
          ADD_FAILURE() << c.name() << ": empty sequence " << b << " must give exactly +0, got bits "
                        << result.out[i];
      }
      if (!want_lse) continue;
      const double got = result.lse[row], want = ref.lse[row];
      if (nonfinite || ref.attended[row] == 0) {
        const bool ok = nonfinite ? std::isnan(got) : got == -INFINITY;
        if (!ok && reported++ < 5)
          ADD_FAILURE() << c.name() << ": seq " << b << " head " << h << ": lse must be "
                        << (nonfinite ? "NaN (non-finite q)" : "-inf (no token)") << ", got " << got;
        continue;
      }
      const double tol = lse_tol ? lse_tol(d, ref, row) : lse_tolerance(want, ref.score_abs[row], ref.attended[row]);
      const double err = std::fabs(got - want);
      result.max_lse_err_over_tol = std::max(result.max_lse_err_over_tol, std::isfinite(got) ? err / tol : INFINITY);
      if (!(err <= tol) && reported++ < 5)
        ADD_FAILURE() << c.name() << ": seq " << b << " head " << h << ": lse " << got << ", reference " << want
                      << ", |err| " << err << " > tol " << tol;
    }
  return result;
}

inline DecodeCheck check_decode(const DecodeCase& c, const DecodeRunner& run, const DecodeTolerance& tolerance = {}) {
  return check_decode_impl(
      c, false, [&](auto q, auto cache, auto tables, auto lens, auto out, auto) { run(q, cache, tables, lens, out); },
      tolerance);
}

// The same, for a path that also writes lse ([B, Hq], a transposed view).
inline DecodeCheck check_decode_lse(const DecodeCase& c, const DecodeRunnerLse& run,
                                    const DecodeTolerance& tolerance = {}, const LseTolerance& lse_tol = {}) {
  return check_decode_impl(c, true, run, tolerance, lse_tol);
}

}  // namespace uqtest
