// One scorer problem in device memory, as plain pointers (no uq types), so that the harness
// can hand it to today's launcher and to the previous kernel's, which is compiled in its
// own translation unit with the uq namespace renamed (old_scorer.cu).
#pragma once

#include <cstdint>

namespace harness {

struct Problem {
  void* stream = nullptr;
  float* scores = nullptr;
  std::int64_t s_head = 0, s_row = 0, s_block = 1;
  unsigned long long* counters = nullptr;
  const std::uint8_t* q = nullptr;
  std::int64_t q_row = 0, q_head = 0, q_dim = 1;
  const std::uint8_t* cache = nullptr;
  std::int64_t num_blocks = 0;
  const std::uint8_t* table = nullptr;
  const std::int32_t* block_tables = nullptr;
  std::int64_t t_req = 0, t_block = 1;
  const std::int32_t* seq_lens = nullptr;
  int num_reqs = 0, query_len = 1, heads = 1, max_blocks = 0, init_blocks = 0, local_blocks = 0;
  int sm_count = 132;
  int span = 0;  // 0: the launcher's own choice
};

// The previous sm90 scorer (mma.sync, commit 023c211), old_scorer.cu.
void old_score(const Problem& p);

}  // namespace harness
