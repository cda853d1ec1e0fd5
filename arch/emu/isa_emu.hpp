// Emulator implementation of isa.hpp (UQ_GFX950_EMULATE): every operation forwards to the
// wavefront emulator in arch/emu. Include arch/gfx950/isa.hpp, never this file.
//
// The semantics are those documented next to each builtin in arch/gfx950/isa_gfx950.hpp.
// Every operation takes two extra defaulted arguments, the caller's file and line, so that a
// fault names the kernel source line; kernels never pass them.
#pragma once

#if !defined(UQ_GFX950_EMULATE)
#error "isa_emu.hpp is the UQ_GFX950_EMULATE implementation of arch/gfx950/isa.hpp"
#endif

#include <cstdint>

#define UQ_EMU_SITE const char *file = __builtin_FILE(), int line = __builtin_LINE()
#define UQ_EMU_AT emu::detail::Site { file, line }

namespace uq::emu::detail {

struct Site {
  const char* file;
  int line;
};

// ids and synchronisation (scheduler.cpp)
std::uint32_t lane_id(Site at);
std::uint32_t thread_id(Site at);
std::uint32_t wave_id(Site at);
std::uint32_t workgroup_id(int dim, Site at);
void barrier(Site at);
void wave_barrier(Site at);

// LDS (lds.cpp)
std::uint32_t lds_allocate(const void* key, std::uint32_t bytes, Site at);
void lds_read(std::uint32_t addr, void* dst, std::uint32_t size, Site at);
void lds_write(std::uint32_t addr, const void* src, std::uint32_t size, Site at);
gfx950::i16x4 ds_read_b64_tr_b16(std::uint32_t addr, Site at);

// buffer memory (buffer.cpp)
struct BufferResource {
  const unsigned char* base;
  std::uint32_t num_records;  // byte range
};
void buffer_load(const BufferResource& r, std::uint32_t voffset, std::uint32_t soffset, void* dst,
                 std::uint32_t size, Site at);
void buffer_store(const BufferResource& r, std::uint32_t voffset, std::uint32_t soffset,
                  const void* src, std::uint32_t size, Site at);

// MFMA (mfma.cpp)
struct F8F6F4Call {
  int fmt_a, fmt_b;
  bool scaled;  // false: the unscaled instruction (all scales 1.0)
  int opsel_a, opsel_b;
};
gfx950::f32x4 mfma_f8f6f4(const F8F6F4Call& call, const gfx950::i32x8& a, const gfx950::i32x8& b,
                          const gfx950::f32x4& c, std::int32_t scale_a, std::int32_t scale_b,
                          Site at);
gfx950::f32x4 mfma_bf16_k16(const gfx950::i16x4& a, const gfx950::i16x4& b,
                            const gfx950::f32x4& c, Site at);
gfx950::f32x4 mfma_bf16_k32(const gfx950::i16x8& a, const gfx950::i16x8& b,
                            const gfx950::f32x4& c, Site at);

// cross-lane (crosslane.cpp)
std::uint32_t ds_swizzle(std::uint32_t v, std::uint32_t pattern, Site at);
std::uint32_t shfl_xor(std::uint32_t v, std::uint32_t mask, Site at);
std::uint32_t shfl(std::uint32_t v, std::uint32_t src_lane, Site at);
std::uint32_t readfirstlane(std::uint32_t v, Site at);
std::uint32_t readlane(std::uint32_t v, std::uint32_t lane, Site at);
std::uint64_t ballot(bool pred, Site at);

// per-lane arithmetic and conversions (convert.cpp)
std::uint32_t cvt_scalef32_pk_bf16_fp4(std::uint32_t src, float scale, int sel);
gfx950::f32x2 cvt_scalef32_pk_f32_fp4(std::uint32_t src, float scale, int sel);
std::uint32_t cvt_scalef32_pk_fp4_f32(std::uint32_t old, float a, float b, float scale, int sel);
std::uint32_t cvt_pk_fp8_f32(float a, float b, std::uint32_t old, bool high_word);
gfx950::f32x2 cvt_pk_f32_fp8(std::uint32_t src, bool high_word);
std::uint32_t cvt_pk_bf16_f32(float lo, float hi);
std::uint32_t perm_b32(std::uint32_t hi, std::uint32_t lo, std::uint32_t sel);
float fast_exp2(float x);

// global atomics (atomic.cpp)
unsigned long long atomic_add_u64(unsigned long long* addr, unsigned long long value, Site at);

template <class T>
inline std::uint32_t bits32(T v) {
  static_assert(sizeof(T) == 4, "cross-lane operations move 32-bit values");
  return __builtin_bit_cast(std::uint32_t, v);
}

}  // namespace uq::emu::detail

