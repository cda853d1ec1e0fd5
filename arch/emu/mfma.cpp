// MFMA rendezvous (spec §1, §2): the last lane gathers A, B, C and the scales of all 64
// lanes with the documented layouts, computes every D element as one exact double sum
// (products of these formats are exact in double; the hardware's internal accumulation
// order is unknown, see README) rounded once to fp32, and scatters D back.
#include <cmath>
#include <string>

#include "formats.hpp"
#include "state.hpp"

namespace uq::emu::detail {
namespace {

using gfx950::f32x4;
using gfx950::i16x4;
using gfx950::i16x8;
using gfx950::i32x8;

constexpr int kM = 16, kN = 16, kK = 128;

struct F8F6F4Operand {
  F8F6F4Call call;
  const i32x8* a;
  const i32x8* b;
  const f32x4* c;
  std::int32_t scale_a, scale_b;
};

template <class V>
std::uint32_t dword(const V& v, int i) {
  return static_cast<std::uint32_t>(v[i]);
}

// Decoded values of every code of every format (index: format, code), built once.
struct CodeTables {
  double value[5][256];
  double e8m0[256];
  CodeTables() {
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      value[gfx950::kFp8][c] = formats::fp8_e4m3(code);
      value[gfx950::kBf8][c] = formats::bf8_e5m2(code);
      value[gfx950::kFp6][c] = formats::fp6_e2m3(code & 0x3F);
      value[gfx950::kBf6][c] = formats::bf6_e3m2(code & 0x3F);
      value[gfx950::kFp4][c] = formats::fp4_e2m1(code & 0x0F);
      e8m0[c] = formats::e8m0(code);
    }
  }
};
const CodeTables& tables() {
  static const CodeTables t;
  return t;
}

// Code of item j (0..31) of one lane's f8f6f4 operand.
unsigned item_code(const i32x8& v, int format, int j) {
  switch (format) {
    case gfx950::kFp8:
    case gfx950::kBf8:
      return (dword(v, j / 4) >> (8 * (j % 4))) & 0xFFu;
    case gfx950::kFp6:
    case gfx950::kBf6: {
      // Dwords 0..5 as one little-endian 192-bit value; item j = bits 6j .. 6j+5.
      const int bit = 6 * j, word = bit / 32, shift = bit % 32;
      std::uint64_t pair = dword(v, word);
      if (word + 1 < 6) pair |= static_cast<std::uint64_t>(dword(v, word + 1)) << 32;
      return static_cast<unsigned>((pair >> shift) & 0x3Fu);
    }
    default:  // kFp4: item j = nibble j, low nibble of each byte first
      return (dword(v, j / 8) >> (4 * (j % 8))) & 0xFu;
  }
}

// K index of item j held by a lane of group g.
int k_of(int format, int g, int j) {
  if (format == gfx950::kFp8 || format == gfx950::kBf8) {
    return j < 16 ? 16 * g + j : 64 + 16 * g + (j - 16);
  }
  return 32 * g + j;
}

// C element (m, n) lives in lane 16 * (m / 4) + n, element m % 4; likewise D.
double c_element(const Wave& w, int m, int n) {
  const auto& op = *static_cast<const F8F6F4Operand*>(w.operand[16 * (m / 4) + n]);
  return (*op.c)[m % 4];
}

std::string nonuniform_message(const Wave& w) {
  return "uq::emu: " + std::string(w.op) + " at " + where(w.site) +
         ": lanes disagree on the formats or op_sel (they must be constants)";
}

void f8f6f4_compute(Wave& w) {
  Launch& L = launch_state();
  const auto& first = *static_cast<const F8F6F4Operand*>(w.operand[0]);
  const F8F6F4Call call = first.call;
  double* A = L.mfma_a.data();   // [m][k]
  double* Bt = L.mfma_b.data();  // [n][k]: contiguous in k like A
  const CodeTables& t = tables();
  int scale_a[kLanes], scale_b[kLanes];
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    const auto& op = *static_cast<const F8F6F4Operand*>(w.operand[l]);
    if (op.call.fmt_a != call.fmt_a || op.call.fmt_b != call.fmt_b ||
        op.call.scaled != call.scaled || op.call.opsel_a != call.opsel_a ||
        op.call.opsel_b != call.opsel_b) {
      fault(nonuniform_message(w));
    }
    const int g = static_cast<int>(l) >> 4, r = static_cast<int>(l) & 15;
    for (int j = 0; j < 32; ++j) {
      A[r * kK + k_of(call.fmt_a, g, j)] = t.value[call.fmt_a][item_code(*op.a, call.fmt_a, j)];
      Bt[r * kK + k_of(call.fmt_b, g, j)] = t.value[call.fmt_b][item_code(*op.b, call.fmt_b, j)];
    }
    // The unscaled instruction forces every scale to 1.0 (E8M0 127).
    scale_a[l] = call.scaled ? static_cast<int>((static_cast<std::uint32_t>(op.scale_a) >>
                                                 (8 * call.opsel_a)) & 0xFFu)
                             : 127;
    scale_b[l] = call.scaled ? static_cast<int>((static_cast<std::uint32_t>(op.scale_b) >>
                                                 (8 * call.opsel_b)) & 0xFFu)
                             : 127;
  }
  for (int m = 0; m < kM; ++m) {
    const double* a_row = A + m * kK;
    for (int n = 0; n < kN; ++n) {
      const double* b_col = Bt + n * kK;
      double sum = c_element(w, m, n);
      for (int kb = 0; kb < 4; ++kb) {
        double block = 0.0;
        for (int k = 32 * kb; k < 32 * kb + 32; ++k) block += a_row[k] * b_col[k];
        sum += t.e8m0[scale_a[16 * kb + m]] * t.e8m0[scale_b[16 * kb + n]] * block;
      }
      auto& d = *static_cast<f32x4*>(w.result[16 * (m / 4) + n]);
      d[m % 4] = static_cast<float>(sum);
    }
  }
}

