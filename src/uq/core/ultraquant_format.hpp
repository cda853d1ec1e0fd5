// The UltraQuant MXFP4 slot format and the decode's work units (spec ultraquant.md §2, §5):
// the constants and shape rules every path shares. Kokkos-free (core/host_device.hpp).
#pragma once

#include "uq/core/host_device.hpp"

#include <cstdint>

namespace uq {
namespace ultraquant {

inline constexpr int kHeadDim = 256;
inline constexpr int kGroup = 32;                  // elements per UE8M0 scale
inline constexpr int kGroups = kHeadDim / kGroup;  // 8
inline constexpr int kKCodes = 0;                  // byte offsets inside a slot
inline constexpr int kKScales = 128;
inline constexpr int kVCodes = 136;
inline constexpr int kVScales = 264;
inline constexpr int kSlotContent = 272;           // minimum slot_bytes
inline constexpr float kScaleConstant = 0.156f;    // MSE-optimal c of the format

}  // namespace ultraquant

inline constexpr int kTileGroupTokens = 256;  // tokens per tile-group: the unit of a partition
inline constexpr int kTileTokens = 16;        // tokens per tile (the generic kernels' softmax step)
inline constexpr int kMaxPartitions = 4096;   // split-K partitions a decode may use
inline constexpr int kMaxDecodeQueryLen = 16;  // query tokens per sequence one decode may take (§5.9)

// The query group sizes and block sizes every decode path implements.
UQ_CORE_FN constexpr bool is_decode_qg(std::int64_t qg) { return qg == 6 || qg == 8 || qg == 16; }
UQ_CORE_FN constexpr bool is_decode_block_size(std::int64_t b) {
  return b == 16 || b == 32 || b == 64 || b == 128 || b == 256;
}

}  // namespace uq