namespace uq::gfx950 {

// ---------------------------------------------------------------- ids and synchronisation
inline std::uint32_t lane_id(UQ_EMU_SITE) { return emu::detail::lane_id(UQ_EMU_AT); }
inline std::uint32_t thread_id(UQ_EMU_SITE) { return emu::detail::thread_id(UQ_EMU_AT); }
inline std::uint32_t wave_id(UQ_EMU_SITE) { return emu::detail::wave_id(UQ_EMU_AT); }
inline std::uint32_t workgroup_id_x(UQ_EMU_SITE) { return emu::detail::workgroup_id(0, UQ_EMU_AT); }
inline std::uint32_t workgroup_id_y(UQ_EMU_SITE) { return emu::detail::workgroup_id(1, UQ_EMU_AT); }
inline std::uint32_t workgroup_id_z(UQ_EMU_SITE) { return emu::detail::workgroup_id(2, UQ_EMU_AT); }
inline void barrier(UQ_EMU_SITE) { emu::detail::barrier(UQ_EMU_AT); }
inline void wave_barrier(UQ_EMU_SITE) { emu::detail::wave_barrier(UQ_EMU_AT); }
template <int Imm>
inline void s_waitcnt() {}
template <int Mask>
inline void sched_barrier() {}

// ---------------------------------------------------------------- LDS
template <std::uint32_t Bytes, class Tag = void>
inline std::uint32_t lds_allocate(UQ_EMU_SITE) {
  static_assert(Bytes > 0 && Bytes <= kMaxLdsBytes, "lds_allocate: 1 .. 160 KiB");
  static const char key = 0;  // one per <Bytes, Tag>, like the static __shared__ array
  return emu::detail::lds_allocate(&key, Bytes, UQ_EMU_AT);
}
template <class T>
inline T lds_load(std::uint32_t addr, UQ_EMU_SITE) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 ||
                    sizeof(T) == 16,
                "lds_load: 1, 2, 4, 8 or 16 bytes");
  T value;
  emu::detail::lds_read(addr, &value, sizeof(T), UQ_EMU_AT);
  return value;
}
template <class T>
inline void lds_store(std::uint32_t addr, const T& value, UQ_EMU_SITE) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 ||
                    sizeof(T) == 16,
                "lds_store: 1, 2, 4, 8 or 16 bytes");
  emu::detail::lds_write(addr, &value, sizeof(T), UQ_EMU_AT);
}
inline i16x4 ds_read_b64_tr_b16(std::uint32_t addr, UQ_EMU_SITE) {
  return emu::detail::ds_read_b64_tr_b16(addr, UQ_EMU_AT);
}

// ---------------------------------------------------------------- buffer memory
typedef emu::detail::BufferResource buffer_rsrc;
inline buffer_rsrc make_buffer_rsrc(const void* base, std::uint32_t num_bytes) {
  return buffer_rsrc{static_cast<const unsigned char*>(base), num_bytes};
}

namespace emu_detail {
template <class T>
inline T buffer_load(const buffer_rsrc& r, std::uint32_t voffset, std::uint32_t soffset,
                     emu::detail::Site at) {
  T value;
  emu::detail::buffer_load(r, voffset, soffset, &value, sizeof(T), at);
  return value;
}
}  // namespace emu_detail