// bf16 MFMAs: lane l holds A[r][kl*g + t] and B[kl*g + t][r], kl = K / 4.
template <class V, int K>
struct Bf16Operand {
  const V* a;
  const V* b;
  const f32x4* c;
};

template <class V, int K>
void bf16_compute(Wave& w) {
  constexpr int per_lane = K / 4;
  double A[kM][K], B[K][kN];
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    const auto& op = *static_cast<const Bf16Operand<V, K>*>(w.operand[l]);
    const int g = static_cast<int>(l) >> 4, r = static_cast<int>(l) & 15;
    for (int t = 0; t < per_lane; ++t) {
      A[r][per_lane * g + t] = formats::bf16(static_cast<std::uint16_t>((*op.a)[t]));
      B[per_lane * g + t][r] = formats::bf16(static_cast<std::uint16_t>((*op.b)[t]));
    }
  }
  for (int m = 0; m < kM; ++m) {
    for (int n = 0; n < kN; ++n) {
      const auto& cop = *static_cast<const Bf16Operand<V, K>*>(w.operand[16 * (m / 4) + n]);
      double sum = (*cop.c)[m % 4];
      for (int k = 0; k < K; ++k) sum += A[m][k] * B[k][n];
      auto& d = *static_cast<f32x4*>(w.result[16 * (m / 4) + n]);
      d[m % 4] = static_cast<float>(sum);
    }
  }
}

}  // namespace

f32x4 mfma_f8f6f4(const F8F6F4Call& call, const i32x8& a, const i32x8& b, const f32x4& c,
                  std::int32_t scale_a, std::int32_t scale_b, Site at) {
  const F8F6F4Operand operand{call, &a, &b, &c, scale_a, scale_b};
  f32x4 d;
  rendezvous(call.scaled ? "v_mfma_scale_f32_16x16x128_f8f6f4" : "v_mfma_f32_16x16x128_f8f6f4",
             at, &f8f6f4_compute, &operand, &d);
  return d;
}

f32x4 mfma_bf16_k16(const i16x4& a, const i16x4& b, const f32x4& c, Site at) {
  const Bf16Operand<i16x4, 16> operand{&a, &b, &c};
  f32x4 d;
  rendezvous("v_mfma_f32_16x16x16_bf16", at, &bf16_compute<i16x4, 16>, &operand, &d);
  return d;
}

f32x4 mfma_bf16_k32(const i16x8& a, const i16x8& b, const f32x4& c, Site at) {
  const Bf16Operand<i16x8, 32> operand{&a, &b, &c};
  f32x4 d;
  rendezvous("v_mfma_f32_16x16x32_bf16", at, &bf16_compute<i16x8, 32>, &operand, &d);
  return d;
}

}  // namespace uq::emu::detail
