// The one-wave grid rule of the index scorers that stream whole spans of pages per team or CTA
// (the generic kernel, uq/impl/score_generic.hpp, and arch/sm90's, score_knobs.hpp): a pure
// function of the shape, never of the live lengths, so a captured graph keeps its grid.
// Plain C++, host only.
#pragma once

#include <cstdint>

namespace uq {
namespace impl {

// Blocks per span: a batch of reqs requests with max_blocks blocks each is split into as many
// spans as fill `slots` resident teams once, evenly over the requests (a batch larger than the
// slots gets one span per request). 1 when there are no blocks; arguments out of range are
// clamped.
constexpr std::int64_t one_wave_span(std::int64_t reqs, std::int64_t max_blocks, std::int64_t slots) {
  const std::int64_t r = reqs > 0 ? reqs : 1;
  if (max_blocks <= 0) return 1;
  std::int64_t per_req = slots / r;
  per_req = per_req < 1 ? 1 : (per_req > max_blocks ? max_blocks : per_req);
  return (max_blocks + per_req - 1) / per_req;
}

}  // namespace impl
}  // namespace uq
