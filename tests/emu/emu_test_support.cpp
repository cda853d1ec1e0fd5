#include "emu_test_support.hpp"

namespace emu_test {

double minifloat_value(unsigned code, int exponent_bits, int mantissa_bits, int bias) {
  const unsigned total = 1 + exponent_bits + mantissa_bits;
  const bool negative = (code >> (total - 1)) & 1u;
  const unsigned e = (code >> mantissa_bits) & ((1u << exponent_bits) - 1u);
  const unsigned m = code & ((1u << mantissa_bits) - 1u);
  const double fraction = static_cast<double>(m) / static_cast<double>(1u << mantissa_bits);
  const double magnitude = e == 0 ? fraction * std::pow(2.0, 1 - bias)
                                  : (1.0 + fraction) * std::pow(2.0, static_cast<int>(e) - bias);
  return negative ? -magnitude : magnitude;
}

double fp8_value(std::uint8_t code) { return uqref::e4m3_value(code); }

double bf8_value(std::uint8_t code) {
  const unsigned e = (code >> 2) & 31u;
  if (e == 31) {
    if ((code & 3u) != 0) return std::numeric_limits<double>::quiet_NaN();
    return (code & 0x80u) ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity();
  }
  return minifloat_value(code, 5, 2, 15);
}

double fp6_value(std::uint8_t code) { return minifloat_value(code & 0x3Fu, 2, 3, 1); }
double bf6_value(std::uint8_t code) { return minifloat_value(code & 0x3Fu, 3, 2, 3); }
double fp4_value(std::uint8_t code) { return uqref::e2m1_value(code & 0xFu); }

double format_value(int format, unsigned code) {
  switch (format) {
    case kFp8: return fp8_value(static_cast<std::uint8_t>(code));
    case kBf8: return bf8_value(static_cast<std::uint8_t>(code));
    case kFp6: return fp6_value(static_cast<std::uint8_t>(code));
    case kBf6: return bf6_value(static_cast<std::uint8_t>(code));
    default: return fp4_value(static_cast<std::uint8_t>(code));
  }
}

int format_bits(int format) {
  if (format == kFp8 || format == kBf8) return 8;
  if (format == kFp6 || format == kBf6) return 6;
  return 4;
}

double e8m0_value(unsigned e) {
  if (e == 255) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(e) - 127);
}

int f8f6f4_k(int format, int g, int j) {
  if (format_bits(format) == 8) {
    // lanes 0-15: k 0-15 & 64-79; 16-31: 16-31 & 80-95; 32-47: 32-47 & 96-111;
    // 48-63: 48-63 & 112-127 (spec §1.3)
    static const int first[4] = {0, 16, 32, 48};
    static const int second[4] = {64, 80, 96, 112};
    return j < 16 ? first[g] + j : second[g] + (j - 16);
  }
  return 32 * g + j;  // fp6 / fp4: 32 contiguous K per lane group
}

i32x8 pack_items(int format, const unsigned* codes) {
  // Items are consecutive bit fields of `bits` bits from bit 0 of dword 0 upwards.
  const int bits = format_bits(format);
  std::uint32_t words[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int j = 0; j < 32; ++j) {
    for (int b = 0; b < bits; ++b) {
      const int bit = bits * j + b;
      words[bit / 32] |= ((codes[j] >> b) & 1u) << (bit % 32);
    }
  }
  i32x8 v;
  for (int i = 0; i < 8; ++i) v[i] = static_cast<std::int32_t>(words[i]);
  return v;
}

}  // namespace emu_test