template <int Aux = cache::kDefault>
inline std::uint8_t buffer_load_b8(const buffer_rsrc& r, std::uint32_t voffset,
                                   std::uint32_t soffset = 0, UQ_EMU_SITE) {
  return emu_detail::buffer_load<std::uint8_t>(r, voffset, soffset, UQ_EMU_AT);
}
template <int Aux = cache::kDefault>
inline std::uint16_t buffer_load_b16(const buffer_rsrc& r, std::uint32_t voffset,
                                     std::uint32_t soffset = 0, UQ_EMU_SITE) {
  return emu_detail::buffer_load<std::uint16_t>(r, voffset, soffset, UQ_EMU_AT);
}
template <int Aux = cache::kDefault>
inline std::uint32_t buffer_load_b32(const buffer_rsrc& r, std::uint32_t voffset,
                                     std::uint32_t soffset = 0, UQ_EMU_SITE) {
  return emu_detail::buffer_load<std::uint32_t>(r, voffset, soffset, UQ_EMU_AT);
}
template <int Aux = cache::kDefault>
inline u32x2 buffer_load_b64(const buffer_rsrc& r, std::uint32_t voffset,
                             std::uint32_t soffset = 0, UQ_EMU_SITE) {
  return emu_detail::buffer_load<u32x2>(r, voffset, soffset, UQ_EMU_AT);
}
template <int Aux = cache::kDefault>
inline u32x4 buffer_load_b128(const buffer_rsrc& r, std::uint32_t voffset,
                              std::uint32_t soffset = 0, UQ_EMU_SITE) {
  return emu_detail::buffer_load<u32x4>(r, voffset, soffset, UQ_EMU_AT);
}
template <int Aux = cache::kDefault>
inline void buffer_store_b8(std::uint8_t v, const buffer_rsrc& r, std::uint32_t voffset,
                            std::uint32_t soffset = 0, UQ_EMU_SITE) {
  emu::detail::buffer_store(r, voffset, soffset, &v, 1, UQ_EMU_AT);
}
template <int Aux = cache::kDefault>
inline void buffer_store_b16(std::uint16_t v, const buffer_rsrc& r, std::uint32_t voffset,
                             std::uint32_t soffset = 0, UQ_EMU_SITE) {
  emu::detail::buffer_store(r, voffset, soffset, &v, 2, UQ_EMU_AT);
}
template <int Aux = cache::kDefault>
inline void buffer_store_b32(std::uint32_t v, const buffer_rsrc& r, std::uint32_t voffset,
                             std::uint32_t soffset = 0, UQ_EMU_SITE) {
  emu::detail::buffer_store(r, voffset, soffset, &v, 4, UQ_EMU_AT);
}
template <int Aux = cache::kDefault>
inline void buffer_store_b64(const u32x2& v, const buffer_rsrc& r, std::uint32_t voffset,
                             std::uint32_t soffset = 0, UQ_EMU_SITE) {
  emu::detail::buffer_store(r, voffset, soffset, &v, 8, UQ_EMU_AT);
}
template <int Aux = cache::kDefault>
inline void buffer_store_b128(const u32x4& v, const buffer_rsrc& r, std::uint32_t voffset,
                              std::uint32_t soffset = 0, UQ_EMU_SITE) {
  emu::detail::buffer_store(r, voffset, soffset, &v, 16, UQ_EMU_AT);
}

// ---------------------------------------------------------------- MFMA
template <int FmtA, int FmtB, int OpselA = 0, int OpselB = 0>
inline f32x4 mfma_scale_f32_16x16x128_f8f6f4(const i32x8& a, const i32x8& b, const f32x4& c,
                                             std::int32_t scale_a, std::int32_t scale_b,
                                             UQ_EMU_SITE) {
  static_assert(FmtA >= kFp8 && FmtA <= kFp4 && FmtB >= kFp8 && FmtB <= kFp4, "format 0..4");
  static_assert(OpselA >= 0 && OpselA <= 3 && OpselB >= 0 && OpselB <= 3, "opsel 0..3");
  return emu::detail::mfma_f8f6f4({FmtA, FmtB, true, OpselA, OpselB}, a, b, c, scale_a, scale_b,
                                  UQ_EMU_AT);
}
template <int FmtA, int FmtB>
inline f32x4 mfma_f32_16x16x128_f8f6f4(const i32x8& a, const i32x8& b, const f32x4& c,
                                       UQ_EMU_SITE) {
  static_assert(FmtA >= kFp8 && FmtA <= kFp4 && FmtB >= kFp8 && FmtB <= kFp4, "format 0..4");
  return emu::detail::mfma_f8f6f4({FmtA, FmtB, false, 0, 0}, a, b, c, 0, 0, UQ_EMU_AT);
}
inline f32x4 mfma_f32_16x16x16_bf16(const i16x4& a, const i16x4& b, const f32x4& c,
                                    UQ_EMU_SITE) {
  return emu::detail::mfma_bf16_k16(a, b, c, UQ_EMU_AT);
}
inline f32x4 mfma_f32_16x16x32_bf16(const i16x8& a, const i16x8& b, const f32x4& c,
                                    UQ_EMU_SITE) {
  return emu::detail::mfma_bf16_k32(a, b, c, UQ_EMU_AT);
}

