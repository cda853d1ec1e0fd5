// Compile test of arch/gfx950/isa.hpp for gfx950: one kernel calls every operation with
// run-time operands (so nothing folds away) and stores every result; the ISA check
// (arch/CMakeLists.txt) asserts that each operation's instruction is in the code object.
// A second kernel checks the literal-zero-scale guard of the scaled MFMA.
#include "gfx950/isa.hpp"

using namespace uq::gfx950;

namespace {

struct LdsTag {};

UQ_DEVICE inline std::uint32_t sum4(const u32x4& v) { return v[0] + v[1] + v[2] + v[3]; }

}  // namespace

extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(128, 128))) void
uq_isa_all_ops(float* out, const std::uint32_t* in, std::uint32_t n_bytes, float scale,
               std::int32_t scale_word) {
  const buffer_rsrc src = make_buffer_rsrc(in, n_bytes);
  const buffer_rsrc dst = make_buffer_rsrc(out, n_bytes);
  const std::uint32_t lane = lane_id();
  const std::uint32_t tid = thread_id();
  const std::uint32_t wave = wave_id();
  const std::uint32_t wg = workgroup_id_x() + workgroup_id_y() + workgroup_id_z();

  // buffer loads of every width, with cache-policy bits
  const std::uint32_t off = 16 * tid;
  const u32x4 q = buffer_load_b128<cache::kNt>(src, off, 4 * wg);
  const u32x2 d = buffer_load_b64<cache::kNt | cache::kSc1>(src, off + 32);
  const std::uint32_t w = buffer_load_b32<cache::kSc0>(src, off + 48);
  const std::uint16_t h = buffer_load_b16(src, off + 52);
  const std::uint8_t b = buffer_load_b8(src, off + 55);

  // LDS: 16-byte and smaller stores, loads, transpose load
  const std::uint32_t lds = lds_allocate<8192, LdsTag>();
  lds_store(lds + 16 * tid, q);
  lds_store(lds + 4096 + 8 * tid, d);
  lds_store(lds + 6144 + 4 * tid, w);
  lds_store<std::uint16_t>(lds + 7168 + 2 * tid, h);
  lds_store<std::uint8_t>(lds + 7680 + tid, b);
  barrier();
  const u32x4 q2 = lds_load<u32x4>(lds + 16 * (tid ^ 1));
  const std::uint32_t w2 = lds_load<std::uint32_t>(lds + 6144 + 4 * (tid ^ 3));
  const std::uint16_t h2 = lds_load<std::uint16_t>(lds + 7168 + 2 * (tid ^ 5));
  const std::uint8_t b2 = lds_load<std::uint8_t>(lds + 7680 + (tid ^ 7));
  wave_barrier();
  const i16x4 tr = ds_read_b64_tr_b16(lds + 8 * ((lane >> 2) * 4 + (lane & 3)));
  s_waitcnt<0xC07F>();
  sched_barrier<0>();

  // MFMAs
  const i32x8 a8 = {static_cast<int>(q2[0]), static_cast<int>(q2[1]), static_cast<int>(q2[2]),
                    static_cast<int>(q2[3]), static_cast<int>(q[0]),  static_cast<int>(q[1]),
                    static_cast<int>(q[2]),  static_cast<int>(q[3])};
  const i32x8 b8 = {static_cast<int>(q[3]), static_cast<int>(q[2]), static_cast<int>(q[1]),
                    static_cast<int>(q[0]), static_cast<int>(w),    static_cast<int>(w2),
                    static_cast<int>(d[0]), static_cast<int>(d[1])};
  f32x4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
  acc = mfma_scale_f32_16x16x128_f8f6f4<kFp4, kFp8, 1, 2>(a8, b8, acc, scale_word, scale_word);
  acc = mfma_scale_f32_16x16x128_f8f6f4<kFp6, kBf6>(a8, b8, acc, scale_word, 127);
  acc = mfma_scale_f32_16x16x128_f8f6f4<kBf8, kFp8>(a8, b8, acc, 0x7F7F7F7F, scale_word);
  acc = mfma_f32_16x16x128_f8f6f4<kFp8, kFp4>(a8, b8, acc);
  acc = mfma_f32_16x16x16_bf16(tr, tr, acc);
  const i16x8 t8 = bit_cast<i16x8>(q2);
  acc = mfma_f32_16x16x32_bf16(t8, t8, acc);

  // conversions
  const std::uint32_t pk_bf16 = cvt_scalef32_pk_bf16_fp4<2>(w2, scale);
  const f32x2 pk_f32 = cvt_scalef32_pk_f32_fp4<3>(w2, scale);
  const std::uint32_t fp4 = cvt_scalef32_pk_fp4_f32<1>(w, acc[0], acc[1], scale);
  std::uint32_t fp8 = cvt_pk_fp8_f32<false>(acc[2], acc[3], 0u);
  fp8 = cvt_pk_fp8_f32<true>(pk_f32[0], pk_f32[1], fp8);
  const f32x2 back = cvt_pk_f32_fp8<true>(fp8);
  const std::uint32_t bf = cvt_pk_bf16_f32(back[0], back[1]);

  // cross-lane
  const std::uint32_t sw1 = ds_swizzle<swizzle_quad_perm(3, 2, 1, 0)>(pk_bf16);
  const std::uint32_t sw2 = ds_swizzle<swizzle_bitmask(0x1C, 0x01, 0x02)>(sw1);
  const float x16 = shfl_xor<16>(acc[0]);
  const float x32 = shfl_xor<32>(acc[1]);
  const float x48 = shfl_xor<48>(acc[2]);
  const std::uint32_t any = shfl(fp4, lane ^ 9);
  const std::uint32_t first = readfirstlane(bf);
  const std::uint32_t fifth = readlane(sw2, 5);
  const std::uint64_t votes = ballot(acc[3] > 0.0f);

  // arithmetic
  const std::uint32_t perm = perm_b32(sw2, any, 0x0C0D0105u);
  const float e = fast_exp2(acc[3] - x16);

  const std::uint32_t mix = first ^ fifth ^ perm ^ static_cast<std::uint32_t>(votes) ^
                            static_cast<std::uint32_t>(votes >> 32) ^ h2 ^ b2 ^ sum4(q2) ^ wave;
  const u32x4 result = {bit_cast<std::uint32_t>(e + x32 + x48), mix, bit_cast<std::uint32_t>(acc[1]),
                        bit_cast<std::uint32_t>(acc[2])};
  buffer_store_b128<cache::kNt>(result, dst, off);
  buffer_store_b64<cache::kSc0 | cache::kNt>(u32x2{mix, bf}, dst, off + 32);
  buffer_store_b32(mix, dst, off + 48);
  buffer_store_b16(static_cast<std::uint16_t>(mix), dst, off + 52);
  buffer_store_b8(static_cast<std::uint8_t>(mix), dst, off + 55);
}

// Both scales are the literal 0: the guard in isa_gfx950.hpp must keep the *scaled*
// instruction (E8M0 0 = 2^-127), not let LLVM switch to the unscaled one.
extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(64, 64))) void
uq_isa_scaled_zero_literal(float* out, const std::uint32_t* in) {
  const buffer_rsrc src = make_buffer_rsrc(in, 4096);
  const std::uint32_t off = 32 * lane_id();
  const u32x4 lo = buffer_load_b128(src, off);
  const u32x4 hi = buffer_load_b128(src, off + 16);
  const i32x8 v = {static_cast<int>(lo[0]), static_cast<int>(lo[1]), static_cast<int>(lo[2]),
                   static_cast<int>(lo[3]), static_cast<int>(hi[0]), static_cast<int>(hi[1]),
                   static_cast<int>(hi[2]), static_cast<int>(hi[3])};
  const f32x4 acc = mfma_scale_f32_16x16x128_f8f6f4<kFp8, kFp8>(v, v, f32x4{0, 0, 0, 0}, 0, 0);
  buffer_store_b128(bit_cast<u32x4>(acc), make_buffer_rsrc(out, 4096), 16 * lane_id());
}
