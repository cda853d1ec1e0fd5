// Top-k block selection (nvfp4-index.md §5) with the decisions listed in uqref_nvfp4.hpp.
#include "uqref_nvfp4.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace uqref {

void nv_select(const float* scores, std::int64_t S, const std::int32_t* seq_lens, int num_reqs,
               int query_len, int heads, int k, std::int32_t* out) {
  const std::int64_t rows_total = static_cast<std::int64_t>(num_reqs) * query_len;
  struct Candidate {
    float score;
    std::int32_t block;
  };
  std::vector<Candidate> cand;
  for (int h = 0; h < heads; ++h)
    for (std::int64_t row = 0; row < rows_total; ++row) {
      const int req = static_cast<int>(row / query_len);
      const int r = static_cast<int>(row % query_len);
      const std::int64_t L = std::max<std::int32_t>(seq_lens[req], 0);
      const std::int64_t vis = std::max<std::int64_t>(L - query_len + r + 1, 0);
      const std::int64_t nb = std::min<std::int64_t>((vis + 127) / 128, S);
      const float* srow = scores + (h * rows_total + row) * S;
      cand.clear();
      for (std::int64_t b = 0; b < nb; ++b) {
        const float s = std::isnan(srow[b]) ? -std::numeric_limits<float>::infinity() : srow[b];
        cand.push_back({s, static_cast<std::int32_t>(b)});
      }
      // Descending score, equal scores -> smaller block index (a strict weak order: no NaN).
      std::sort(cand.begin(), cand.end(), [](const Candidate& a, const Candidate& b) {
        if (a.score != b.score) return a.score > b.score;
        return a.block < b.block;
      });
      std::int32_t* orow = out + (h * rows_total + row) * k;
      for (int i = 0; i < k; ++i)
        orow[i] = (static_cast<std::size_t>(i) < cand.size()) ? cand[static_cast<std::size_t>(i)].block : -1;
    }
}

}  // namespace uqref
