// Per-lane conversions and arithmetic (spec §5, §6; v_perm_b32, v_exp_f32): pure functions
// of their operands, no rendezvous.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "emu/emulator.hpp"
#include "formats.hpp"
#include "gfx950/isa.hpp"

namespace uq::emu::detail {
namespace {

// The E8M0 exponent the scaled conversions take from their float operand (spec §5.2).
int scale_exponent(float scale) {
  std::uint32_t u;
  std::memcpy(&u, &scale, sizeof u);
  return static_cast<int>((u >> 23) & 0xFFu);
}

// fp4 code * 2^(E-127) rounded to float (exact unless it overflows to +-Inf); E = 255: NaN
// with the sign of the code.
float dequant_fp4(unsigned code, int exponent) {
  const double v = formats::fp4_e2m1(static_cast<std::uint8_t>(code));
  if (exponent == 255) return std::copysign(std::nanf(""), static_cast<float>(v));
  return static_cast<float>(std::ldexp(v, exponent - 127));
}

}  // namespace

std::uint32_t cvt_scalef32_pk_bf16_fp4(std::uint32_t src, float scale, int sel) {
  const unsigned byte = (src >> (8 * sel)) & 0xFFu;
  const int e = scale_exponent(scale);
  const std::uint16_t lo = formats::bf16_from_float(dequant_fp4(byte & 0xFu, e));
  const std::uint16_t hi = formats::bf16_from_float(dequant_fp4(byte >> 4, e));
  return static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
}

gfx950::f32x2 cvt_scalef32_pk_f32_fp4(std::uint32_t src, float scale, int sel) {
  const unsigned byte = (src >> (8 * sel)) & 0xFFu;
  const int e = scale_exponent(scale);
  return gfx950::f32x2{dequant_fp4(byte & 0xFu, e), dequant_fp4(byte >> 4, e)};
}

std::uint32_t cvt_scalef32_pk_fp4_f32(std::uint32_t old, float a, float b, float scale, int sel) {
  const int e = scale_exponent(scale);
  // y = x / 2^(E-127): an exponent subtraction, exact in double (E = 255: NaN -> +-6).
  const auto quant = [e](float x) {
    const double y = e == 255 ? std::copysign(std::nan(""), static_cast<double>(x))
                              : std::ldexp(static_cast<double>(x), 127 - e);
    return static_cast<std::uint32_t>(formats::e2m1_from_double(y));
  };
  const std::uint32_t byte = quant(a) | (quant(b) << 4);
  const std::uint32_t shift = 8u * static_cast<std::uint32_t>(sel);
  return (old & ~(0xFFu << shift)) | (byte << shift);
}

std::uint32_t cvt_pk_fp8_f32(float a, float b, std::uint32_t old, bool high_word) {
  const std::uint32_t word = static_cast<std::uint32_t>(formats::e4m3_from_float(a)) |
                             (static_cast<std::uint32_t>(formats::e4m3_from_float(b)) << 8);
  return high_word ? (old & 0x0000FFFFu) | (word << 16) : (old & 0xFFFF0000u) | word;
}

gfx950::f32x2 cvt_pk_f32_fp8(std::uint32_t src, bool high_word) {
  const std::uint32_t word = high_word ? src >> 16 : src & 0xFFFFu;
  return gfx950::f32x2{static_cast<float>(formats::fp8_e4m3(word & 0xFFu)),
                       static_cast<float>(formats::fp8_e4m3(word >> 8))};
}

std::uint32_t cvt_pk_bf16_f32(float lo, float hi) {
  return static_cast<std::uint32_t>(formats::bf16_from_float(lo)) |
         (static_cast<std::uint32_t>(formats::bf16_from_float(hi)) << 16);
}

std::uint32_t perm_b32(std::uint32_t hi, std::uint32_t lo, std::uint32_t sel) {
  const std::uint64_t data = (static_cast<std::uint64_t>(hi) << 32) | lo;
  const auto byte = [data](unsigned i) { return static_cast<std::uint32_t>((data >> (8 * i)) & 0xFFu); };
  const auto sign_fill = [&byte](unsigned i) { return (byte(i) & 0x80u) ? 0xFFu : 0x00u; };
  std::uint32_t out = 0;
  for (unsigned i = 0; i < 4; ++i) {
    const unsigned s = (sel >> (8 * i)) & 0xFFu;
    std::uint32_t r;
    if (s >= 13) {
      r = 0xFF;
    } else if (s == 12) {
      r = 0x00;
    } else if (s >= 8) {
      r = sign_fill(2 * (s - 8) + 1);  // 8, 9, 10, 11: sign of byte 1, 3, 5, 7
    } else {
      r = byte(s);
    }
    out |= r << (8 * i);
  }
  return out;
}

namespace {

Exp2Mode initial_exp2_mode() {
  const char* v = std::getenv("UQ_EMU_EXP2");
  return v != nullptr && std::strcmp(v, "perturbed") == 0 ? Exp2Mode::PerturbedUlp : Exp2Mode::CorrectlyRounded;
}

Exp2Mode& exp2_mode_ref() {
  static Exp2Mode mode = initial_exp2_mode();
  return mode;
}

// A fixed mix of the argument's bits (the splitmix64 finaliser's constants): which way the
// perturbed exp2 moves is a deterministic function of x.
bool perturb_up(float x) {
  std::uint64_t h = static_cast<std::uint64_t>(bits32(x)) + 0x9E3779B97F4A7C15ull;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return ((h ^ (h >> 31)) & 1u) != 0;
}

}  // namespace

float fast_exp2(float x) {
  float r = static_cast<float>(std::exp2(static_cast<double>(x)));
  if (exp2_mode_ref() == Exp2Mode::PerturbedUlp && std::isfinite(r) && r > 0.0f)
    r = std::nextafter(r, perturb_up(x) ? std::numeric_limits<float>::infinity() : 0.0f);
  // v_exp_f32 produces no denormals: results below the smallest normal flush to +0.
  if (std::isfinite(r) && r < 0x1p-126f) return 0.0f;
  return r;
}

}  // namespace uq::emu::detail

namespace uq::emu {
Exp2Mode exp2_mode() { return detail::exp2_mode_ref(); }
void set_exp2_mode(Exp2Mode mode) { detail::exp2_mode_ref() = mode; }
}  // namespace uq::emu
