// Kokkos views -> the gfx950 scorer's launch description (launch_score.hpp): what
// src/uq/impl/score_spec.hpp hands to the HIP launcher for Path::Gfx950, and what the
// emulated tests hand to the emulator's launcher, so both go through the same conversion.
// Duck-typed on uq's internal structs (IndexCacheAddressing, ScoreParams of src/uq/impl) so
// that this header does not depend on their headers. The knobs are left at their defaults:
// the caller chooses them (choose_score_knobs).
#pragma once

#include "gfx950/launch_score.hpp"

#include <cstdint>

namespace uq::gfx950 {

// q: [num_reqs * QL, H, 128] uint8 (any layout); cache: uq::impl::IndexCacheAddressing;
// tables: [num_reqs, max_blocks] int32; lens: [num_reqs] int32; scores: [H, num_reqs * QL, S]
// float (any layout); table: the dequantisation table view (2048 bytes); counters: the
// status counter view; params: uq::impl::ScoreParams.
template <class Q, class Cache, class Tables, class Lens, class Out, class Table, class Counters, class Params>
ScoreLaunch score_launch(const Q& q, const Cache& cache, const Tables& tables, const Lens& lens, const Out& scores,
                         const Table& table, const Counters& counters, const Params& params, std::int64_t num_reqs,
                         void* stream) {
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
  return l;
}

}  // namespace uq::gfx950
