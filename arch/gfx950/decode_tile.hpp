// The decode kernel's per-tile memory side: the sequence's length, where a 16-token tile lives
// (its block, found through the block table, as a buffer resource covering exactly that
// block), the global loads of its K and V bytes, and the status count of a bad block id.
//
// Block ids: one vector load fetches the table entries of 64 consecutive tiles of the
// partition, lane j holding tile j's (tiles of one block load the same entry); a tile's id is
// then a v_readlane of that register, so the whole partition's ids (up to 4 tile-groups) cost
// one memory round trip, taken once in the prologue instead of one per tile.
//
// Load lane maps (lane l, g = l >> 4, r = l & 15):
//  * K, straight into the scaled MFMA's A operand (docs/gfx950-isa.md §1.3, fp4): lane (g, r)
//    loads token r's code bytes 16g .. 16g+15 (dims 32g .. 32g+31, issue 0) and 64+16g ..
//    (issue 1), and token r's 8 K scale bytes, of which it uses byte 4i + g for issue i (the
//    scale of A row r, block g sits in lane 16g + r: the same lane).
//  * V, for the dequantisation into LDS: lane l = 4t + c loads token t's V code bytes 32c ..
//    32c+31 (dims 64c .. 64c+63, groups 2c and 2c+1) and the scale word holding those groups.
// A token past the sequence's length, or in a block whose id is bad, reads zeros (a masked
// offset, or a resource of 0 bytes), so no stale cache byte reaches the MFMAs.
#pragma once

#include "gfx950/decode_args.hpp"
#include "gfx950/isa.hpp"
#include "uq/core/sequence_rules.hpp"

