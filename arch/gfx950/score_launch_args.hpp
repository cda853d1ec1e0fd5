// Host side of both scorer launchers (the HIP one in score.hip and the emulated one in
// score_emulated.hpp): checks a launch description and turns it into the kernel's argument
// struct and grid. Everything the kernel's buffer resources need is computed here: the byte
// ranges (each below 2^31, so that the masked offset 0x80000000 is always out of range and
// 32-bit offsets reach every element) and the flags.
#pragma once

#include "gfx950/launch_score.hpp"
#include "gfx950/score_args.hpp"
#include "uq/error.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace uq::gfx950 {

static_assert(scorer::kCounterBadBlockIds == static_cast<int>(uq::Counter::bad_block_ids) &&
                  scorer::kCounterNegativeSeqLens == static_cast<int>(uq::Counter::negative_seq_lens) &&
                  scorer::kCounterLongSeqLens == static_cast<int>(uq::Counter::long_seq_lens),
              "score_args.hpp counter indices must match uq::Counter");

// The 1-D grid of workgroups (0 = nothing to launch).
inline std::uint32_t score_grid(const ScoreLaunch& l) {
  if (l.num_reqs <= 0 || l.max_blocks <= 0) return 0;  // no block to score (as the generic path)
  return static_cast<std::uint32_t>(score_chunks(l.num_reqs, l.knobs)) * static_cast<std::uint32_t>(l.knobs.splits);
}

namespace score_launch_detail {

constexpr std::int64_t kMaxRange = std::int64_t{1} << 31;  // exclusive bound of a byte range
// Lengths are clamped to max_blocks * 128 and handled as int32 (with a block's last token).
constexpr std::int64_t kMaxBlocks = (std::int64_t{1} << 24) - 1;

inline void require(bool ok, const char* arg, const std::string& expected, const std::string& got) {
  if (!ok) throw uq::Error("uq::gfx950::launch_score", arg, expected, got);
}
inline std::string str(std::int64_t v) { return std::to_string(v); }

inline bool aligned(const void* p, std::uintptr_t n) { return reinterpret_cast<std::uintptr_t>(p) % n == 0; }

// Byte span of an array of `bytes`-sized elements with extents n[i] and strides s[i]
// (elements), from its first element to the end of its last; 0 when empty.
inline std::int64_t span_bytes(std::initializer_list<std::int64_t> n, std::initializer_list<std::int64_t> s,
                               std::int64_t bytes) {
  std::int64_t last = 0;
  auto si = s.begin();
  for (std::int64_t e : n) {
    if (e <= 0) return 0;
    // Saturate rather than overflow: anything past 2^31 is rejected anyway.
    const std::int64_t step = (e - 1) * *si++;
    last = (step > kMaxRange || last > kMaxRange) ? 2 * kMaxRange : last + step;
  }
  return (last + 1) * bytes;
}

// A stride as the kernel holds it: 32 bits, 0 where the extent is 1 (never multiplied by
// anything but 0 there).
inline std::uint32_t stride32(std::int64_t extent, std::int64_t stride) {
  return extent > 1 ? static_cast<std::uint32_t>(stride) : 0u;
}

}  // namespace score_launch_detail

