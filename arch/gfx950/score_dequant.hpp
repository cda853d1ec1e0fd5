// The scorer's operands (score_kernel.hpp): a page's tiles loaded into registers, the NVFP4
// codes turned into the E4M3 A operand through the dequantisation table with byte permutes,
// and the query staged in the same ("key") dim order for the B operand.
//
// Lane l = 16 kl + col of a wave works on token 16 t + col of tile t and on the dims
// 32 kl .. 32 kl + 31, i.e. code bytes 16 kl .. 16 kl + 15 of the token's 64 and scale bytes
// 2 kl, 2 kl + 1 (one per 16 dims). The 8 dwords of its A operand hold these 32 dims in key
// order: dword 2w (w = 0..3) holds dims 8w + {0, 2, 4, 6}, dword 2w + 1 dims 8w + {1, 3, 5, 7}
// (offsets from 32 kl). Any order of the 128 dims gives the same dot product as long as the
// B operand (Q) uses it too: the MFMA pairs byte j of lane (m, kl) in A with byte j of lane
// (n, kl) in B, whatever dim that byte holds.
#pragma once

#include "gfx950/isa.hpp"
#include "gfx950/score_args.hpp"

namespace uq::gfx950 {
namespace score_detail {

using namespace scorer;

// The E4M3 bytes of 8 consecutive elements (the 8 nibbles of `codes`, element e in nibble e)
// of one scale group whose table entry is `entry` (byte i = e4m3(E2M1 magnitude i x scale)).
// v_perm_b32 picks table bytes by the nibbles' magnitude bits (selectors 0..7); the code's
// sign bit flips the result's sign bit, which is what rounding symmetric in the sign gives
// (uq::nvfp4::apply_code_sign). Returns {e0 e2 e4 e6, e1 e3 e5 e7}, first element lowest.
UQ_DEVICE inline u32x2 dequant8(std::uint32_t codes, const u32x2& entry) {
  const std::uint32_t even = codes & 0x0F0F0F0Fu, odd = (codes >> 4) & 0x0F0F0F0Fu;
  const std::uint32_t lo = perm_b32(entry[1], entry[0], even & 0x07070707u) ^ ((even & 0x08080808u) << 4);
  const std::uint32_t hi = perm_b32(entry[1], entry[0], odd & 0x07070707u) ^ ((odd & 0x08080808u) << 4);
  return u32x2{lo, hi};
}

// 16 query bytes (dims 16c .. 16c + 15 in natural order) in key order: the even dims of each
// 8 first, as dequant8 leaves the keys.
UQ_DEVICE inline u32x4 key_order16(const u32x4& q) {
  constexpr std::uint32_t kEven = 0x06040200u, kOdd = 0x07050301u;
  return u32x4{perm_b32(q[1], q[0], kEven), perm_b32(q[1], q[0], kOdd), perm_b32(q[3], q[2], kEven),
               perm_b32(q[3], q[2], kOdd)};
}

// One tile's loads in a lane's registers: its 16 code bytes, and the scale dword holding its
// 2 scale bytes (bytes 2 kl, 2 kl + 1 of the token's 8 are the half kl & 1 of dword kl >> 1).
// A whole dword, not a 2-byte load: a 16-bit load's value is zero-extended where it is used,
// and clang put those extensions of all 8 tiles, carried round the page loop, at its top,
// which made the wave wait there for the whole next page (performance model,
// docs/perf-log/2026-12-01-gfx950-model.md).
struct Tile {
  u32x4 codes;
  std::uint32_t scales;
};
// A page's 8 tiles.
struct PageTiles {
  Tile tile[kTiles];
};

// The page's buffer resource: its 9216 bytes (64-bit page offset), or none (a range of 0
// bytes: every load reads 0 without touching memory) when !exists.
UQ_DEVICE inline buffer_rsrc page_rsrc(const ScoreKernelArgs& a, std::int32_t page, bool exists = true) {
  return make_buffer_rsrc(a.cache + static_cast<std::int64_t>(page < 0 ? 0 : page) * kPageBytes,
                          exists ? static_cast<std::uint32_t>(kPageBytes) : 0u);
}

// Tile t of a page: token 16 t + col. (The tile's offset is a constant added to the lane's,
// so that it lands in the instructions' offset field.)
UQ_DEVICE inline Tile load_tile(const buffer_rsrc& page, int t, std::uint32_t lane) {
  const std::uint32_t col = lane & 15u, kl = lane >> 4;
  const std::uint32_t tile_codes = static_cast<std::uint32_t>(t) * kTileTokens * 64u;
  const std::uint32_t tile_scales = static_cast<std::uint32_t>(kPageCodes) + static_cast<std::uint32_t>(t) * kTileTokens * 8u;
  Tile tile;
  tile.codes = buffer_load_b128(page, col * 64u + kl * 16u + tile_codes);
  tile.scales = buffer_load_b32(page, col * 8u + (kl >> 1) * 4u + tile_scales);
  return tile;
}

// The A operand of a tile: 16 tokens x this lane's 32 dims as E4M3, in key order.
UQ_DEVICE inline i32x8 dequant_tile(const Tile& tile, std::uint32_t table_lds, std::uint32_t lane) {
  const std::uint32_t s = tile.scales >> (16u * ((lane >> 4) & 1u));
  const u32x2 e0 = lds_load<u32x2>(table_lds + (s & 0xFFu) * 8u);
  const u32x2 e1 = lds_load<u32x2>(table_lds + ((s >> 8) & 0xFFu) * 8u);
  const u32x4 c = tile.codes;
  const u32x2 d0 = dequant8(c[0], e0), d1 = dequant8(c[1], e0), d2 = dequant8(c[2], e1), d3 = dequant8(c[3], e1);
  return i32x8{static_cast<std::int32_t>(d0[0]), static_cast<std::int32_t>(d0[1]), static_cast<std::int32_t>(d1[0]),
               static_cast<std::int32_t>(d1[1]), static_cast<std::int32_t>(d2[0]), static_cast<std::int32_t>(d2[1]),
               static_cast<std::int32_t>(d3[0]), static_cast<std::int32_t>(d3[1])};
}

// LDS byte address of the 16-byte chunk c (dims 16c .. 16c + 15, key order) of Q row i of
// the chunk: rows of 128 bytes, chunk c stored at c ^ (i & 7) so that the 8 rows a group of
// lanes reads at once spread over the banks.
UQ_DEVICE inline std::uint32_t q_chunk_address(std::uint32_t q_lds, std::uint32_t i, std::uint32_t c) {
  return q_lds + i * static_cast<std::uint32_t>(kDim) + ((c ^ (i & 7u)) << 4);
}

// The B operand of Q row i for lane group kl: dims 32 kl .. 32 kl + 31 in key order.
UQ_DEVICE inline i32x8 q_operand(std::uint32_t q_lds, std::uint32_t i, std::uint32_t kl) {
  const u32x4 lo = lds_load<u32x4>(q_chunk_address(q_lds, i, 2u * kl));
  const u32x4 hi = lds_load<u32x4>(q_chunk_address(q_lds, i, 2u * kl + 1u));
  return i32x8{static_cast<std::int32_t>(lo[0]), static_cast<std::int32_t>(lo[1]), static_cast<std::int32_t>(lo[2]),
               static_cast<std::int32_t>(lo[3]), static_cast<std::int32_t>(hi[0]), static_cast<std::int32_t>(hi[1]),
               static_cast<std::int32_t>(hi[2]), static_cast<std::int32_t>(hi[3])};
}

}  // namespace score_detail
}  // namespace uq::gfx950
