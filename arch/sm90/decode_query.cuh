// q8 = e4m3(WHT(fp32(q))) (or e4m3(q) when q is pre-rotated) of a KV head's query rows into
// shared memory as the QK wgmmas' B operand (layout in decode_args.hpp), and the detection of
// non-finite query rows (spec ultraquant.md §6: a bf16 element with an all-ones exponent).
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/ptx.cuh"

#include <cstdint>

namespace uq::sm90 {
namespace decode_detail {

// Values the kernels write: -inf (m of an empty row), NaN (non-finite q).
__device__ __forceinline__ float neg_inf() { return __uint_as_float(0xff800000u); }
__device__ __forceinline__ float quiet_nan() { return __uint_as_float(0x7fc00000u); }
constexpr std::uint16_t kBf16Nan = 0x7FC0u;

__device__ __forceinline__ float bf16_bits_to_float(std::uint32_t b) { return __uint_as_float(b << 16); }

// Lane l loads dims 8l..8l+7 of query row hq (raw bf16 bits) and says whether any of the
// row's 256 values is non-finite (warp-uniform).
__device__ __forceinline__ bool load_query_row(const DecodeKernelArgs& a, int b, int hq, int lane, std::uint32_t (&x)[8]) {
  const std::uint16_t* row = a.q + b * a.q_stride_seq + static_cast<std::int64_t>(hq) * a.q_stride_head;
  if (a.flags & kQVector) {
    const uint4 v = *reinterpret_cast<const uint4*>(row + 8 * lane);
    const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      x[2 * i] = w[i] & 0xFFFFu;
      x[2 * i + 1] = w[i] >> 16;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) x[i] = row[(8 * lane + i) * a.q_stride_dim];
  }
  bool bad = false;
#pragma unroll
  for (int i = 0; i < 8; ++i) bad = bad || (x[i] & 0x7F80u) == 0x7F80u;
  return __any_sync(0xffffffffu, bad);
}

// Lane l's 8 dims (8l..8l+7, raw bf16 bits) of a finite query row -> its q8 words: dims
// 8l, 8l+2, 8l+4, 8l+6 (x, even) and the odd ones (y), one E4M3 byte each.
// The WHT: lane l holds dims 8l..8l+7, stages 0-2 run inside a lane and stages 3-7 pair lanes l
// and l ^ 2^(s-3): the same fp32 operations in the same order as the spec's butterflies.
__device__ __forceinline__ uint2 q8_words(const DecodeKernelArgs& a, const std::uint32_t (&raw)[8], int lane) {
  float x[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = bf16_bits_to_float(raw[i]);
  if (!(a.flags & kQRotated)) {
#pragma unroll
    for (int s = 0; s < 3; ++s)
#pragma unroll
      for (int i = 0; i < 8; ++i)
        if (!(i & (1 << s))) {
          const float lo = x[i], hi = x[i + (1 << s)];
          x[i] = lo + hi;
          x[i + (1 << s)] = lo - hi;
        }
#pragma unroll
    for (int s = 3; s < 8; ++s) {
      const int m = 1 << (s - 3);
      const bool upper = lane & m;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float other = __shfl_xor_sync(0xffffffffu, x[i], m);
        x[i] = upper ? other - x[i] : x[i] + other;
      }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) x[i] *= 0.0625f;
  }
  return make_uint2(ptx::e4m3x2_from_f32(x[0], x[2]) | (ptx::e4m3x2_from_f32(x[4], x[6]) << 16),
                    ptx::e4m3x2_from_f32(x[1], x[3]) | (ptx::e4m3x2_from_f32(x[5], x[7]) << 16));
}

// Row r of the B operand of N rows: group g = lane / 4, t = lane % 4 writes bytes 4t..4t+3 of
// row r in core matrices (g, kh).
template <int N>
__device__ __forceinline__ void store_q8_row(unsigned char* qs, int r, int lane, std::uint32_t even, std::uint32_t odd) {
  const int g = lane >> 2, t = lane & 3, nb = N / 8;
  unsigned char* const base = qs + (r & 7) * 16 + 4 * t + (r >> 3) * 128;
  *reinterpret_cast<std::uint32_t*>(base + (2 * g + 0) * nb * 128) = even;
  *reinterpret_cast<std::uint32_t*>(base + (2 * g + 1) * nb * 128) = odd;
}

// Warps first..3 stage the N padded query rows in turn (warp w: rows w - first, w - first +
// 4 - first, ...; warp 0 may be busy issuing the first copies); rows >= QG and non-finite rows
// are staged as zeros (a non-finite row's results are replaced by NaN at the end; zeros keep
// its wgmma column harmless). qbad[r] = 1 for a non-finite row r < QG.
template <int QG>
__device__ __forceinline__ void stage_query(const DecodeKernelArgs& a, int b, int h, unsigned char* qs, unsigned char* qbad,
                                            int first, int warp, int lane) {
  constexpr int N = q_rows(QG);
  if (warp < first) return;
  for (int r = warp - first; r < N; r += 4 - first) {
    std::uint32_t even = 0u, odd = 0u;
    if (r < QG) {
      std::uint32_t raw[8];
      const bool bad = load_query_row(a, b, h * QG + r, lane, raw);
      if (lane == 0) qbad[r] = bad ? 1 : 0;
      if (!bad) {
        const uint2 w = q8_words(a, raw, lane);
        even = w.x;
        odd = w.y;
      }
    } else if (lane == 0 && r < 16) {
      qbad[r] = 0;
    }
    store_q8_row<N>(qs, r, lane, even, odd);
  }
}

}  // namespace decode_detail
}  // namespace uq::sm90
