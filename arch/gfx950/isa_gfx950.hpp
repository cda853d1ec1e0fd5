// gfx950 implementation of isa.hpp: clang-22 builtins only (no HIP runtime header, no
// threadIdx). Include arch/gfx950/isa.hpp, never this file.
//
// Notation of the comments (docs/gfx950-isa.md): l = lane 0..63, g = l >> 4 (lane group),
// r = l & 15. "UNCONFIRMED" marks the spec's working hypotheses (no gfx950 hardware was
// available); the emulator implements the same hypotheses.
#pragma once

#if !defined(__clang__)
#error "isa_gfx950.hpp needs clang (HIP for gfx950)"
#endif

namespace uq::gfx950 {
namespace detail {

typedef float v4f32 __attribute__((ext_vector_type(4)));
typedef __bf16 v8bf16 __attribute__((ext_vector_type(8)));
typedef __bf16 v2bf16 __attribute__((ext_vector_type(2)));

// An LDS (address space 3) object of type T that may alias any other type: kernels store a
// 16-byte vector and read its dwords back, which type-based alias analysis must not reorder.
template <class T>
struct Lds {
  typedef __attribute__((address_space(3))) T __attribute__((may_alias)) object;
};

template <class T>
UQ_ISA_FN std::uint32_t bits32(T v) {
  static_assert(sizeof(T) == 4, "cross-lane operations move 32-bit values");
  return __builtin_bit_cast(std::uint32_t, v);
}

}  // namespace detail

// ================================================================ ids
// Lane 0..63 within the wave (v_mbcnt_lo/hi over an all-ones mask).
UQ_ISA_FN std::uint32_t lane_id() {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
// Work-item index within the workgroup, 0 .. 64*W-1 (wave w holds 64w .. 64w+63).
UQ_ISA_FN std::uint32_t thread_id() { return __builtin_amdgcn_workitem_id_x(); }
// Wave index within the workgroup, wave-uniform (an SGPR through v_readfirstlane).
UQ_ISA_FN std::uint32_t wave_id() {
  return static_cast<std::uint32_t>(
      __builtin_amdgcn_readfirstlane(static_cast<int>(__builtin_amdgcn_workitem_id_x() >> 6)));
}
UQ_ISA_FN std::uint32_t workgroup_id_x() { return __builtin_amdgcn_workgroup_id_x(); }
UQ_ISA_FN std::uint32_t workgroup_id_y() { return __builtin_amdgcn_workgroup_id_y(); }
UQ_ISA_FN std::uint32_t workgroup_id_z() { return __builtin_amdgcn_workgroup_id_z(); }

// ================================================================ synchronisation
// Workgroup barrier (s_barrier) with workgroup-scope release/acquire fences, i.e. what
// __syncthreads() does: LDS and global writes before it are visible to every wave after it.
UQ_ISA_FN void barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// Wave-level ordering point: LDS operations of one wave execute in order, so a lane may read
// what another lane of its wave wrote before this point. Emits no instruction; it stops the
// compiler from moving memory operations across (the emulator makes it a wave rendezvous).
UQ_ISA_FN void wave_barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
// s_waitcnt with a raw immediate (e.g. 0xC07F = lgkmcnt(0)); scheduling only, no semantics
// a correct program can observe beyond what the compiler already inserts.
template <int Imm>
UQ_ISA_FN void s_waitcnt() {
  __builtin_amdgcn_s_waitcnt(Imm);
}
// Scheduling fence for the compiler's instruction scheduler (0 = nothing crosses).
template <int Mask>
UQ_ISA_FN void sched_barrier() {
  __builtin_amdgcn_sched_barrier(Mask);
}

// ================================================================ LDS
// Reserves Bytes of the workgroup's LDS (16-byte aligned) and returns its byte address.
// Every call of one <Bytes, Tag> instantiation returns the same region (it is a static
// __shared__ array), so call it anywhere; use distinct Tags for distinct regions. The
// kernel's LDS size is the sum of its instantiations (code object .group_segment_fixed_size).
template <std::uint32_t Bytes, class Tag = void>
UQ_ISA_FN std::uint32_t lds_allocate() {
  static_assert(Bytes > 0 && Bytes <= kMaxLdsBytes, "lds_allocate: 1 .. 160 KiB");
  __attribute__((shared)) static __attribute__((aligned(16))) unsigned char storage[Bytes];
  typedef __attribute__((address_space(3))) unsigned char lds_byte;
  return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>((lds_byte*)storage));
}
// ds_read_b8/u16/b32/b64/b128 (by sizeof(T) = 1, 2, 4, 8, 16) at LDS byte address `addr`,
// which must be aligned to sizeof(T) (the typed access tells the compiler so).
template <class T>
UQ_ISA_FN T lds_load(std::uint32_t addr) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 ||
                    sizeof(T) == 16,
                "lds_load: 1, 2, 4, 8 or 16 bytes");
  return *(const typename detail::Lds<T>::object*)(std::uintptr_t)addr;
}
// ds_write_b8/b16/b32/b64/b128, same rules.
template <class T>
UQ_ISA_FN void lds_store(std::uint32_t addr, const T& value) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 ||
                    sizeof(T) == 16,
                "lds_store: 1, 2, 4, 8 or 16 bytes");
  *(typename detail::Lds<T>::object*)(std::uintptr_t)addr = value;
}
// ds_read_b64_tr_b16 (spec §3.2): a transposing 8-byte read in 16-lane groups G = l >> 4.
// Lane l reads W[l][e] = LDS16[addr_l + 2e], e = 0..3; result element j of lane 16G + d is
//   R[16G + d][j] = W[16G + 4j + (d >> 2)][d & 3]   ("4x16 -> 16x4").
// Recipe (§3.3): lane 16G + t addressing element (k = 4G + t/4, n = 4(t%4)) of a row-major
// 16-bit B[K][N] tile receives B[4g + j][r], the 16x16x16 bf16 MFMA B operand (likewise an A
// operand from an M-contiguous tile). Needs all 64 lanes active and addr % 8 == 0.
// UNCONFIRMED on silicon; consistent across four AMD-ecosystem sources.
UQ_ISA_FN i16x4 ds_read_b64_tr_b16(std::uint32_t addr) {
  typedef __attribute__((address_space(3))) i16x4 lds_i16x4;
  return __builtin_amdgcn_ds_read_tr16_b64_v4i16((lds_i16x4*)(std::uintptr_t)addr);
}

