// The multi-token partition kernel's bookkeeping (spec ultraquant.md §5.9, DecodeQueriesLaunch):
// where a sequence's query tokens are, which query token and head each of the N wgmma rows is,
// which of the sequence's tokens a row sees, where its results go, and the partitions that hold
// none of the sequence's tokens. Row r = j QG + g of a CTA's N (decode_args.hpp, queries_n) is
// query token j of the sequence, query head h QG + g; rows past n QG are zero and never written.
// Query token j of n sees the first visible_tokens(L, n, j) tokens (uq/core/sequence_rules.hpp,
// the rule every path shares): each row takes exactly the steps of a one-token decode of that
// length (a tile wholly past a row's tokens leaves its m, l and accumulators unchanged: alpha =
// 1, p = 0).
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/decode_query.cuh"
#include "sm90/decode_tile.cuh"
#include "uq/core/sequence_rules.hpp"

#include <cstdint>

namespace uq::sm90 {
namespace decode_detail {

// Sequence b's query tokens: rows first .. first + n - 1 of q, out and lse; n < 0 for a
// malformed query_start_loc range.
struct SequenceQueries {
  int first;
  int n;
};

// The uniform form: b * query_len, query_len tokens. Else query_start_loc[b] and [b + 1], judged
// by malformed_start_range (with max_query_len): a malformed range is counted once per sequence
// by the CTA that `counts` (CTA 0 of KV head 0, as the bad lengths) and skipped: nothing of the
// sequence is read or written, its length neither used nor counted (as the generic kernel).
__device__ __forceinline__ SequenceQueries sequence_queries(const DecodeQueriesKernelArgs& a, unsigned bh, bool counts) {
  const unsigned hk = static_cast<unsigned>(a.num_kv_heads);
  const int b = static_cast<int>(bh / hk);
  if (a.query_start_loc == nullptr) return SequenceQueries{b * a.query_len, a.query_len};
  const std::int32_t* const e = a.query_start_loc + static_cast<std::int64_t>(b) * a.query_start_loc_stride;
  const int s = e[0], end = e[a.query_start_loc_stride];
  if (uq::impl::malformed_start_range<int>(s, end, b, a.num_seqs, a.num_query_tokens, a.max_query_len)) {
    if (counts && threadIdx.x == 0 && bh - static_cast<unsigned>(b) * hk == 0u)
      atomicAdd(&a.counters[kCounterBadStartLocs], 1ull);
    return SequenceQueries{0, -1};
  }
  return SequenceQueries{s, end - s};
}

// Query token (row of q, out and lse) and head within the KV head's group of row r.
template <int QG>
__device__ __forceinline__ int row_token(const SequenceQueries& q, int r) { return q.first + r / QG; }
template <int QG>
__device__ __forceinline__ int row_head(int r) { return r % QG; }

// The tokens row r sees (0 for the rows past the n QG in use).
template <int QG>
__device__ __forceinline__ int row_limit(const SequenceQueries& q, int L, int r) {
  return r < q.n * QG ? uq::impl::visible_tokens<int>(L, q.n, r / QG) : 0;
}

// Whether partition p writes the non-finite state (NaN) for a row whose q is non-finite, as the
// generic kernel does (spec §5.9: NaN or the empty state where the partition sees none of the
// row's tokens): partition 0 always, another where it holds a token the row sees.
__device__ __forceinline__ bool holds_row(int p, int limit) {
  return p == 0 || p < static_cast<int>(uq::impl::decode_tile_groups(static_cast<unsigned>(limit)));
}

// Where row r's partial row and its l and m go: partial rows [T][num_kv_heads][P][QG], l and m
// at partial_lm_index with bh = t num_kv_heads + h (the reducer reads them as T one-token rows).
template <int QG>
__device__ __forceinline__ std::int64_t row_bh(const DecodeKernelArgs& a, const SequenceQueries& q, int h, int r) {
  return static_cast<std::int64_t>(row_token<QG>(q, r)) * a.num_kv_heads + h;
}
template <int QG>
__device__ __forceinline__ std::int64_t row_partial(const DecodeKernelArgs& a, const SequenceQueries& q, const Partition& w,
                                                    int r) {
  return (row_bh<QG>(a, q, w.h, r) * a.partitions + w.p) * QG + row_head<QG>(r);
}
template <int QG>
__device__ __forceinline__ std::int64_t row_lm(const DecodeKernelArgs& a, const SequenceQueries& q, const Partition& w, int r) {
  return partial_lm_index(row_bh<QG>(a, q, w.h, r), row_head<QG>(r), w.p, a.partitions, QG);
}

// The query rows as stage_query stages the one-token rows (decode_query.cuh): row r < n QG is
// query token r / QG, head h QG + r % QG; the other rows of N are zeros with qbad 0.
template <int QG, int N>
__device__ __forceinline__ void stage_query_rows(const DecodeKernelArgs& a, const SequenceQueries& q, int h,
                                                 unsigned char* qs, unsigned char* qbad, int first, int warp, int lane) {
  if (warp < first) return;
  const int live = q.n * QG;
  for (int r = warp - first; r < N; r += 4 - first) {
    std::uint32_t even = 0u, odd = 0u;
    if (r < live) {
      std::uint32_t raw[8];
      const bool bad = load_query_row(a, row_token<QG>(q, r), h * QG + row_head<QG>(r), lane, raw);
      if (lane == 0) qbad[r] = bad ? 1 : 0;
      if (!bad) {
        const uint2 w = q8_words(a, raw, lane);
        even = w.x;
        odd = w.y;
      }
    } else if (lane == 0) {
      qbad[r] = 0;
    }
    store_q8_row<N>(qs, r, lane, even, odd);
  }
}

// A partition that holds none of the sequence's tokens (as empty_partition, decode_kernel.cuh,
// per query token): l = 0, m = -inf for every row in use (or, with P = 1, out = 0 and lse =
// -inf); partition 0 reads q to find and count the non-finite rows, which give NaN.
template <int QG>
__device__ void empty_queries_partition(const DecodeKernelArgs& a, const Partition& w, const SequenceQueries& q,
                                        unsigned char* qbad) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int live = q.n * QG;
  if (w.p == 0) {
    for (int r = warp; r < live; r += 4) {
      std::uint32_t raw[8];
      const bool bad = load_query_row(a, row_token<QG>(q, r), w.h * QG + row_head<QG>(r), lane, raw);
      if (lane == 0) {
        qbad[r] = bad ? 1 : 0;
        if (bad) atomicAdd(&a.counters[kCounterNonfiniteInputs], 1ull);
      }
    }
    __syncthreads();
  }
  if (a.flags & kWriteOut) {  // P = 1: this is partition 0
    for (int i = tid; i < live * kHeadDim; i += kThreads) {
      const int r = i / kHeadDim, d = i % kHeadDim;
      a.out[static_cast<std::int64_t>(row_token<QG>(q, r)) * a.out_stride_seq +
            static_cast<std::int64_t>(w.h * QG + row_head<QG>(r)) * a.out_stride_head + d * a.out_stride_dim] =
          qbad[r] ? kBf16Nan : 0;
    }
    if (a.lse != nullptr && tid < live)
      a.lse[static_cast<std::int64_t>(row_token<QG>(q, tid)) * a.lse_stride_seq +
            static_cast<std::int64_t>(w.h * QG + row_head<QG>(tid)) * a.lse_stride_head] = qbad[tid] ? quiet_nan() : neg_inf();
  } else if (tid < live) {
    const bool bad = w.p == 0 && qbad[tid];
    const std::int64_t at = row_lm<QG>(a, q, w, tid);
    a.partial_l[at] = bad ? quiet_nan() : 0.0f;
    a.partial_m[at] = bad ? quiet_nan() : neg_inf();
  }
}

}  // namespace decode_detail
}  // namespace uq::sm90
