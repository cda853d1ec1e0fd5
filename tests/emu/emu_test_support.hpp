// Shared helpers of the emulator tests: launching one-wave kernels, poisoning, the float64
// format decoders the tests compare with (written from docs/gfx950-isa.md §1.2 and the OCP
// definitions, independently of arch/emu/formats.cpp; the formats the project's reference
// already has come from reference/, namespace uqref).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "emu/emulator.hpp"
#include "gfx950/isa.hpp"
#include "uqref_formats.hpp"

namespace emu_test {

using namespace uq::gfx950;

inline float f32_from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
// An E8M0 byte e as the float the scaled converts take (bits e << 23).
inline float e8m0_as_float(unsigned e) { return f32_from_bits(static_cast<std::uint32_t>(e) << 23); }

// A value no kernel writes, to detect outputs left unwritten.
constexpr std::uint32_t kPoison = 0x7FBADBADu;  // a NaN payload
inline float poison_float() { return f32_from_bits(kPoison); }

// One wave of one workgroup: body() is every lane's kernel.
template <class Body>
void run_one_wave(Body&& body) {
  uq::emu::LaunchConfig config;
  uq::emu::launch(config, std::forward<Body>(body));
}

// The message of the uq::emu::Fault a launch throws ("" when it does not fault).
template <class Body>
std::string fault_of(const uq::emu::LaunchConfig& config, Body&& body) {
  try {
    uq::emu::launch(config, std::forward<Body>(body));
  } catch (const uq::emu::Fault& f) {
    return f.what();
  }
  return "";
}

// ---------------------------------------------------------------- float64 format values
// Formats of the f8f6f4 MFMA (spec §1.2), from their definitions: sign, exponent field e,
// mantissa field m, value (1 + m/2^M) 2^(e - bias) or, for e = 0, (m/2^M) 2^(1 - bias).
double minifloat_value(unsigned code, int exponent_bits, int mantissa_bits, int bias);
double fp8_value(std::uint8_t code);        // E4M3 (OCP e4m3fn): uqref::e4m3_value
double bf8_value(std::uint8_t code);        // E5M2 with Inf / NaN
double fp6_value(std::uint8_t code);        // E2M3
double bf6_value(std::uint8_t code);        // E3M2
double fp4_value(std::uint8_t code);        // E2M1: uqref::e2m1_value
double format_value(int format, unsigned code);  // by MfmaFormat
int format_bits(int format);                     // 8, 6 or 4
// The E8M0 block scale of the scaled MFMA: 2^(e-127), e = 255 NaN (0 is 2^-127, not zero).
double e8m0_value(unsigned e);

// ---------------------------------------------------------------- operand packing
// The f8f6f4 MFMA register layout of spec §1.3 as the test understands it: which K index
// the item j (0..31) of a lane of group g holds.
int f8f6f4_k(int format, int g, int j);
// Packs 32 codes (item order) into the low dwords of an i32x8.
i32x8 pack_items(int format, const unsigned* codes);

inline std::mt19937& rng() {
  static std::mt19937 gen(20250611u);
  return gen;
}

}  // namespace emu_test