namespace uq::gfx950 {
namespace decode_detail {

// Tiles whose block-table entries one load fetches (one a lane).
constexpr std::int32_t kIdsPerLoad = 64;

// The sequence length as the kernel uses it (spec §6) from seq_lens[b] as read (`raw`), counted
// once per sequence by the workgroup that is `counting` ((b, 0, 0)): < 0 -> 0,
// > max_blocks_per_seq * block_size -> clamped.
UQ_DEVICE inline std::int64_t clamp_seq_len(const DecodeKernelArgs& a, std::int64_t raw, bool counting,
                                            std::uint32_t lane) {
  const uq::impl::RequestLength len =
      uq::impl::request_length(raw, static_cast<std::int64_t>(a.max_blocks_per_seq) << a.block_size_log2);
  if (counting && lane == 0) {
    if (len.negative) atomic_add_u64(a.counters + kCounterNegativeSeqLens, 1ull);
    if (len.too_long) atomic_add_u64(a.counters + kCounterLongSeqLens, 1ull);
  }
  return len.tokens;
}

// seq_lens[b]'s buffer resource.
UQ_DEVICE inline buffer_rsrc seq_len_rsrc(const DecodeKernelArgs& a, std::uint32_t b) {
  return make_buffer_rsrc(a.seq_lens + static_cast<std::int64_t>(b) * a.seq_lens_stride, 4u);
}

UQ_DEVICE inline std::int64_t clamped_seq_len(const DecodeKernelArgs& a, std::uint32_t b, bool counting,
                                              std::uint32_t lane) {
  const std::int64_t raw = static_cast<std::int32_t>(readfirstlane(buffer_load_b32(seq_len_rsrc(a, b), 0u)));
  return clamp_seq_len(a, raw, counting, lane);
}

// Tile k of a partition (wave-uniform): tile-group p + (k >> 4) * P, tile k & 15 of it.
struct TilePosition {
  std::int64_t first_token;  // T0
  std::int64_t logical_block;
  std::uint32_t pos_in_block;  // T0 mod block_size
};

// T0 in the caller's integer type (the multi-token kernel's masks compute it in 32 bits: T0 < L).
template <class I>
UQ_DEVICE inline I tile_first_token(std::int32_t p, std::int32_t k, std::int32_t partitions) {
  const I tile_group = static_cast<I>(p) + static_cast<I>(k >> 4) * static_cast<I>(partitions);
  return tile_group * static_cast<I>(kTileGroupTokens) + static_cast<I>(k & 15) * static_cast<I>(kTileTokens);
}

UQ_DEVICE inline TilePosition tile_position(const DecodeKernelArgs& a, std::int32_t p, std::int32_t k) {
  TilePosition t;
  t.first_token = tile_first_token<std::int64_t>(p, k, a.partitions);
  t.logical_block = t.first_token >> a.block_size_log2;
  t.pos_in_block = static_cast<std::uint32_t>(t.first_token & ((std::int64_t{1} << a.block_size_log2) - 1));
  return t;
}

// Lane j: the block-table entry of tile first + j (tiles at or past `tiles` read 0 and are
// never used).
UQ_DEVICE inline std::uint32_t load_block_ids(const DecodeKernelArgs& a, const buffer_rsrc& table_rsrc,
                                              std::int32_t p, std::int32_t first, std::int32_t tiles,
                                              std::uint32_t lane) {
  const std::int32_t k = first + static_cast<std::int32_t>(lane);
  const TilePosition t = tile_position(a, p, k);
  const std::uint32_t offset =
      k < tiles ? static_cast<std::uint32_t>(4 * t.logical_block * a.table_stride_block) : kMaskedOffset;
  return buffer_load_b32(table_rsrc, offset);
}

// A tile's source block, wave-uniform.
struct TileSource {
  buffer_rsrc block;           // exactly the block's bytes, or 0 bytes (bad id, no such tile)
  std::uint32_t pos_in_block;
  std::uint32_t valid;         // tokens of the tile below seq_len in a valid block (0 .. 16)
};

// Tile k's block-table entry from the entries of its chunk of 64 tiles (one a lane).
UQ_DEVICE inline std::int32_t block_id(std::uint32_t ids, std::int32_t k) {
  return static_cast<std::int32_t>(readlane(ids, static_cast<std::uint32_t>(k) & (kIdsPerLoad - 1)));
}

// Resolves tile k from its block-table entry `block` (block_id); counts a bad id once per
// (sequence, logical block) as the generic kernel does: at the block's first tile, by KV head
// 0, lane 0. A tile at or past `tiles` (prefetched by the loop) gets an empty resource: no
// memory traffic.
UQ_DEVICE inline TileSource tile_source(const DecodeKernelArgs& a, std::int32_t block, std::int32_t p,
                                        std::int32_t h, std::int32_t k, std::int32_t tiles,
                                        std::int64_t seq_len, std::uint32_t lane) {
  const TilePosition t = tile_position(a, p, k);
  const std::int64_t id = block;
  const bool real = k < tiles;
  const bool id_ok = id >= 0 && id < a.num_blocks;
  const bool ok = real && id_ok;
  TileSource s;
  s.pos_in_block = t.pos_in_block;
  const std::int64_t left = seq_len - t.first_token;  // > 0 for a real tile
  s.valid = ok ? static_cast<std::uint32_t>(left < kTileTokens ? left : kTileTokens) : 0u;
  const std::uint8_t* base = ok ? a.cache + id * a.block_stride : a.cache;
  s.block = make_buffer_rsrc(base, ok ? a.block_bytes : 0u);
  if (real && !id_ok && t.pos_in_block == 0 && h == 0 && lane == 0) {
    atomic_add_u64(a.counters + kCounterBadBlockIds, 1ull);
  }
  return s;
}

// One tile's K loads for one lane: the A operands of the two QK MFMAs and the scales.
struct KLoads {
  u32x4 codes[2];  // A operand of issue 0 and 1
  u32x2 scales;    // the token's 8 K scale bytes
};

// One tile's V loads for one lane.
struct VLoads {
  u32x4 codes[2];        // dims 64c .. 64c+31 and 64c+32 .. 64c+63
  std::uint32_t scales;  // the word holding V groups 2c and 2c+1
};

UQ_DEVICE inline KLoads load_k(const DecodeKernelArgs& a, const TileSource& s, std::int32_t h, std::uint32_t lane) {
  const std::uint32_t token = lane & 15, g = lane >> 4;
  const bool ok = token < s.valid;
  const std::uint32_t slot = (s.pos_in_block + token) * a.pos_stride + static_cast<std::uint32_t>(h) * a.slot_bytes;
  const std::uint32_t codes = ok ? slot + kSlotKCodes + 16u * g : kMaskedOffset;
  KLoads k;
  k.codes[0] = buffer_load_b128(s.block, codes);
  k.codes[1] = buffer_load_b128(s.block, codes + 64u);
  k.scales = buffer_load_b64(s.block, ok ? slot + kSlotKScales : kMaskedOffset);
  return k;
}

UQ_DEVICE inline VLoads load_v(const DecodeKernelArgs& a, const TileSource& s, std::int32_t h, std::uint32_t lane) {
  const std::uint32_t token = lane >> 2, c = lane & 3;
  const bool ok = token < s.valid;
  const std::uint32_t slot = (s.pos_in_block + token) * a.pos_stride + static_cast<std::uint32_t>(h) * a.slot_bytes;
  const std::uint32_t codes = ok ? slot + kSlotVCodes + 32u * c : kMaskedOffset;
  VLoads v;
  v.codes[0] = buffer_load_b128(s.block, codes);
  v.codes[1] = buffer_load_b128(s.block, codes + 16u);
  v.scales = buffer_load_b32(s.block, ok ? slot + kSlotVScales + 4u * (c >> 1) : kMaskedOffset);
  return v;
}

}  // namespace decode_detail
}  // namespace uq::gfx950
