// Scalar formats of the float64 reference (spec ultraquant.md §1, nvfp4-index.md §1),
// written from the format definitions (sign, exponent and mantissa fields, value
// formulas, "nearest representable value, ties to even") in double arithmetic. The
// reference deliberately shares no code or technique with src/uq/types.hpp, which
// works on bit patterns: agreement between the two is evidence, not a tautology.
#pragma once

#include <cstdint>

namespace uqref {

// bf16 = binary32 without its low 16 bits: 1 sign, 8 exponent (bias 127), 7 mantissa bits.
// NaN patterns decode to a quiet NaN with the pattern's sign (the payload is not kept).
float bf16_value(std::uint16_t bits);

// float -> bf16, round to nearest, ties to even; overflow rounds to +-inf as IEEE does.
// NaN gives the canonical quiet NaN 0x7FC0 with the input's sign: the spec only asks that
// NaN stays NaN (quiet), so a payload-preserving encoder is equally correct and the codec
// tests compare NaN-ness, quietness and sign, not payload bits.
std::uint16_t bf16_round(float x);

// FP4 E2M1 code (low 4 bits used): bit 3 sign, bits 2..1 exponent, bit 0 mantissa;
// magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; code 8 is -0.0.
double e2m1_value(unsigned code);

// UE8M0 scale byte: 2^(b-127) for b in 1..254. b = 0 is the all-zero-group marker and
// gives 0.0 here (callers treat the whole group as 0). b = 255 is never written; the
// reference gives NaN for it (src may give +inf: the spec allows either).
double ue8m0_value(std::uint8_t b);

// OCP E4M3 (e4m3fn): 1 sign, 4 exponent (bias 7), 3 mantissa bits, no infinities, max
// finite 448 (0x7E), NaN = S.1111.111 (0x7F, 0xFF), subnormals m * 2^-9.
double e4m3_value(std::uint8_t b);

// double -> E4M3: the nearest finite E4M3 value, ties to the even code (mantissa bit 0);
// magnitudes beyond 448 (infinity included) saturate to +-448; NaN -> 0x7F | sign.
// The sign of zero is kept (-0.0 and negative values rounding to 0 give 0x80).
std::uint8_t e4m3_round(double x);

}  // namespace uqref
