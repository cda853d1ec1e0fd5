// The shape words of each array argument, written once for the error messages of the free
// functions and of the plans and writers.
#pragma once

namespace uqpy {
namespace shape {

inline constexpr const char* kQ = "[num_seqs, num_q_heads, 256]";  // query tokens instead of num_seqs with several each
inline constexpr const char* kKvCache = "[num_blocks, block_size, num_kv_heads, slot_bytes]";
inline constexpr const char* kBlockTables = "[num_seqs, max_blocks_per_seq]";
inline constexpr const char* kSeqLens = "[num_seqs]";
inline constexpr const char* kLse = "[num_seqs, num_q_heads]";
inline constexpr const char* kQueryStartLoc = "[num_seqs + 1]";
inline constexpr const char* kKv = "[num_tokens, num_kv_heads, 256]";
inline constexpr const char* kSlots = "[num_tokens]";
inline constexpr const char* kIndexKeys = "[num_tokens, 128]";
inline constexpr const char* kIndexCache = "[num_blocks, 9216]";
inline constexpr const char* kScoreQ = "[num_reqs * query_len, heads, 128]";
inline constexpr const char* kScoreTables = "[num_reqs, max_blocks]";
inline constexpr const char* kReqLens = "[num_reqs]";
inline constexpr const char* kScores = "[heads, num_reqs * query_len, S]";
inline constexpr const char* kSelected = "[heads, num_reqs * query_len, k]";
inline constexpr const char* kWorkspace = "[workspace_bytes]";

}  // namespace shape

inline constexpr const char* kInt32 = "int32";
inline constexpr const char* kSlotTypes = "int64 or int32";
inline constexpr const char* kUint8 = "uint8";
inline constexpr const char* kFloat32 = "float32";

}  // namespace uqpy
