// The fast Walsh-Hadamard transform of ultraquant.md §3, in fp32 and in the spec's order.
#include "uqref_ultraquant.hpp"

namespace uqref {

void wht256_fp32(const float* in, float* out) {
  float x[256];
  for (int i = 0; i < 256; ++i) x[i] = in[i];
  for (int s = 0; s < 8; ++s) {
    const int stride = 1 << s;
    for (int i = 0; i < 256; ++i) {
      if (i & stride) continue;  // i is the lower element of its pair
      const float a = x[i];
      const float b = x[i + stride];
      x[i] = a + b;  // fp32 add and subtract: the spec fixes this rounding
      x[i + stride] = a - b;
    }
  }
  const float one_16th = 0.0625f;
  for (int i = 0; i < 256; ++i) out[i] = x[i] * one_16th;
}

}  // namespace uqref