// ================================================================ buffer memory
// A raw buffer resource (V#, spec §7.1): base address, num_records = byte range, stride 0,
// data-format word kBufferResourceFlags. Keep it wave-uniform (it lives in SGPRs; a
// divergent one makes the compiler loop over its distinct values).
typedef __amdgpu_buffer_rsrc_t buffer_rsrc;
UQ_ISA_FN buffer_rsrc make_buffer_rsrc(const void* base, std::uint32_t num_bytes) {
  return __builtin_amdgcn_make_buffer_rsrc(const_cast<void*>(base), 0,
                                           static_cast<long long>(num_bytes),
                                           static_cast<int>(kBufferResourceFlags));
}
// Raw buffer loads (buffer_load_ubyte/ushort/dword/dwordx2/dwordx4 ... offen) at byte
// base + soffset + voffset. Range rule (spec §7.3): a dword component c is in range iff
// voffset + 4c < num_bytes (soffset is NOT checked; a voffset of 0x80000000 is out of
// range); out-of-range components read 0. Dword and wider accesses must be 4-byte aligned.
// Aux = cache policy bits (cache::kNt ...), a constant.
template <int Aux = cache::kDefault>
UQ_ISA_FN std::uint8_t buffer_load_b8(buffer_rsrc r, std::uint32_t voffset,
                                      std::uint32_t soffset = 0) {
  return __builtin_amdgcn_raw_buffer_load_b8(r, static_cast<int>(voffset),
                                             static_cast<int>(soffset), Aux);
}
template <int Aux = cache::kDefault>
UQ_ISA_FN std::uint16_t buffer_load_b16(buffer_rsrc r, std::uint32_t voffset,
                                        std::uint32_t soffset = 0) {
  return __builtin_amdgcn_raw_buffer_load_b16(r, static_cast<int>(voffset),
                                              static_cast<int>(soffset), Aux);
}
template <int Aux = cache::kDefault>
UQ_ISA_FN std::uint32_t buffer_load_b32(buffer_rsrc r, std::uint32_t voffset,
                                        std::uint32_t soffset = 0) {
  return __builtin_amdgcn_raw_buffer_load_b32(r, static_cast<int>(voffset),
                                              static_cast<int>(soffset), Aux);
}
template <int Aux = cache::kDefault>
UQ_ISA_FN u32x2 buffer_load_b64(buffer_rsrc r, std::uint32_t voffset,
                                std::uint32_t soffset = 0) {
  return __builtin_amdgcn_raw_buffer_load_b64(r, static_cast<int>(voffset),
                                              static_cast<int>(soffset), Aux);
}
template <int Aux = cache::kDefault>
UQ_ISA_FN u32x4 buffer_load_b128(buffer_rsrc r, std::uint32_t voffset,
                                 std::uint32_t soffset = 0) {
  return __builtin_amdgcn_raw_buffer_load_b128(r, static_cast<int>(voffset),
                                               static_cast<int>(soffset), Aux);
}
// Raw buffer stores, same addressing; out-of-range components are dropped.
template <int Aux = cache::kDefault>
UQ_ISA_FN void buffer_store_b8(std::uint8_t v, buffer_rsrc r, std::uint32_t voffset,
                               std::uint32_t soffset = 0) {
  __builtin_amdgcn_raw_buffer_store_b8(v, r, static_cast<int>(voffset),
                                       static_cast<int>(soffset), Aux);
}
template <int Aux = cache::kDefault>
UQ_ISA_FN void buffer_store_b16(std::uint16_t v, buffer_rsrc r, std::uint32_t voffset,
                                std::uint32_t soffset = 0) {
  __builtin_amdgcn_raw_buffer_store_b16(v, r, static_cast<int>(voffset),
                                        static_cast<int>(soffset), Aux);
}
template <int Aux = cache::kDefault>
UQ_ISA_FN void buffer_store_b32(std::uint32_t v, buffer_rsrc r, std::uint32_t voffset,
                                std::uint32_t soffset = 0) {
  __builtin_amdgcn_raw_buffer_store_b32(v, r, static_cast<int>(voffset),
                                        static_cast<int>(soffset), Aux);
}
template <int Aux = cache::kDefault>
UQ_ISA_FN void buffer_store_b64(const u32x2& v, buffer_rsrc r, std::uint32_t voffset,
                                std::uint32_t soffset = 0) {
  __builtin_amdgcn_raw_buffer_store_b64(v, r, static_cast<int>(voffset),
                                        static_cast<int>(soffset), Aux);
}
template <int Aux = cache::kDefault>
UQ_ISA_FN void buffer_store_b128(const u32x4& v, buffer_rsrc r, std::uint32_t voffset,
                                 std::uint32_t soffset = 0) {
  __builtin_amdgcn_raw_buffer_store_b128(v, r, static_cast<int>(voffset),
                                         static_cast<int>(soffset), Aux);
}

