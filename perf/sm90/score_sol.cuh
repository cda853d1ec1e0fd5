// The speed-of-light kernel of the NVFP4 index scorer: a plain streaming read of exactly the
// bytes a scorer must move, with no math. It reads each needed page (9216 B, the blocks
// that are neither sentinel-only nor beyond a request's length) through the block table,
// each request's query rows once per warp that touches it, and writes one float per needed
// (block, query column); 16-byte loads, 18 in flight per lane, a warp per page, the pages
// split evenly over all warps of a full grid. Its time is the floor the scorer is measured
// against (perf/sm90/score_harness.cu, perf/bench_score.cpp). Plain CUDA, no uq types.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace uqsol {

struct SolArgs {
  const std::uint8_t* cache = nullptr;  // [pages][9216]
  const std::int32_t* block_tables = nullptr;
  std::int64_t t_req = 0, t_block = 1;
  const std::int64_t* first = nullptr;  // [num_reqs + 1]: prefix sums of the needed pages
  const std::int32_t* lo = nullptr;     // [num_reqs]: first needed block of each request
  int num_reqs = 0;
  std::int64_t total = 0;               // needed pages
  const std::uint8_t* q = nullptr;      // the requests' query rows, q_bytes each, contiguous
  std::int64_t q_bytes = 0;             // per request: QL * H * 128
  float* out = nullptr;                 // [total][cols]
  int cols = 1;
  unsigned* sink = nullptr;             // written only if the data XOR hits a magic value
};

__global__ void __launch_bounds__(256) sol_kernel(const SolArgs a) {
  const int lane = threadIdx.x & 31;
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  const long long wid = static_cast<long long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const long long p0 = a.total * wid / warps, p1 = a.total * (wid + 1) / warps;
  if (p0 >= p1) return;
  int req = 0;
  {
    int lo_r = 0, hi_r = a.num_reqs;  // last req with first[req] <= p0
    while (hi_r - lo_r > 1) {
      const int mid = (lo_r + hi_r) / 2;
      if (a.first[mid] <= p0) lo_r = mid;
      else hi_r = mid;
    }
    req = lo_r;
  }
  unsigned acc = 0;
  int q_req = -1;
  for (long long p = p0; p < p1; ++p) {
    while (p >= a.first[req + 1]) ++req;
    if (req != q_req) {
      const uint4* qs = reinterpret_cast<const uint4*>(a.q + req * a.q_bytes);
      for (long long i = lane; i < a.q_bytes / 16; i += 32) {
        const uint4 v = __ldg(qs + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
      }
      q_req = req;
    }
    const long long b = a.lo[req] + (p - a.first[req]);
    const long long page = a.block_tables[req * a.t_req + b * a.t_block];
    const uint4* src = reinterpret_cast<const uint4*>(a.cache + page * 9216);
    uint4 v[18];
#pragma unroll
    for (int i = 0; i < 18; ++i) v[i] = __ldcs(src + lane + 32 * i);
#pragma unroll
    for (int i = 0; i < 18; ++i) acc ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
    if (lane < a.cols) a.out[p * a.cols + lane] = static_cast<float>(acc & 1u);
  }
  if (acc == 0x9E3779B9u) atomicAdd(a.sink, 1u);
}

// Host side: the needed pages of each request (blocks [init, nb_req - local) of its
// length), as prefix sums and first blocks, in device memory owned by the caller.
struct SolPlan {
  std::vector<std::int64_t> first;
  std::vector<std::int32_t> lo;
  std::int64_t total = 0;
};
inline SolPlan make_sol_plan(const std::vector<std::int32_t>& seq_lens, int max_blocks, int init_blocks,
                             int local_blocks) {
  SolPlan p;
  p.first.push_back(0);
  for (std::int32_t len : seq_lens) {
    long long L = len < 0 ? 0 : len;
    if (L > static_cast<long long>(max_blocks) * 128) L = static_cast<long long>(max_blocks) * 128;
    const long long nb = (L + 127) / 128;
    long long lo = init_blocks, hi = nb - local_blocks;
    if (hi < lo) hi = lo;
    p.lo.push_back(static_cast<std::int32_t>(lo));
    p.total += hi - lo;
    p.first.push_back(p.total);
  }
  return p;
}

inline int sol_grid_blocks() {
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return 8 * sms;  // 8 CTAs of 8 warps per SM: 64 warps, each 18 x 512 B in flight
}

inline void launch_sol(const SolArgs& a, cudaStream_t stream) {
  sol_kernel<<<sol_grid_blocks(), 256, 0, stream>>>(a);
}

}  // namespace uqsol
