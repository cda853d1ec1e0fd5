// NVFP4 index block scorer (nvfp4-index.md §4) with the decisions listed in uqref_nvfp4.hpp.
#include "uqref_formats.hpp"
#include "uqref_nvfp4.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace uqref {
namespace {

constexpr int kDim = 128;
constexpr int kBlk = 128;
constexpr std::int64_t kPageBytes = 9216;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// max over tokens t < count of the page of float(sum_d q[d] k̂[t][d]); -inf when count = 0.
float block_max(const std::vector<double>& keys, int count, const double* q) {
  float best = -std::numeric_limits<float>::infinity();
  for (int t = 0; t < count; ++t) {
    const double* k = &keys[static_cast<std::size_t>(t) * kDim];
    double dot = 0.0;
    for (int d = 0; d < kDim; ++d) dot += q[d] * k[d];  // each product exact in double
    best = std::fmax(best, static_cast<float>(dot));
  }
  return best;
}

}  // namespace

void nv_score(const ScoreInputs& in, float* scores, std::int64_t S) {
  const float kInit = 1e30f, kLocal = 1e29f;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const std::int64_t rows_total = static_cast<std::int64_t>(in.num_reqs) * in.query_len;
  std::vector<double> q(static_cast<std::size_t>(in.heads) * in.query_len * kDim);
  std::vector<double> keys(static_cast<std::size_t>(kBlk) * kDim);

  for (int req = 0; req < in.num_reqs; ++req) {
    const std::int64_t capacity = static_cast<std::int64_t>(in.max_blocks) * kBlk;
    const std::int64_t L = std::min<std::int64_t>(std::max<std::int32_t>(in.seq_lens[req], 0), capacity);
    const std::int64_t nb_req = ceil_div(L, kBlk);
    for (int h = 0; h < in.heads; ++h)
      for (int r = 0; r < in.query_len; ++r) {
        const std::int64_t row = static_cast<std::int64_t>(req) * in.query_len + r;
        const std::uint8_t* qp = in.q + row * in.q_stride_row + h * in.q_stride_head;
        double* qd = &q[(static_cast<std::size_t>(h) * in.query_len + r) * kDim];
        for (int d = 0; d < kDim; ++d) qd[d] = e4m3_value(qp[d]);
      }

    for (std::int64_t b = 0; b < nb_req; ++b) {
      const std::int32_t page_id = in.block_tables[static_cast<std::int64_t>(req) * in.max_blocks + b];
      const bool page_ok = page_id >= 0 && page_id < in.num_blocks;
      // The block's tokens, dequantised once and shared by every (head, row).
      int tokens_loaded = 0;
      for (int h = 0; h < in.heads; ++h)
        for (int r = 0; r < in.query_len; ++r) {
          const std::int64_t vis = std::max<std::int64_t>(L - in.query_len + r + 1, 0);
          const std::int64_t nb = ceil_div(vis, kBlk);
          float value;
          if (b >= nb) {
            value = kNegInf;
          } else if (b < in.init_blocks) {
            value = kInit;  // init wins over local
          } else if (b >= nb - in.local_blocks) {
            value = kLocal;
          } else if (!page_ok) {
            value = kNegInf;  // the block's tokens are absent
          } else {
            const int count = static_cast<int>(std::min<std::int64_t>(vis - b * kBlk, kBlk));
            if (tokens_loaded < count) {
              const std::uint8_t* page = in.cache + static_cast<std::int64_t>(page_id) * kPageBytes;
              for (int t = tokens_loaded; t < count; ++t)
                for (int d = 0; d < kDim; ++d)
                  keys[static_cast<std::size_t>(t) * kDim + d] = nv_dequant(page, t, d);
              tokens_loaded = count;
            }
            value = block_max(keys, count, &q[(static_cast<std::size_t>(h) * in.query_len + r) * kDim]);
          }
          const std::int64_t row = static_cast<std::int64_t>(req) * in.query_len + r;
          scores[(h * rows_total + row) * S + b] = value;
        }
    }
  }
}

}  // namespace uqref