// ================================================================ MFMA
// v_mfma_scale_f32_16x16x128_f8f6f4 (spec §1): D = C + A(16x128) * B(128x16) with E8M0 block
// scales, formats FmtA (cbsz) / FmtB (blgp) from MfmaFormat. Lane l holds row m = r of A and
// column n = r of B:
//   fp8/bf8 (8 dwords): byte j -> k = 16g + j (j < 16), 64 + 16g + (j - 16) (j >= 16);
//   fp6/bf6 (dwords 0..5 as one 192-bit value, item j = bits 6j..6j+5): k = 32g + j;
//   fp4 (dwords 0..3, item j = nibble j, low nibble of each byte first): k = 32g + j.
// Unused trailing dwords are ignored. D/C: element i of lane l is D[4g + i][r].
// Scales: the byte OpselA of scale_a is eA(l); A row m, K block kb = [32kb, 32kb+32) uses
// eA(16kb + m) (likewise B column n uses eB(16kb + n)); E8M0 e means 2^(e-127), 0 = 2^-127,
// 255 = NaN:  D[m][n] = C[m][n] + sum_kb 2^(eA-127) 2^(eB-127) sum_{k in kb} A[m][k] B[k][n].
// Accumulation order/precision inside the unit: UNCONFIRMED (the emulator sums exactly in
// double and rounds once to fp32).
// Literal-zero rule (spec §1.5): LLVM emits the *unscaled* instruction (all scales 1.0) when
// both scales are compile-time zeros. This function always means the scaled instruction, so
// when the optimiser can prove both scales are 0 it hides one from constant folding (an empty
// asm, no instruction); call mfma_f32_16x16x128_f8f6f4 for the unscaled product.
template <int FmtA, int FmtB, int OpselA = 0, int OpselB = 0>
UQ_ISA_FN f32x4 mfma_scale_f32_16x16x128_f8f6f4(const i32x8& a, const i32x8& b, const f32x4& c,
                                                std::int32_t scale_a, std::int32_t scale_b) {
  static_assert(FmtA >= kFp8 && FmtA <= kFp4 && FmtB >= kFp8 && FmtB <= kFp4, "format 0..4");
  static_assert(OpselA >= 0 && OpselA <= 3 && OpselB >= 0 && OpselB <= 3, "opsel 0..3");
  if (__builtin_constant_p(scale_a) && __builtin_constant_p(scale_b) && scale_a == 0 &&
      scale_b == 0) {
    __asm__("" : "+v"(scale_a));
  }
  return __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a, b, c, FmtA, FmtB, OpselA, scale_a,
                                                          OpselB, scale_b);
}
// v_mfma_f32_16x16x128_f8f6f4: the same product without scales (hardware scales forced to
// 1.0; the builtin with literal zero scales). Layouts as above.
template <int FmtA, int FmtB>
UQ_ISA_FN f32x4 mfma_f32_16x16x128_f8f6f4(const i32x8& a, const i32x8& b, const f32x4& c) {
  static_assert(FmtA >= kFp8 && FmtA <= kFp4 && FmtB >= kFp8 && FmtB <= kFp4, "format 0..4");
  return __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a, b, c, FmtA, FmtB, 0, 0, 0, 0);
}
// v_mfma_f32_16x16x16_bf16 (spec §2): lane l holds A[r][4g + t] and B[4g + t][r] as element
// t = 0..3 (raw bf16 bits); D as above. Accumulation order UNCONFIRMED.
UQ_ISA_FN f32x4 mfma_f32_16x16x16_bf16(const i16x4& a, const i16x4& b, const f32x4& c) {
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
}
// v_mfma_f32_16x16x32_bf16 (spec §2, gfx950 only): lane l holds A[r][8g + t] and B[8g + t][r]
// as element t = 0..7.
UQ_ISA_FN f32x4 mfma_f32_16x16x32_bf16(const i16x8& a, const i16x8& b, const f32x4& c) {
  return __builtin_amdgcn_mfma_f32_16x16x32_bf16(__builtin_bit_cast(detail::v8bf16, a),
                                                 __builtin_bit_cast(detail::v8bf16, b), c, 0, 0,
                                                 0);
}

