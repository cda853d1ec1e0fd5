// The plain-C++ descriptions of a decode launch (partition kernel, reducer): the seam's launch
// types for decode (uq/impl/tuned_path.hpp; a new decode variant is a new type, never a new
// field here), which every tuned path's launcher takes (arch/gfx950, arch/sm90, the gfx950
// emulator), and their construction from the Kokkos views and the plan's internals; the checks every path needs are
// core/decode_launch_checks.hpp. Only <cstdint>, so kernel argument structs can embed these. No Kokkos, HIP
// or CUDA types: pointers are device pointers, strides are in elements, `stream` is the
// execution space's native stream as void*. The conversion is duck-typed on uq's internal
// structs (CacheAddressing, DecodePartials, DecodeParams) so that the arch libraries need not
// include their headers.
#pragma once

#include "uq/core/ultraquant_format.hpp"

#include <cstdint>

namespace uq {
namespace impl {

// The partition kernel's launch: it writes one partial row per (sequence, KV head, partition, query).
struct DecodePartitionsLaunch {
  static constexpr const char* kName = "decode partitions";
  void* stream = nullptr;

  // Outputs: [num_seqs][num_kv_heads][partitions][qg] rows (dense), each with 256 bf16
  // (partial_out), its l and its m; and the uq::kNumCounters status counters.
  std::uint16_t* partial_out = nullptr;
  float* partial_l = nullptr;
  float* partial_m = nullptr;
  unsigned long long* counters = nullptr;

  // q: bf16 [num_seqs][num_kv_heads * qg][256], any non-negative strides.
  const std::uint16_t* q = nullptr;
  std::int64_t q_stride_seq = 0, q_stride_head = 0, q_stride_dim = 1;
  bool q_rotated = false;  // q holds WHT(q): only the E4M3 rounding is applied

  // kv_cache: uint8 [num_blocks][block_size][num_kv_heads][slot_bytes], dense in the last
  // three dimensions; block_stride in bytes (>= block_size * num_kv_heads * slot_bytes).
  const std::uint8_t* cache = nullptr;
  std::int64_t num_blocks = 0;
  std::int64_t block_stride = 0;
  int block_size = 0;
  int num_kv_heads = 0;
  int slot_bytes = 0;

  // block_tables: int32 [num_seqs][max_blocks_per_seq]; seq_lens: int32 [num_seqs].
  const std::int32_t* block_tables = nullptr;
  std::int64_t table_stride_seq = 0, table_stride_block = 1;
  int max_blocks_per_seq = 0;
  const std::int32_t* seq_lens = nullptr;
  std::int64_t seq_lens_stride = 1;

  int num_seqs = 0;
  int qg = 0;          // 6, 8 or 16
  int partitions = 0;  // P >= 1
  int tgpp = 0;        // tile-groups per partition; P * TGPP * 256 >= max_blocks_per_seq * block_size
  float scale = 0.0f;  // softmax scale

