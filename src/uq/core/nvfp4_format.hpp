// The NVFP4 index-key page layout and the scorer's sentinels (spec nvfp4-index.md §1-§4): the
// constants every path shares. Kokkos-free (core/host_device.hpp).
#pragma once

#include "uq/core/host_device.hpp"

namespace uq {
namespace nvfp4 {

inline constexpr int kHeadDim = 128;                        // index head dim D
inline constexpr int kGroup = 16;                           // elements per E4M3 scale
inline constexpr int kGroups = kHeadDim / kGroup;           // 8 scale bytes per token
inline constexpr int kBlockTokens = 128;                    // tokens per block (= page)
inline constexpr int kCodeBytesPerToken = kHeadDim / 2;     // 64: two E2M1 codes per byte
inline constexpr int kPageCodes = kBlockTokens * kCodeBytesPerToken;  // 8192: codes first
inline constexpr int kPageBytes = kPageCodes + kBlockTokens * kGroups; // 9216: then scales

// Page offsets of token t's code byte for dim d (low nibble = even dim) and of its
// scale byte for group g (dims 16g..16g+15).
UQ_CORE_FN constexpr int code_offset(int t, int d) { return t * kCodeBytesPerToken + d / 2; }
UQ_CORE_FN constexpr int scale_offset(int t, int g) { return kPageCodes + t * kGroups + g; }

// Sentinel scores of the always-kept blocks (spec §4).
inline constexpr float kInitScore = 1e30f;
inline constexpr float kLocalScore = 1e29f;

}  // namespace nvfp4
}  // namespace uq
