// Cross-lane rendezvous: ds_swizzle (spec §4.2), shuffles, readlane, ballot. EXEC is all
// ones by the emulator's rule, so every source lane is active.
#include <string>

#include "state.hpp"

namespace uq::emu::detail {
namespace {

struct Operand {
  std::uint32_t value;
  std::uint32_t arg;  // pattern, xor mask, source lane or lane index
};

std::uint32_t value_of(const Wave& w, std::uint32_t lane) {
  return static_cast<const Operand*>(w.operand[lane])->value;
}
std::uint32_t arg_of(const Wave& w, std::uint32_t lane) {
  return static_cast<const Operand*>(w.operand[lane])->arg;
}
void put(Wave& w, std::uint32_t lane, std::uint32_t v) {
  *static_cast<std::uint32_t*>(w.result[lane]) = v;
}

std::uint32_t bit_reverse5(std::uint32_t x) {
  std::uint32_t r = 0;
  for (int b = 0; b < 5; ++b) r |= ((x >> b) & 1u) << (4 - b);
  return r;
}

std::uint32_t popcount5(std::uint32_t x) {
  std::uint32_t n = 0;
  for (int b = 0; b < 5; ++b) n += (x >> b) & 1u;
  return n;
}

// Source lane of lane i for ds_swizzle offset `pattern`.
std::uint32_t swizzle_source(std::uint32_t i, std::uint32_t pattern) {
  const std::uint32_t offset = pattern & 0xFFFFu;
  if (offset < 0xC000u) {
    if ((offset & 0x8000u) == 0) {  // bitmask mode, per 32-lane half
      const std::uint32_t and_mask = offset & 31u, or_mask = (offset >> 5) & 31u,
                          xor_mask = (offset >> 10) & 31u;
      return ((((i & 31u) & and_mask) | or_mask) ^ xor_mask) | (i & 32u);
    }
    return (i & ~3u) + ((offset >> (2 * (i & 3u))) & 3u);  // quad-perm mode
  }
  if (offset < 0xE000u) {
    // Rotate mode. The spec's hypothesis (UNCONFIRMED): wrap within the 32-lane half, as
    // the ISA's own example shows, rather than the pseudo-code's carry into bit 5.
    const std::uint32_t mask = offset & 31u;
    std::uint32_t rot = (offset >> 5) & 31u;
    if (offset & 0x400u) rot = (32u - rot) & 31u;  // right rotate
    return (i & mask) | (((i & 31u) + rot) & 31u & ~mask) | (i & 32u);
  }
  const std::uint32_t mask = offset & 31u;  // FFT mode
  return (bit_reverse5(i & 31u) >> popcount5(mask)) | (i & mask) | (i & 32u);
}

void swizzle_compute(Wave& w) {
  const std::uint32_t pattern = arg_of(w, 0);
  for (std::uint32_t i = 0; i < kLanes; ++i) put(w, i, value_of(w, swizzle_source(i, pattern)));
}

void xor_compute(Wave& w) {
  const std::uint32_t mask = arg_of(w, 0);
  for (std::uint32_t i = 0; i < kLanes; ++i) put(w, i, value_of(w, i ^ mask));
}

void bpermute_compute(Wave& w) {
  for (std::uint32_t i = 0; i < kLanes; ++i) put(w, i, value_of(w, arg_of(w, i) & 63u));
}

void first_lane_compute(Wave& w) {
  const std::uint32_t v = value_of(w, 0);
  for (std::uint32_t i = 0; i < kLanes; ++i) put(w, i, v);
}

std::string nonuniform_lane_message(const Wave& w, std::uint32_t lane) {
  return "uq::emu: readlane at " + where(w.site) + ": the lane index must be wave-uniform (an "
         "SGPR), but lane 0 asks for lane " + std::to_string(arg_of(w, 0)) + " and lane " +
         std::to_string(lane) + " for lane " + std::to_string(arg_of(w, lane));
}

void readlane_compute(Wave& w) {
  const std::uint32_t source = arg_of(w, 0);
  for (std::uint32_t i = 1; i < kLanes; ++i) {
    if (arg_of(w, i) != source) fault(nonuniform_lane_message(w, i));
  }
  const std::uint32_t v = value_of(w, source & 63u);
  for (std::uint32_t i = 0; i < kLanes; ++i) put(w, i, v);
}

void ballot_compute(Wave& w) {
  std::uint64_t mask = 0;
  for (std::uint32_t i = 0; i < kLanes; ++i) {
    if (value_of(w, i) != 0) mask |= std::uint64_t{1} << i;
  }
  for (std::uint32_t i = 0; i < kLanes; ++i) *static_cast<std::uint64_t*>(w.result[i]) = mask;
}

std::uint32_t exchange(const char* op, Site at, Compute compute, std::uint32_t value,
                       std::uint32_t arg) {
  const Operand operand{value, arg};
  std::uint32_t result = 0;
  rendezvous(op, at, compute, &operand, &result);
  return result;
}

}  // namespace

std::uint32_t ds_swizzle(std::uint32_t v, std::uint32_t pattern, Site at) {
  return exchange("ds_swizzle_b32", at, &swizzle_compute, v, pattern);
}
std::uint32_t shfl_xor(std::uint32_t v, std::uint32_t mask, Site at) {
  return exchange("shfl_xor", at, &xor_compute, v, mask);
}
std::uint32_t shfl(std::uint32_t v, std::uint32_t src_lane, Site at) {
  return exchange("ds_bpermute_b32", at, &bpermute_compute, v, src_lane);
}
std::uint32_t readfirstlane(std::uint32_t v, Site at) {
  return exchange("v_readfirstlane_b32", at, &first_lane_compute, v, 0);
}
std::uint32_t readlane(std::uint32_t v, std::uint32_t lane, Site at) {
  return exchange("v_readlane_b32", at, &readlane_compute, v, lane);
}
std::uint64_t ballot(bool pred, Site at) {
  const Operand operand{pred ? 1u : 0u, 0};
  std::uint64_t result = 0;
  rendezvous("ballot", at, &ballot_compute, &operand, &result);
  return result;
}

}  // namespace uq::emu::detail
