// Launcher of the gfx950 NVFP4 index scorer, in plain C++ (no HIP types): what
// src/uq/impl/score_spec.hpp calls for Path::Gfx950 on a Kokkos HIP execution space. It is
// defined in score.hip (library uq_gfx950) and launches on `stream`, the execution space's
// hipStream_t passed as void*. Pointers are device pointers; strides are in elements. It
// throws uq::Error for arguments the kernel cannot address (naming the argument) and when
// the HIP launch itself fails. score_emulated.hpp has the same function for the CPU emulator.
#pragma once

#include "gfx950/score_knobs.hpp"

#include <cstdint>

namespace uq::gfx950 {

// uq::score's arguments (spec nvfp4-index.md §4) and the knobs (choose_score_knobs).
struct ScoreLaunch {
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

  // index_cache: uint8 [num_blocks][9216], pages dense, 4-byte aligned base.
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

  ScoreKnobs knobs;
};

void launch_score(const ScoreLaunch& args);

}  // namespace uq::gfx950
