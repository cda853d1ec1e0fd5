// The decode kernel's per-tile memory side: where a 16-token tile lives (its block, found
// through the block table, as a buffer resource covering exactly that block), the global
// loads of its K and V bytes, and the status count of a bad block id.
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

namespace uq::gfx950 {
namespace decode_detail {

// Tile k of a partition (wave-uniform): tile-group p + (k >> 4) * P, tile k & 15 of it.
struct TilePosition {
  std::int64_t first_token;  // T0
  std::int64_t logical_block;
  std::uint32_t pos_in_block;  // T0 mod block_size
};

UQ_DEVICE inline TilePosition tile_position(const DecodeKernelArgs& a, std::int32_t p, std::int32_t k) {
  TilePosition t;
  const std::int64_t tile_group = p + static_cast<std::int64_t>(k >> 4) * a.partitions;
  t.first_token = tile_group * kTileGroupTokens + static_cast<std::int64_t>(k & 15) * kTileTokens;
  t.logical_block = t.first_token >> a.block_size_log2;
  t.pos_in_block = static_cast<std::uint32_t>(t.first_token & ((std::int64_t{1} << a.block_size_log2) - 1));
  return t;
}

// The block-table entry of tile k, issued early and left in a VGPR (its latency overlaps a
// tile of compute). Tiles at or past `tiles` read 0 and are never used.
UQ_DEVICE inline std::uint32_t load_block_id(const DecodeKernelArgs& a, const buffer_rsrc& table_rsrc,
                                             std::int32_t p, std::int32_t k, std::int32_t tiles) {
  const TilePosition t = tile_position(a, p, k);
  const std::uint32_t offset =
      k < tiles ? static_cast<std::uint32_t>(4 * t.logical_block * a.table_stride_block) : kMaskedOffset;
  return buffer_load_b32(table_rsrc, offset);
}

// A tile's source block, wave-uniform.
struct TileSource {
  buffer_rsrc block;          // exactly the block's bytes, or 0 bytes (bad id, no such tile)
  std::int64_t first_token;   // T0
  std::uint32_t pos_in_block;
  bool block_ok;              // a real tile in a block with a valid id
};

// Resolves tile k from its block-table entry; counts a bad id once per (sequence, logical
// block) as the generic kernel does: at the block's first tile, by KV head 0, lane 0. The
// tile past the last one (prefetched by the loop) gets an empty resource: no memory traffic.
UQ_DEVICE inline TileSource tile_source(const DecodeKernelArgs& a, std::uint32_t block_id_vgpr,
                                        std::int32_t p, std::int32_t h, std::int32_t k,
                                        std::int32_t tiles, std::uint32_t lane) {
  const TilePosition t = tile_position(a, p, k);
  const std::int64_t id = static_cast<std::int32_t>(readfirstlane(block_id_vgpr));
  const bool real = k < tiles;
  const bool id_ok = id >= 0 && id < a.num_blocks;
  TileSource s;
  s.first_token = t.first_token;
  s.pos_in_block = t.pos_in_block;
  s.block_ok = real && id_ok;
  const std::uint8_t* base = s.block_ok ? a.cache + id * a.block_stride : a.cache;
  s.block = make_buffer_rsrc(base, s.block_ok ? a.block_bytes : 0u);
  if (real && !id_ok && t.pos_in_block == 0 && h == 0 && lane == 0) {
    atomic_add_u64(a.counters + kCounterBadBlockIds, 1ull);
  }
  return s;
}

// One tile's global loads for one lane (the registers of the depth-1 prefetch).
struct TileLoads {
  u32x4 k_codes[2];  // A operand of issue 0 and 1
  u32x2 k_scales;    // the token's 8 K scale bytes
  u32x4 v_codes[2];  // dims 64c .. 64c+31 and 64c+32 .. 64c+63
  std::uint32_t v_scales;  // the word holding V groups 2c and 2c+1
};

UQ_DEVICE inline TileLoads load_tile(const DecodeKernelArgs& a, const TileSource& s, std::int32_t h,
                                     std::int64_t seq_len, std::uint32_t lane) {
  TileLoads t;
  const std::uint32_t head = static_cast<std::uint32_t>(h) * a.slot_bytes;
  {  // K: token r, code bytes 16g.. and 64+16g.., all 8 scale bytes
    const std::uint32_t token = lane & 15, g = lane >> 4;
    const bool ok = s.first_token + token < seq_len;
    const std::uint32_t slot = (s.pos_in_block + token) * a.pos_stride + head;
    const std::uint32_t codes = ok ? slot + kSlotKCodes + 16u * g : kMaskedOffset;
    t.k_codes[0] = buffer_load_b128(s.block, codes);
    t.k_codes[1] = buffer_load_b128(s.block, codes + 64u);
    t.k_scales = buffer_load_b64(s.block, ok ? slot + kSlotKScales : kMaskedOffset);
  }
  {  // V: token l >> 2, chunk c = l & 3
    const std::uint32_t token = lane >> 2, c = lane & 3;
    const bool ok = s.first_token + token < seq_len;
    const std::uint32_t slot = (s.pos_in_block + token) * a.pos_stride + head;
    const std::uint32_t codes = ok ? slot + kSlotVCodes + 32u * c : kMaskedOffset;
    t.v_codes[0] = buffer_load_b128(s.block, codes);
    t.v_codes[1] = buffer_load_b128(s.block, codes + 16u);
    t.v_scales = buffer_load_b32(s.block, ok ? slot + kSlotVScales + 4u * (c >> 1) : kMaskedOffset);
  }
  return t;
}

}  // namespace decode_detail
}  // namespace uq::gfx950