inline scorer::ScoreKernelArgs make_score_kernel_args(const ScoreLaunch& l) {
  using namespace score_launch_detail;
  using namespace scorer;
  require(l.num_reqs >= 0, "num_reqs", ">= 0", str(l.num_reqs));
  require(l.heads == 1 || l.heads == 2 || l.heads == 4, "heads", "1, 2 or 4", str(l.heads));
  require(l.query_len >= 1 && static_cast<std::int64_t>(l.query_len) * l.heads <= kMaxColumns, "query_len",
          ">= 1 with heads * query_len <= 32 (heads = " + str(l.heads) + ")", str(l.query_len));
  require(l.init_blocks >= 0, "init_blocks", ">= 0", str(l.init_blocks));
  require(l.local_blocks >= 0, "local_blocks", ">= 0", str(l.local_blocks));
  require(l.max_blocks >= 0 && l.max_blocks <= kMaxBlocks, "max_blocks", "0 .. 2^24 - 1", str(l.max_blocks));
  require(l.num_blocks >= 0, "num_blocks", ">= 0", str(l.num_blocks));

  const ScoreKnobs& k = l.knobs;
  const int padded = padded_columns(l.query_len * l.heads);
  require(k.chunk >= 1 && k.chunk <= chunk_max(padded), "knobs.chunk",
          "1 .. " + str(chunk_max(padded)) + " (the chunk's Q rows fit LDS)", str(k.chunk));
  require(k.splits >= 1, "knobs.splits", ">= 1", str(k.splits));
  require(k.unit >= 1 && (!k.buffered || k.unit <= kUnitMax), "knobs.unit",
          k.buffered ? "1 .. 16 (buffered)" : ">= 1", str(k.unit));
  require(!(k.buffered && k.per_wave), "knobs.buffered", "false when knobs.per_wave (per-wave units store directly)",
          "true");
  const std::int64_t grid = static_cast<std::int64_t>(score_chunks(l.num_reqs, k)) * k.splits;
  require(grid <= 0x7FFFFFFF, "knobs.splits", "ceil(num_reqs / chunk) * splits <= 2^31 - 1", str(grid));
  // Positions are int32 in the kernel: the first unit past the end must still be one.
  const std::int64_t stride = static_cast<std::int64_t>(k.splits) * (k.per_wave ? kWaves : 1) * k.unit;
  require(stride + l.max_blocks <= 0x7FFFFFFF, "knobs", "splits * (per_wave ? 4 : 1) * unit + max_blocks <= 2^31 - 1",
          str(stride + l.max_blocks));

  const std::int64_t rows = static_cast<std::int64_t>(l.num_reqs) * l.query_len;
  const bool work = score_grid(l) > 0;
  std::int64_t q_bytes = 0, scores_bytes = 0, tables_bytes = 0, lens_bytes = 0;
  if (work) {
    require(l.q_stride_row >= 0 && l.q_stride_head >= 0 && l.q_stride_dim >= 0, "q strides", "non-negative",
            str(l.q_stride_row) + ", " + str(l.q_stride_head) + ", " + str(l.q_stride_dim));
    q_bytes = span_bytes({rows, l.heads, kDim}, {l.q_stride_row, l.q_stride_head, l.q_stride_dim}, 1);
    require(q_bytes < kMaxRange, "q", "a span below 2^31 bytes", str(q_bytes));
    require(l.scores_stride_head >= 0 && l.scores_stride_row >= 0 && l.scores_stride_block >= 0, "scores strides",
            "non-negative",
            str(l.scores_stride_head) + ", " + str(l.scores_stride_row) + ", " + str(l.scores_stride_block));
    scores_bytes = span_bytes({l.heads, rows, l.max_blocks},
                              {l.scores_stride_head, l.scores_stride_row, l.scores_stride_block}, 4);
    require(scores_bytes < kMaxRange, "scores", "a span (over b < max_blocks) below 2^31 bytes", str(scores_bytes));
    require(aligned(l.scores, 4), "scores", "a 4-byte aligned base", "an unaligned pointer");
    require(l.table_stride_req >= 0 && l.table_stride_block >= 0, "block_tables strides", "non-negative",
            str(l.table_stride_req) + ", " + str(l.table_stride_block));
    tables_bytes = span_bytes({l.num_reqs, l.max_blocks}, {l.table_stride_req, l.table_stride_block}, 4);
    require(tables_bytes < kMaxRange, "block_tables", "a span below 2^31 bytes", str(tables_bytes));
    require(aligned(l.block_tables, 4), "block_tables", "a 4-byte aligned base", "an unaligned pointer");
    require(l.seq_lens_stride >= 0, "seq_lens stride", ">= 0", str(l.seq_lens_stride));
    lens_bytes = span_bytes({l.num_reqs}, {l.seq_lens_stride}, 4);
    require(lens_bytes < kMaxRange, "seq_lens", "a span below 2^31 bytes", str(lens_bytes));
    require(aligned(l.seq_lens, 4), "seq_lens", "a 4-byte aligned base", "an unaligned pointer");
    // Dword loads ignore the two low address bits: pages must start 4-aligned.
    require(l.num_blocks == 0 || aligned(l.index_cache, 4), "index_cache", "a 4-byte aligned base",
            "an unaligned pointer");
    require(l.dequant_table != nullptr && aligned(l.dequant_table, 4), "dequant_table",
            "the 2048-byte table, 4-byte aligned", l.dequant_table ? "an unaligned pointer" : "nullptr");
    require(l.counters != nullptr && aligned(l.counters, 8), "counters", "uq::kNumCounters 8-byte aligned counters",
            l.counters ? "an unaligned pointer" : "nullptr");
  }

  ScoreKernelArgs a{};
  a.scores = l.scores;
  a.scores_stride_head = stride32(l.heads, l.scores_stride_head);
  a.scores_stride_row = stride32(rows, l.scores_stride_row);
  a.scores_stride_block = stride32(l.max_blocks, l.scores_stride_block);
  a.scores_bytes = static_cast<std::uint32_t>(scores_bytes);
  a.counters = l.counters;
  a.q = l.q;
  a.q_stride_row = stride32(rows, l.q_stride_row);
  a.q_stride_head = stride32(l.heads, l.q_stride_head);
  a.q_stride_dim = stride32(kDim, l.q_stride_dim);
  a.q_bytes = static_cast<std::uint32_t>(q_bytes);
  a.cache = l.index_cache;
  a.page_limit = static_cast<std::int32_t>(l.num_blocks < 0x7FFFFFFF ? l.num_blocks : 0x7FFFFFFF);
  a.table = l.dequant_table;
  a.block_tables = l.block_tables;
  a.table_stride_req = stride32(l.num_reqs, l.table_stride_req);
  a.table_stride_block = stride32(l.max_blocks, l.table_stride_block);
  a.tables_bytes = static_cast<std::uint32_t>(tables_bytes);
  a.seq_lens = l.seq_lens;
  a.seq_lens_stride = stride32(l.num_reqs, l.seq_lens_stride);
  a.seq_lens_bytes = static_cast<std::uint32_t>(lens_bytes);
  a.num_reqs = l.num_reqs;
  a.query_len = l.query_len;
  a.heads_log2 = l.heads == 1 ? 0 : (l.heads == 2 ? 1 : 2);
  a.max_blocks = l.max_blocks;
  a.init_blocks = l.init_blocks;
  a.local_blocks = l.local_blocks;
  a.chunk = k.chunk;
  a.chunks = score_chunks(l.num_reqs, k);
  a.splits = k.splits;
  a.per_wave = k.per_wave ? 1 : 0;
  a.unit = k.unit;
  // 16-byte chunks of a q row load as one dwordx4 when each starts 4-byte aligned.
  const bool vector_q = l.q_stride_dim == 1 && aligned(l.q, 4) && (rows <= 1 || l.q_stride_row % 4 == 0) &&
                        (l.heads == 1 || l.q_stride_head % 4 == 0);
  a.flags = vector_q ? scorer::kQVectorLoads : 0u;
  return a;
}

// Check and launch in one (tests; the dispatch keeps the arguments it checked). Defined only
// where the HIP launcher is linked (not in the emulator's builds).
inline void launch_score(const ScoreLaunch& l) { launch_score(l, make_score_kernel_args(l)); }

}  // namespace uq::gfx950
