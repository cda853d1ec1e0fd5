// bf16 values as the reference takes them (uint16 bits), for the tests of reference/.
#pragma once

#include "uqref.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace uqtest {

// x rounded to bf16 (nearest even), as bits.
inline std::uint16_t bf(float x) { return uqref::bf16_round(x); }

// Random bf16 row values: normal(0, sigma) rounded to bf16.
inline std::vector<std::uint16_t> random_bf16(std::mt19937& rng, std::size_t n, double sigma) {
  std::normal_distribution<double> dist(0.0, sigma);
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = bf(static_cast<float>(dist(rng)));
  return v;
}

}  // namespace uqtest