// ================================================================ cross-lane
// Cross-lane operations must be reached by all 64 lanes together (wave-uniform control flow;
// mask with predicates, not branches): EXEC is then all ones.
//
// ds_swizzle_b32 with a constant pattern (spec §4; encoders in isa.hpp): lane i receives the
// value of lane j(i); bitmask, quad-perm, rotate (wrap within 32-lane halves: UNCONFIRMED)
// and FFT modes. Runs on the LDS pipe but touches no LDS memory.
template <std::uint16_t Pattern, class T>
UQ_ISA_FN T ds_swizzle(T v) {
  const int r = __builtin_amdgcn_ds_swizzle(static_cast<int>(detail::bits32(v)), Pattern);
  return __builtin_bit_cast(T, r);
}
// Lane l receives lane l ^ Mask's value (Mask 1..63). Mask < 32: ds_swizzle bitmask
// (SWAP). Mask 32: v_permlane32_swap_b32 of the value with itself (rows 2,3 of the first
// operand swap with rows 0,1 of the second: the first result holds the lower half's values
// in every row, the second the upper half's); a lane whose first result is still its own
// value takes the second one (correct also when both halves hold equal values).
template <int Mask, class T>
UQ_ISA_FN T shfl_xor(T v) {
  static_assert(Mask >= 1 && Mask <= 63, "shfl_xor: mask 1..63");
  if constexpr (Mask < 32) {
    return ds_swizzle<swizzle_swap(Mask)>(v);
  } else if constexpr (Mask == 32) {
    const std::uint32_t x = detail::bits32(v);
    const auto swapped = __builtin_amdgcn_permlane32_swap(x, x, false, false);
    const std::uint32_t first = swapped[0];
    const std::uint32_t second = swapped[1];
    return __builtin_bit_cast(T, first == x ? second : first);
  } else {
    return shfl_xor<32>(shfl_xor<Mask - 32>(v));
  }
}
// ds_bpermute_b32: lane l receives the value of lane src_lane(l) & 63 (any pattern).
template <class T>
UQ_ISA_FN T shfl(T v, std::uint32_t src_lane) {
  const int r = __builtin_amdgcn_ds_bpermute(static_cast<int>(src_lane << 2),
                                             static_cast<int>(detail::bits32(v)));
  return __builtin_bit_cast(T, r);
}
// v_readfirstlane_b32: lane 0's value (all lanes are active), as a wave-uniform value.
template <class T>
UQ_ISA_FN T readfirstlane(T v) {
  return __builtin_bit_cast(T,
                            __builtin_amdgcn_readfirstlane(static_cast<int>(detail::bits32(v))));
}
// v_readlane_b32: the value of lane `lane` (wave-uniform, 0..63).
template <class T>
UQ_ISA_FN T readlane(T v, std::uint32_t lane) {
  return __builtin_bit_cast(
      T, __builtin_amdgcn_readlane(static_cast<int>(detail::bits32(v)), static_cast<int>(lane)));
}
// Wave ballot (v_cmp into an SGPR pair): bit l = pred of lane l.
UQ_ISA_FN std::uint64_t ballot(bool pred) { return __builtin_amdgcn_ballot_w64(pred); }