  // P = 1 (spec ultraquant.md §5, revision 2): the partition kernel writes out = bf16(acc * (1/l))
  // itself (0 for an empty sequence) and no reducer runs; partial_* are then not touched.
  // out: bf16 [num_seqs][num_kv_heads * qg][256], any non-negative strides. Unused when P > 1.
  // The kernel writes out exactly when out != nullptr (the host sets it only with P = 1); with
  // out == nullptr it writes partial rows at any P, P = 1 included (the two stages run
  // separately: DecodePlan::run_partitions, then run_reduce).
  std::uint16_t* out = nullptr;
  std::int64_t out_stride_seq = 0, out_stride_head = 0, out_stride_dim = 1;
  // Optional lse [num_seqs][num_kv_heads * qg] float32 (natural log of the sum of exp(s) over the
  // sequence's tokens; -inf for an empty sequence, NaN for a non-finite query); nullptr: not
  // wanted. Written by the partition kernel when P = 1, by the reducer otherwise.
  float* lse = nullptr;
  std::int64_t lse_stride_seq = 0, lse_stride_head = 1;
};

// Decode with several query tokens per sequence (spec ultraquant.md §5.9): the partition
// kernel's launch over query tokens. A new launch type, not new fields of the one above, so that
// no tuned path's partition kernel takes it until that path implements it (uq/impl/tuned_path.hpp).
// The inherited fields keep their meaning, with rows of query tokens where they had sequences:
// q, out and lse have num_query_tokens (T) rows; the partial rows are
// [T][num_kv_heads][partitions][qg]; the grid is still one team per (sequence, KV head,
// partition), whatever the n_b; num_seqs, block_tables and seq_lens are per sequence. Query token
// j of sequence b (row query_start_loc[b] + j) sees the first visible_tokens(L, n_b, j) tokens
// (core/sequence_rules.hpp); a malformed range (malformed_start_range, with max_query_len) is
// skipped and counted in Counter::bad_start_locs.
struct DecodeQueriesLaunch : DecodePartitionsLaunch {
  static constexpr const char* kName = "decode queries";
  // int32 [num_seqs + 1]; nullptr: the uniform form, sequence b's rows b * query_len .. + query_len - 1.
  const std::int32_t* query_start_loc = nullptr;
  std::int64_t query_start_loc_stride = 1;
  int query_len = 1;         // the uniform form's query tokens per sequence
  int max_query_len = 1;     // the plan's largest n_b (spec: at most 16)
  int num_query_tokens = 0;  // T
};

// Revision-2 rules every path follows (spec ultraquant.md §5-6), in one place:
//  * a partition that sees no token writes only l = 0, m = -inf (no partial row, no cache or
//    table reads beyond what tells it it is empty);
//  * a query head whose bf16 q holds a NaN or an infinity (exponent field all ones) is
//    non-finite: its partitions write l = NaN, m = NaN and no partial row; partition 0 reads q
//    even when empty and counts it once in Counter::nonfinite_inputs; the reducer (or, with
//    P = 1, the partition kernel) writes an all-NaN out row and a NaN lse;
//  * the reducer reads partial_out only of partitions with l > 0, and gives NaN when any l is NaN.

// The reducer's launch: it reads the partition kernel's outputs (same num_kv_heads, qg,
// partitions) and writes out.
struct DecodeReduceLaunch {
  static constexpr const char* kName = "decode reducer";
  void* stream = nullptr;
  const std::uint16_t* partial_out = nullptr;
  const float* partial_l = nullptr;
  const float* partial_m = nullptr;
  // out: bf16 [num_seqs][num_kv_heads * qg][256], any non-negative strides.
  std::uint16_t* out = nullptr;
  std::int64_t out_stride_seq = 0, out_stride_head = 0, out_stride_dim = 1;
  int num_seqs = 0;
  int num_kv_heads = 0;
  int qg = 0;
  int partitions = 0;
  // Optional lse, as in DecodePartitionsLaunch (nullptr: not wanted).
  float* lse = nullptr;
  std::int64_t lse_stride_seq = 0, lse_stride_head = 1;
};

// q: [num_seqs, num_q_heads, 256] bf16 (any layout); cache: uq::impl::CacheAddressing;
// tables: [num_seqs, max_blocks] int32; lens: [num_seqs] int32; partials:
// uq::impl::DecodePartials; counters: the status counter view; params: uq::impl::DecodeParams.
template <class Q, class Cache, class Tables, class Lens, class Partials, class Counters, class Params>
DecodePartitionsLaunch decode_partitions_launch(const Q& q, const Cache& cache, const Tables& tables,
                                                const Lens& lens, const Partials& partials,
                                                const Counters& counters, const Params& params, int num_seqs,
                                                void* stream) {
  static_assert(sizeof(*q.data()) == 2 && sizeof(*partials.out.data()) == 2, "bf16 views hold 16-bit values");
  DecodePartitionsLaunch l;
  l.stream = stream;
  l.partial_out = reinterpret_cast<std::uint16_t*>(partials.out.data());
  l.partial_l = partials.l.data();
  l.partial_m = partials.m.data();
  l.counters = counters.data();
  l.q = reinterpret_cast<const std::uint16_t*>(q.data());
  l.q_stride_seq = static_cast<std::int64_t>(q.stride(0));
  l.q_stride_head = static_cast<std::int64_t>(q.stride(1));
  l.q_stride_dim = static_cast<std::int64_t>(q.stride(2));
  l.q_rotated = params.q_rotated;
  l.cache = cache.base;
  l.num_blocks = cache.num_blocks;
  l.block_stride = cache.block_stride;
  l.block_size = cache.block_size;
  l.num_kv_heads = params.num_kv_heads;
  l.slot_bytes = cache.slot_bytes;
  l.block_tables = tables.data();
  l.table_stride_seq = static_cast<std::int64_t>(tables.stride(0));
  l.table_stride_block = static_cast<std::int64_t>(tables.stride(1));
  l.max_blocks_per_seq = params.max_blocks_per_seq;
  l.seq_lens = lens.data();
  l.seq_lens_stride = static_cast<std::int64_t>(lens.stride(0));
  l.num_seqs = num_seqs;
  l.qg = params.qg;
  l.partitions = params.partitions;
  l.tgpp = params.tgpp;
  l.scale = params.scale;
  return l;
}

// The launch of a decode with several query tokens per sequence: the partition launch's fields
// (q, out, lse and the partial rows then have num_query_tokens rows), and query_start_loc
// ([num_seqs + 1] int32 view, data() == nullptr for the uniform form of query_len tokens each).
template <class Q, class Cache, class Tables, class Lens, class Starts, class Partials, class Counters, class Params>
DecodeQueriesLaunch decode_queries_launch(const Q& q, const Cache& cache, const Tables& tables, const Lens& lens,
                                          const Starts& query_start_loc, const Partials& partials,
                                          const Counters& counters, const Params& params, int num_seqs,
                                          void* stream) {
  DecodeQueriesLaunch l;
  static_cast<DecodePartitionsLaunch&>(l) =
      decode_partitions_launch(q, cache, tables, lens, partials, counters, params, num_seqs, stream);
  l.query_start_loc = query_start_loc.data();
  if (l.query_start_loc != nullptr) l.query_start_loc_stride = static_cast<std::int64_t>(query_start_loc.stride(0));
  l.query_len = params.query_len;
  l.max_query_len = params.max_query_len;
  l.num_query_tokens = static_cast<int>(q.extent(0));
  return l;
}

// The P = 1 outputs of a partition launch: the kernel then writes out (and lse, when lse.data()
// is not null) instead of partial rows. out: [num_seqs, num_q_heads, 256] bf16, lse:
// [num_seqs, num_q_heads] float (any layouts).
template <class Out, class Lse>
void set_direct_outputs(DecodePartitionsLaunch& l, const Out& out, const Lse& lse) {
  static_assert(sizeof(*out.data()) == 2, "bf16 views hold 16-bit values");
  l.out = reinterpret_cast<std::uint16_t*>(out.data());
  l.out_stride_seq = static_cast<std::int64_t>(out.stride(0));
  l.out_stride_head = static_cast<std::int64_t>(out.stride(1));
  l.out_stride_dim = static_cast<std::int64_t>(out.stride(2));
  l.lse = lse.data();
  if (l.lse != nullptr) {
    l.lse_stride_seq = static_cast<std::int64_t>(lse.stride(0));
    l.lse_stride_head = static_cast<std::int64_t>(lse.stride(1));
  }
}

// The reducer's optional lse output (lse.data() == nullptr: not wanted).
template <class Lse>
void set_reduce_lse(DecodeReduceLaunch& l, const Lse& lse) {
  l.lse = lse.data();
  if (l.lse != nullptr) {
    l.lse_stride_seq = static_cast<std::int64_t>(lse.stride(0));
    l.lse_stride_head = static_cast<std::int64_t>(lse.stride(1));
  }
}

// partials as above; out: [num_seqs, num_q_heads, 256] bf16 (any layout).
template <class Partials, class Out, class Params>
DecodeReduceLaunch decode_reduce_launch(const Partials& partials, const Out& out, const Params& params, int num_seqs,
                                        void* stream) {
  static_assert(sizeof(*out.data()) == 2, "bf16 views hold 16-bit values");
  DecodeReduceLaunch l;
  l.stream = stream;
  l.partial_out = reinterpret_cast<const std::uint16_t*>(partials.out.data());
  l.partial_l = partials.l.data();
  l.partial_m = partials.m.data();
  l.out = reinterpret_cast<std::uint16_t*>(out.data());
  l.out_stride_seq = static_cast<std::int64_t>(out.stride(0));
  l.out_stride_head = static_cast<std::int64_t>(out.stride(1));
  l.out_stride_dim = static_cast<std::int64_t>(out.stride(2));
  l.num_seqs = num_seqs;
  l.num_kv_heads = params.num_kv_heads;
  l.qg = params.qg;
  l.partitions = params.partitions;
  return l;
}

}  // namespace impl
}  // namespace uq
