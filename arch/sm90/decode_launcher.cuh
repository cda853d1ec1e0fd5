// Host helpers of the partition kernels' launchers (decode.cu: one query token per sequence;
// decode_queries.cu: several): CUDA errors as uq::Error, the cache's tensor map for the
// tensor-map copies, and R, the CTAs per (sequence, KV head), for the current device, settled
// together by settle_grid.
// Compiled by nvcc into uq_sm90.
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/decode_grid.hpp"
#include "uq/error.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled (through the runtime: no driver library is linked)
#include <cuda_runtime.h>

#include <string>

namespace uq::sm90::launcher {

// fn: the launcher, as the error names it.
inline void check(cudaError_t e, const char* fn, const char* what) {
  if (e != cudaSuccess)
    throw uq::Error(fn, what, "cudaSuccess (an sm_90 device)", std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
}

// The cache as a 4-D tensor for kTensorRows copies: [block][position][KV head][34 x 8 bytes] (a
// slot's 272 content bytes as 8-byte elements; strides slot_bytes, pos_stride, block_stride,
// all multiples of 16 with kBulkLoads), box {34, 1, decode_sub_rows(block_size), 1}: one sub-block's
// rows of one KV head, landing as the ring's 272-byte rows. False if the driver refuses it
// (the launch then takes the synchronous copies).
inline bool encode_slots_map(const DecodeKernelArgs& a, CUtensorMap& map) {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    return e == cudaSuccess && found == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn)
                                                                    : nullptr;
  }();
  if (encode == nullptr) return false;
  const cuuint64_t dims[4] = {kRowBytes / 8, static_cast<cuuint64_t>(a.num_kv_heads), static_cast<cuuint64_t>(a.block_size),
                              static_cast<cuuint64_t>(a.num_blocks)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(a.slot_bytes), static_cast<cuuint64_t>(a.pos_stride),
                                 static_cast<cuuint64_t>(a.block_stride)};
  const cuuint32_t box[4] = {kRowBytes / 8, 1, static_cast<cuuint32_t>(decode_sub_rows(a.block_size)), 1};
  const cuuint32_t unit[4] = {1, 1, 1, 1};
  return encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT64, 4, const_cast<std::uint8_t*>(a.cache), dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// decode_ctas_per_bh for this launch on the current device, at ctas_per_sm CTAs of its kernel per SM. The search is O(partitions) and
// the SM-count query a driver call, and an engine repeats the same shape call after call (a
// single call is timed on the host's critical path): the last answer of this thread is reused.
inline int ctas_per_bh(const DecodePartitionsLaunch& l, int ctas_per_sm, const char* fn) {
  struct Key {
    int device, qg, partitions, tgpp, ctas_per_sm;
    std::int64_t nbh, tokens;
    bool operator==(const Key& o) const {
      return device == o.device && qg == o.qg && partitions == o.partitions && tgpp == o.tgpp &&
             ctas_per_sm == o.ctas_per_sm && nbh == o.nbh &&
             tokens == o.tokens;
    }
  };
  thread_local Key last{-1, 0, 0, 0, 0, 0, 0};
  thread_local int last_r = 1;
  Key k{0, l.qg, l.partitions, l.tgpp, ctas_per_sm, static_cast<std::int64_t>(l.num_seqs) * l.num_kv_heads,
        static_cast<std::int64_t>(l.max_blocks_per_seq) * l.block_size};
  check(cudaGetDevice(&k.device), fn, "cudaGetDevice");
  if (k == last) return last_r;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, k.device), fn, "cudaDeviceGetAttribute(SM count)");
  last_r = decode_ctas_per_bh(k.nbh, k.partitions, k.tgpp, k.tokens, sms, k.ctas_per_sm);
  last = k;
  return last_r;
}

// What both partition kernels settle at launch: the tensor-map copies fall back to the
// synchronous ones where the driver refuses the map (slots: the map, all zero otherwise), and R
// for ctas_per_sm CTAs of the kernel per SM goes into the arguments. Returns the grid's CTA count,
// num_seqs x num_kv_heads x R.
inline std::int64_t settle_grid(const DecodePartitionsLaunch& l, DecodeKernelArgs& a, CUtensorMap& slots,
                                int ctas_per_sm, const char* fn) {
  if ((a.flags & kTensorRows) && !encode_slots_map(a, slots)) a.flags &= ~kTensorRows;
  a.ctas_per_bh = ctas_per_bh(l, ctas_per_sm, fn);
  return static_cast<std::int64_t>(l.num_seqs) * l.num_kv_heads * a.ctas_per_bh;
}

}  // namespace uq::sm90::launcher
