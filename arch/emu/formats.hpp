// The emulator's scalar formats (docs/gfx950-isa.md §1.2, §5, §6): exact decoding to double
// and the gfx950 conversions' rounding (RNE) and overflow rules.
#pragma once

#include <cstdint>

namespace uq::emu::formats {

// ---- decoding (exact; -0 kept)
double fp8_e4m3(std::uint8_t code);  // OCP e4m3fn: bias 7, no Inf, 0x7F/0xFF NaN, max 448
double bf8_e5m2(std::uint8_t code);  // OCP e5m2: bias 15, Inf S.11111.00, NaN S.11111.{01,10,11}
double fp6_e2m3(std::uint8_t code);  // 6 bits: bias 1, no Inf/NaN, max 7.5
double bf6_e3m2(std::uint8_t code);  // 6 bits: bias 3, no Inf/NaN, max 28
double fp4_e2m1(std::uint8_t code);  // 4 bits: bias 1, {0, .5, 1, 1.5, 2, 3, 4, 6}, 8 = -0
double e8m0(std::uint8_t code);      // 2^(e-127); 0 = 2^-127; 255 = NaN
float bf16(std::uint16_t bits);

// ---- encoding
// V_CVT_PK_FP8_F32 (FP16_OVFL = 0): RNE; magnitude above 448 after rounding, and +-Inf,
// give NaN 0x7F | sign; NaN gives 0x7F | sign.
std::uint8_t e4m3_from_float(float x);
// The E2M1 quantiser of V_CVT_SCALEF32_PK_FP4_F32 applied to y = x / scale: RNE, saturate to
// +-6, sign of zero kept; NaN and Inf give +-6.
std::uint8_t e2m1_from_double(double y);
// fp32 -> bf16, RNE; NaN stays NaN (quiet, sign kept).
std::uint16_t bf16_from_float(float x);

}  // namespace uq::emu::formats