// ---------------------------------------------------------------- cross-lane
template <std::uint16_t Pattern, class T>
inline T ds_swizzle(T v, UQ_EMU_SITE) {
  return __builtin_bit_cast(T, emu::detail::ds_swizzle(emu::detail::bits32(v), Pattern, UQ_EMU_AT));
}
template <int Mask, class T>
inline T shfl_xor(T v, UQ_EMU_SITE) {
  static_assert(Mask >= 1 && Mask <= 63, "shfl_xor: mask 1..63");
  return __builtin_bit_cast(T, emu::detail::shfl_xor(emu::detail::bits32(v), Mask, UQ_EMU_AT));
}
template <class T>
inline T shfl(T v, std::uint32_t src_lane, UQ_EMU_SITE) {
  return __builtin_bit_cast(T, emu::detail::shfl(emu::detail::bits32(v), src_lane, UQ_EMU_AT));
}
template <class T>
inline T readfirstlane(T v, UQ_EMU_SITE) {
  return __builtin_bit_cast(T, emu::detail::readfirstlane(emu::detail::bits32(v), UQ_EMU_AT));
}
template <class T>
inline T readlane(T v, std::uint32_t lane, UQ_EMU_SITE) {
  return __builtin_bit_cast(T, emu::detail::readlane(emu::detail::bits32(v), lane, UQ_EMU_AT));
}
inline std::uint64_t ballot(bool pred, UQ_EMU_SITE) { return emu::detail::ballot(pred, UQ_EMU_AT); }

// ---------------------------------------------------------------- conversions, arithmetic
template <int Sel>
inline std::uint32_t cvt_scalef32_pk_bf16_fp4(std::uint32_t src, float scale) {
  static_assert(Sel >= 0 && Sel <= 3, "byte select 0..3");
  return emu::detail::cvt_scalef32_pk_bf16_fp4(src, scale, Sel);
}
template <int Sel>
inline f32x2 cvt_scalef32_pk_f32_fp4(std::uint32_t src, float scale) {
  static_assert(Sel >= 0 && Sel <= 3, "byte select 0..3");
  return emu::detail::cvt_scalef32_pk_f32_fp4(src, scale, Sel);
}
template <int Sel>
inline std::uint32_t cvt_scalef32_pk_fp4_f32(std::uint32_t old, float a, float b, float scale) {
  static_assert(Sel >= 0 && Sel <= 3, "byte select 0..3");
  return emu::detail::cvt_scalef32_pk_fp4_f32(old, a, b, scale, Sel);
}
template <bool HighWord>
inline std::uint32_t cvt_pk_fp8_f32(float a, float b, std::uint32_t old) {
  return emu::detail::cvt_pk_fp8_f32(a, b, old, HighWord);
}
template <bool HighWord>
inline f32x2 cvt_pk_f32_fp8(std::uint32_t src) {
  return emu::detail::cvt_pk_f32_fp8(src, HighWord);
}
inline std::uint32_t cvt_pk_bf16_f32(float lo, float hi) {
  return emu::detail::cvt_pk_bf16_f32(lo, hi);
}
inline std::uint32_t perm_b32(std::uint32_t hi, std::uint32_t lo, std::uint32_t sel) {
  return emu::detail::perm_b32(hi, lo, sel);
}
inline float fast_exp2(float x) { return emu::detail::fast_exp2(x); }

// ---------------------------------------------------------------- global atomics
inline unsigned long long atomic_add_u64(unsigned long long* addr, unsigned long long value,
                                         UQ_EMU_SITE) {
  return emu::detail::atomic_add_u64(addr, value, UQ_EMU_AT);
}

}  // namespace uq::gfx950

#undef UQ_EMU_SITE
#undef UQ_EMU_AT
