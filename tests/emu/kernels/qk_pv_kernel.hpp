// A small end-to-end kernel written once against arch/gfx950/isa.hpp and built both ways:
// for gfx950 by tests/emu/gfx950_qk_pv.hip (ISA-checked in ctest) and for the CPU emulator by
// tests/emu/test_emu_qk_pv.cpp (checked against a float64 reference). It is the decode
// kernel's inner step in miniature, one wave per workgroup, one head per workgroup:
//
//   S[t][q] = sum_k K[t][k] Q8[q][k]   with E8M0 block scales of K rows and Q rows
//             (scaled MFMA: A = K as E2M1 codes, B = Q converted to E4M3 in the kernel)
//   P       = bf16(S)                  (the MFMA's D layout is the next MFMA's B layout)
//   O[q][d] = sum_t P[t][q] V[t][d]    (V dequantised by the scaled FP4 -> bf16 convert
//             into LDS row-major [t][d], read back transposed by ds_read_b64_tr_b16)
//
// Sizes: 16 tokens, 128 key dims, 16 queries, 64 value dims.
#pragma once

#include "gfx950/isa.hpp"

namespace uq_emu_test {

constexpr std::uint32_t kTokens = 16, kDims = 128, kQueries = 16, kValueDims = 64;
constexpr std::uint32_t kKBytes = kTokens * kDims / 2;          // E2M1 codes, per head
constexpr std::uint32_t kKScaleBytes = 4 * kTokens;             // [block][token]
constexpr std::uint32_t kQFloats = kQueries * kDims;            // [query][dim] f32
constexpr std::uint32_t kQScaleBytes = 4 * kQueries;            // [block][query]
constexpr std::uint32_t kVBytes = kTokens * kValueDims / 2;     // E2M1 codes [token][dim]
constexpr std::uint32_t kVScaleBytes = kTokens * kValueDims / 32;  // [token][group of 32]
constexpr std::uint32_t kLdsRowBytes = kValueDims * 2;          // bf16 V row

struct QkPvArgs {
  const std::uint8_t* k;        // [heads][kKBytes]
  const std::uint8_t* k_scale;  // [heads][kKScaleBytes]
  const float* q;               // [heads][kQFloats]
  const std::uint8_t* q_scale;  // [heads][kQScaleBytes]
  const std::uint8_t* v;        // [heads][kVBytes]
  const std::uint8_t* v_scale;  // [heads][kVScaleBytes]
  float* s;                     // [heads][kTokens][kQueries]
  float* o;                     // [heads][kQueries][kValueDims]
  std::uint32_t heads;
};

struct VTileTag {};

// Four floats -> four E4M3 bytes, clamped to +-448 first: the converter gives NaN, not
// saturation, above 448 (keeps NaN: the comparisons are false for it).
UQ_DEVICE inline std::uint32_t to_e4m3x4(const uq::gfx950::u32x4& raw) {
  using namespace uq::gfx950;
  float f[4];
  for (int i = 0; i < 4; ++i) {
    const float x = bit_cast<float>(raw[i]);
    f[i] = x > 448.0f ? 448.0f : (x < -448.0f ? -448.0f : x);
  }
  const std::uint32_t lo = cvt_pk_fp8_f32<false>(f[0], f[1], 0u);
  return cvt_pk_fp8_f32<true>(f[2], f[3], lo);
}

UQ_DEVICE inline void qk_pv_kernel(const QkPvArgs& args) {
  using namespace uq::gfx950;
  const std::uint32_t lane = lane_id();
  const std::uint32_t g = lane >> 4, r = lane & 15;
  const std::uint32_t head = workgroup_id_x();
  // Byte ranges of the whole arrays: a wrong offset reads zeros, never a neighbour.
  const buffer_rsrc k_rsrc = make_buffer_rsrc(args.k, args.heads * kKBytes);
  const buffer_rsrc ks_rsrc = make_buffer_rsrc(args.k_scale, args.heads * kKScaleBytes);
  const buffer_rsrc q_rsrc = make_buffer_rsrc(args.q, args.heads * kQFloats * 4);
  const buffer_rsrc qs_rsrc = make_buffer_rsrc(args.q_scale, args.heads * kQScaleBytes);
  const buffer_rsrc v_rsrc = make_buffer_rsrc(args.v, args.heads * kVBytes);
  const buffer_rsrc vs_rsrc = make_buffer_rsrc(args.v_scale, args.heads * kVScaleBytes);
  const buffer_rsrc s_rsrc = make_buffer_rsrc(args.s, args.heads * kTokens * kQueries * 4);
  const buffer_rsrc o_rsrc = make_buffer_rsrc(args.o, args.heads * kQueries * kValueDims * 4);

  // ---- A = K (E2M1): lane holds token r, dims 32g .. 32g+31 = 16 contiguous code bytes.
  const u32x4 k_codes = buffer_load_b128<cache::kNt>(k_rsrc, head * kKBytes + 64 * r + 16 * g);
  const i32x8 a = {static_cast<std::int32_t>(k_codes[0]), static_cast<std::int32_t>(k_codes[1]),
                   static_cast<std::int32_t>(k_codes[2]), static_cast<std::int32_t>(k_codes[3]),
                   0, 0, 0, 0};
  // Scale of A row m, block kb sits in lane 16kb + m: with the [block][token] layout that is
  // byte `lane` of the head's scales.
  const std::int32_t scale_a = buffer_load_b8(ks_rsrc, head * kKScaleBytes + lane);

  // ---- B = Q (E4M3): lane holds query r at dims 16g .. 16g+15 (bytes 0..15) and
  // 64+16g .. 64+16g+15 (bytes 16..31).
  std::uint32_t q_words[8];
  for (std::uint32_t half = 0; half < 2; ++half) {
    const std::uint32_t dim0 = 64 * half + 16 * g;
    for (std::uint32_t part = 0; part < 4; ++part) {
      const u32x4 raw =
          buffer_load_b128(q_rsrc, 4 * (head * kQFloats + r * kDims + dim0 + 4 * part));
      q_words[4 * half + part] = to_e4m3x4(raw);
    }
  }
  const i32x8 b = {static_cast<std::int32_t>(q_words[0]), static_cast<std::int32_t>(q_words[1]),
                   static_cast<std::int32_t>(q_words[2]), static_cast<std::int32_t>(q_words[3]),
                   static_cast<std::int32_t>(q_words[4]), static_cast<std::int32_t>(q_words[5]),
                   static_cast<std::int32_t>(q_words[6]), static_cast<std::int32_t>(q_words[7])};
  // Q's scale byte goes in byte 1 (op_sel 1); byte 0 holds a decoy the MFMA must ignore.
  const std::uint32_t q_scale = buffer_load_b8(qs_rsrc, head * kQScaleBytes + lane);
  const std::int32_t scale_b = static_cast<std::int32_t>((q_scale << 8) | 0x5Au);

  const f32x4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
  const f32x4 s = mfma_scale_f32_16x16x128_f8f6f4<kFp4, kFp8, 0, 1>(a, b, zero, scale_a, scale_b);
  // D layout: element i of this lane is S[token 4g + i][query r].
  for (std::uint32_t i = 0; i < 4; ++i) {
    buffer_store_b32(bit_cast<std::uint32_t>(s[i]), s_rsrc,
                     4 * (head * kTokens * kQueries + (4 * g + i) * kQueries + r));
  }

  // ---- V -> bf16 in LDS, row-major [token][dim]: lane = 4 * token + chunk of 16 dims.
  const std::uint32_t lds = lds_allocate<kTokens * kLdsRowBytes, VTileTag>();
  const std::uint32_t token = lane >> 2, chunk = lane & 3;
  const u32x2 v_codes = buffer_load_b64(v_rsrc, head * kVBytes + 32 * token + 8 * chunk);
  const std::uint32_t v_scale_byte =
      buffer_load_b8(vs_rsrc, head * kVScaleBytes + 2 * token + (chunk >> 1));
  const float v_scale = bit_cast<float>(v_scale_byte << 23);  // E8M0 as a float's exponent
  for (std::uint32_t w = 0; w < 2; ++w) {
    const u32x4 bf16x8 = {cvt_scalef32_pk_bf16_fp4<0>(v_codes[w], v_scale),
                          cvt_scalef32_pk_bf16_fp4<1>(v_codes[w], v_scale),
                          cvt_scalef32_pk_bf16_fp4<2>(v_codes[w], v_scale),
                          cvt_scalef32_pk_bf16_fp4<3>(v_codes[w], v_scale)};
    lds_store(lds + token * kLdsRowBytes + 2 * (16 * chunk + 8 * w), bf16x8);
  }
  barrier();

  // ---- O^T = V^T P: A[d][t] = V[t][d] by the transposing read (lane 16G + t' addresses
  // token 4G + t'/4, dims 4(t'%4) of the 16-dim chunk), B[t][q] = P = the S registers.
  const i16x4 p = bit_cast<i16x4>(u32x2{cvt_pk_bf16_f32(s[0], s[1]), cvt_pk_bf16_f32(s[2], s[3])});
  for (std::uint32_t h = 0; h < kValueDims / 16; ++h) {
    const i16x4 v_t = ds_read_b64_tr_b16(lds + (lane >> 2) * kLdsRowBytes + 2 * (16 * h + 4 * (lane & 3)));
    const f32x4 o = mfma_f32_16x16x16_bf16(v_t, p, zero);
    // Element i is O[query r][dim 16h + 4g + i]: four consecutive floats of the output row.
    buffer_store_b128(bit_cast<u32x4>(o), o_rsrc,
                      4 * (head * kQueries * kValueDims + r * kValueDims + 16 * h + 4 * g));
  }
}

}  // namespace uq_emu_test