// ================================================================ conversions
// v_cvt_scalef32_pk_bf16_fp4 (spec §5.2): byte Sel of src holds two E2M1 codes; returns two
// bf16 (bits 0..15 = low nibble, bits 16..31 = high nibble) = fp4 * 2^(E - 127), E = the
// exponent field of `scale` (pass an E8M0 byte e as the float with bits e << 23). Exact;
// overflow (E >= 253) -> +-Inf; E = 255 -> NaN.
template <int Sel>
UQ_ISA_FN std::uint32_t cvt_scalef32_pk_bf16_fp4(std::uint32_t src, float scale) {
  static_assert(Sel >= 0 && Sel <= 3, "byte select 0..3");
  return __builtin_bit_cast(std::uint32_t,
                            __builtin_amdgcn_cvt_scalef32_pk_bf16_fp4(src, scale, Sel));
}
// v_cvt_scalef32_pk_f32_fp4: the same to two floats (x = low nibble).
template <int Sel>
UQ_ISA_FN f32x2 cvt_scalef32_pk_f32_fp4(std::uint32_t src, float scale) {
  static_assert(Sel >= 0 && Sel <= 3, "byte select 0..3");
  return __builtin_amdgcn_cvt_scalef32_pk_f32_fp4(src, scale, Sel);
}
// v_cvt_scalef32_pk_fp4_f32: quantises a / 2^(E-127) and b / 2^(E-127) to E2M1 (RNE,
// saturating to +-6, sign of zero kept) and writes {fp4(b) << 4 | fp4(a)} into byte Sel of
// `old` (other bytes kept). NaN/Inf -> +-6: UNCONFIRMED.
template <int Sel>
UQ_ISA_FN std::uint32_t cvt_scalef32_pk_fp4_f32(std::uint32_t old, float a, float b, float scale) {
  static_assert(Sel >= 0 && Sel <= 3, "byte select 0..3");
  return __builtin_amdgcn_cvt_scalef32_pk_fp4_f32(old, a, b, scale, Sel);
}
// v_cvt_pk_fp8_f32 (spec §6): OCP E4M3 (e4m3fn) with RNE; writes {fp8(b) << 8 | fp8(a)} into
// the low (HighWord = false) or high 16 bits of `old`. With the default FP16_OVFL = 0 mode a
// magnitude above 448 after rounding (and +-Inf) gives NaN (0x7F | sign), NOT saturation:
// clamp to +-448 first if saturation is wanted. (Rounding before the overflow test and the
// NaN's sign: UNCONFIRMED.)
template <bool HighWord>
UQ_ISA_FN std::uint32_t cvt_pk_fp8_f32(float a, float b, std::uint32_t old) {
  return static_cast<std::uint32_t>(
      __builtin_amdgcn_cvt_pk_fp8_f32(a, b, static_cast<int>(old), HighWord));
}
// v_cvt_pk_f32_fp8: the two E4M3 bytes of the selected 16-bit word to floats (x = low byte);
// exact; 0x7F/0xFF -> NaN.
template <bool HighWord>
UQ_ISA_FN f32x2 cvt_pk_f32_fp8(std::uint32_t src) {
  return __builtin_amdgcn_cvt_pk_f32_fp8(static_cast<int>(src), HighWord);
}
// v_cvt_pk_bf16_f32: two floats to bf16 (RNE), packed low = lo. NaN stays NaN (payload:
// UNCONFIRMED).
UQ_ISA_FN std::uint32_t cvt_pk_bf16_f32(float lo, float hi) {
  const detail::v2bf16 v = {static_cast<__bf16>(lo), static_cast<__bf16>(hi)};
  return __builtin_bit_cast(std::uint32_t, v);
}

