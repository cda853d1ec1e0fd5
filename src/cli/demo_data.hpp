// The demo's synthetic attention layer: keys, values and queries with the features of
// a real layer that matter to a 4-bit cache, instead of plain Gaussians.
//
// - Keys: per KV head, channel scales spread log-normally, a non-zero mean per
//   channel, and a few outlier channels (10-30x the typical magnitude, with a
//   consistent sign, like the "massive activations" of real K projections). These are
//   what the Walsh-Hadamard rotation exists for.
// - Values: milder channel spread, one 5x channel per head, no rotation.
// - Per token, the whole K (or V) row is scaled by a log-normal factor (norm variation).
// - Queries: each query head aims at a few "needle" tokens of its sequence (token 0,
//   an attention sink, and three random ones) plus noise, so attention is peaked on
//   some tokens over a broad background, as in real decoding, not uniform.
//
// Every random number is a hash of (seed, what, where), so the data are the same on
// every backend and in every order of generation.
#pragma once

#include "cli/device_arrays.hpp"

#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <vector>

namespace uq {
namespace cli {
namespace demo {

struct DemoShape {
  int seqs = 4;
  int context = 75000;
  int qg = 6;
  int kv_heads = 1;
  int block_size = 64;
  std::uint64_t seed = 1;

  int q_heads() const { return kv_heads * qg; }
  int blocks_per_seq() const { return (context + block_size - 1) / block_size; }
};

inline constexpr int kDim = 256;
inline constexpr int kKeyOutliersPerHead = 4;

// splitmix64's finaliser: a bijective 64-bit mix.
KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// An approximately standard normal number from 64 random bits: the sum of four 16-bit
// uniforms (Irwin-Hall), centred and scaled to unit variance. No libm, so it is the
// same on every device; its tails end at +-3.46, heavy tails come from the model.
KOKKOS_INLINE_FUNCTION float approx_normal(std::uint64_t bits) {
  float s = 0.0f;
  for (int i = 0; i < 4; ++i) s += static_cast<float>((bits >> (16 * i)) & 0xffffu) + 0.5f;
  return (s * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

// Random-number streams (the "what" of a hash key).
enum Stream : std::uint64_t {
  kStreamKV = 1,       // K/V elements
  kStreamTokenK = 2,   // per-token K norm factors
  kStreamTokenV = 3,   // per-token V norm factors
  kStreamModel = 4,    // channel scales, means, outliers
  kStreamQuery = 5,    // needles and query noise
  kStreamBlocks = 6,   // physical block order
};

KOKKOS_INLINE_FUNCTION std::uint64_t random_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return mix64(mix64(seed ^ (stream << 56)) + index);
}

// Host tables of the layer's distributions.
struct LayerModel {
  DemoShape shape;
  // value = token_factor * (scale[h * 256 + d] * z + mean[h * 256 + d])
  std::vector<float> k_scale, k_mean, v_scale, v_mean;  // [Hk * 256]
  std::vector<int> k_outliers;                          // [Hk * kKeyOutliersPerHead] channels
  float k_token_spread = 0.3f;                          // sigma of log(token factor)
  float v_token_spread = 0.2f;
};

LayerModel make_layer_model(const DemoShape& shape);

// Token factor exp(spread * z) of (seq, token, head) for K or V (host only).
float token_factor(const LayerModel& m, bool is_v, int seq, std::int64_t t, int h);

// Index of element (seq, t, h, is_v, d) in the K/V random stream.
KOKKOS_INLINE_FUNCTION std::uint64_t kv_element_index(int seq, std::int64_t context, std::int64_t t, int h, int heads,
                                                      int is_v, int d) {
  return (((static_cast<std::uint64_t>(seq) * context + t) * heads + h) * 2 + is_v) * kDim + d;
}

// K or V row (seq, t, h) in float, before the bf16 rounding (host).
void kv_row(const LayerModel& m, bool is_v, int seq, std::int64_t t, int h, float* row);

// Fills k, v [n, Hk, 256] (bf16) with tokens t0 .. t0 + n - 1 of sequence seq.
void generate_kv(const LayerModel& m, int seq, std::int64_t t0, const DeviceView3<bf16>& k,
                 const DeviceView3<bf16>& v);

// Queries [seqs * per_seq, Hq, 256] bf16 (host), aimed at needle tokens (see above): per_seq
// query tokens per sequence (rows b * per_seq .. b * per_seq + per_seq - 1: the new tokens of a
// speculative-decoding verification), each with its own pulls and noise; with per_seq = 1, and
// for the first token of each sequence, the one-token queries.
std::vector<bf16> make_queries(const LayerModel& m, int per_seq = 1);

// The needle tokens of (seq, query head): token 0 and three random ones.
std::vector<std::int64_t> needle_tokens(const LayerModel& m, int seq, int hq);

// Block table [seqs, blocks_per_seq]: every sequence's blocks, scattered over the
// cache in a random order as a paged allocator leaves them.
std::vector<std::int32_t> make_block_tables(const DemoShape& s);

}  // namespace demo
}  // namespace cli
}  // namespace uq
