// The plain-C++ description of an index-scorer launch (the seam's launch type for the scorer,
// uq/impl/tuned_path.hpp) and its construction from the Kokkos views and the plan's internals.
// No Kokkos, HIP or CUDA types: pointers are device pointers, strides are in elements, `stream`
// is the execution space's native stream as void*. A path's launcher takes ScoreLaunchOf<Knobs>,
// the description with its own launch-knob struct (each arch's score_knobs.hpp), which the path
// chooses from the shape and compute_units (never from the lengths: a captured graph keeps its
// grid). The conversion is duck-typed on uq's internal structs (IndexCacheAddressing,
// ScoreParams).
#pragma once

#include <cstdint>

namespace uq {
namespace impl {

// uq::score's arguments (spec nvfp4-index.md §4).
struct ScoreLaunch {
  static constexpr const char* kName = "index scorer";
  void* stream = nullptr;

  // scores: float [H][num_reqs * QL][S >= max_blocks], any non-negative strides; only the
  // entries (h, req * QL + r, b < nb_req) are written. counters: uq::kNumCounters device
  // counters, incremented (bad_block_ids, negative_seq_lens, long_seq_lens).
  float* scores = nullptr;
  std::int64_t scores_stride_head = 0, scores_stride_row = 0, scores_stride_block = 1;
  unsigned long long* counters = nullptr;

  // q: E4M3 bytes [num_reqs * QL][H][128], any non-negative strides.
  const std::uint8_t* q = nullptr;
  std::int64_t q_stride_row = 0, q_stride_head = 0, q_stride_dim = 1;

  // index_cache: uint8 [num_blocks][9216], pages dense; the base's alignment is the path's
  // to check (gfx950: 4-byte aligned; sm90: any, a 16-byte aligned base takes cp.async).
  const std::uint8_t* index_cache = nullptr;
  std::int64_t num_blocks = 0;
  // The format's dequantisation table (uq::nvfp4::table_byte, 2048 bytes, 4-byte aligned).
  const std::uint8_t* dequant_table = nullptr;

  // block_tables: int32 [num_reqs][max_blocks]; seq_lens: int32 [num_reqs].
  const std::int32_t* block_tables = nullptr;
  std::int64_t table_stride_req = 0, table_stride_block = 1;
  const std::int32_t* seq_lens = nullptr;
  std::int64_t seq_lens_stride = 1;

  int num_reqs = 0;
  int query_len = 1;   // QL >= 1
  int heads = 1;       // H in {1, 2, 4}, H * QL <= 32
  int max_blocks = 0;  // block_tables' extent(1)
  int init_blocks = 0;
  int local_blocks = 0;

  int compute_units = 0;  // the device's SMs / CUs (DeviceInfo::compute_units), for the grid
};

// A path's scorer launch: the description and the path's knobs.
template <class Knobs>
struct ScoreLaunchOf : ScoreLaunch {
  Knobs knobs;
};

template <class Knobs>
ScoreLaunchOf<Knobs> with_knobs(const ScoreLaunch& l, const Knobs& knobs) {
  ScoreLaunchOf<Knobs> k;
  static_cast<ScoreLaunch&>(k) = l;
  k.knobs = knobs;
  return k;
}

// A path's launch with the knobs its rule chooses from the shape and the device's compute units
// (choose: a path's choose_score_knobs(batch, max_blocks, query_len, heads, compute_units)).
template <class Knobs>
ScoreLaunchOf<Knobs> with_chosen_knobs(const ScoreLaunch& l,
                                       Knobs (*choose)(int batch, int max_blocks, int query_len, int heads, int units)) {
  return with_knobs(l, choose(l.num_reqs, l.max_blocks, l.query_len, l.heads, l.compute_units));
}

// q: [num_reqs * QL, H, 128] uint8 (any layout); cache: uq::impl::IndexCacheAddressing;
// tables: [num_reqs, max_blocks] int32; lens: [num_reqs] int32; scores: [H, num_reqs * QL, S]
// float (any layout); table: the dequantisation table view (2048 bytes); counters: the
// status counter view; params: uq::impl::ScoreParams; compute_units: the device's.
template <class Q, class Cache, class Tables, class Lens, class Out, class Table, class Counters, class Params>
ScoreLaunch make_score_launch(const Q& q, const Cache& cache, const Tables& tables, const Lens& lens, const Out& scores,
                              const Table& table, const Counters& counters, const Params& params, std::int64_t num_reqs,
                              int compute_units = 0, void* stream = nullptr) {
  static_assert(sizeof(*q.data()) == 1 && sizeof(*table.data()) == 1, "q and the table are bytes");
  static_assert(sizeof(*scores.data()) == 4 && sizeof(*tables.data()) == 4 && sizeof(*lens.data()) == 4,
                "float scores, int32 tables and lengths");
  ScoreLaunch l;
  l.stream = stream;
  l.scores = scores.data();
  l.scores_stride_head = static_cast<std::int64_t>(scores.stride(0));
  l.scores_stride_row = static_cast<std::int64_t>(scores.stride(1));
  l.scores_stride_block = static_cast<std::int64_t>(scores.stride(2));
  l.counters = counters.data();
  l.q = reinterpret_cast<const std::uint8_t*>(q.data());
  l.q_stride_row = static_cast<std::int64_t>(q.stride(0));
  l.q_stride_head = static_cast<std::int64_t>(q.stride(1));
  l.q_stride_dim = static_cast<std::int64_t>(q.stride(2));
  l.index_cache = cache.base;
  l.num_blocks = cache.num_blocks;
  l.dequant_table = reinterpret_cast<const std::uint8_t*>(table.data());
  l.block_tables = reinterpret_cast<const std::int32_t*>(tables.data());
  l.table_stride_req = static_cast<std::int64_t>(tables.stride(0));
  l.table_stride_block = static_cast<std::int64_t>(tables.stride(1));
  l.seq_lens = reinterpret_cast<const std::int32_t*>(lens.data());
  l.seq_lens_stride = static_cast<std::int64_t>(lens.stride(0));
  l.num_reqs = static_cast<int>(num_reqs);
  l.query_len = params.query_len;
  l.heads = params.heads;
  l.max_blocks = params.max_blocks;
  l.init_blocks = params.init_blocks;
  l.local_blocks = params.local_blocks;
  l.compute_units = compute_units;
  return l;
}

}  // namespace impl
}  // namespace uq