// ================================================================ arithmetic
// v_perm_b32: byte i of the result = BYTE_PERMUTE({hi, lo}, byte i of sel): selector 0..3
// picks a byte of lo, 4..7 a byte of hi, 8/9/10/11 replicate the sign bit of byte 1/3/5/7,
// 12 gives 0x00, 13..255 give 0xFF.
UQ_ISA_FN std::uint32_t perm_b32(std::uint32_t hi, std::uint32_t lo, std::uint32_t sel) {
  return __builtin_amdgcn_perm(hi, lo, sel);
}
// v_exp_f32: 2^x, about 1 ulp (the emulator rounds correctly). Results below 2^-126 flush to
// +0 (the instruction does not produce denormals, which is why LLVM's accurate exp2 rescales
// around it): UNCONFIRMED on silicon.
UQ_ISA_FN float fast_exp2(float x) { return __builtin_amdgcn_exp2f(x); }

// ================================================================ global atomics
// global_atomic_add_x2: *addr += value as one 64-bit atomic read-modify-write at device
// (agent) scope, relaxed order; returns the previous value (without a use the compiler
// emits the no-return form). A per-lane operation: every active lane adds its own value (the
// compiler may combine the lanes of a wave that add a uniform value into one atomic). addr
// must be a global (not LDS) pointer aligned to 8 bytes.
UQ_ISA_FN unsigned long long atomic_add_u64(unsigned long long* addr, unsigned long long value) {
  return __hip_atomic_fetch_add(addr, value, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

}  // namespace uq::gfx950
