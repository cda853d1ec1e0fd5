// Small helpers shared by the tests: deterministic random data, host<->device copies,
// poisoning, and the exception-message matcher.
#pragma once

#include "uq/error.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace uqtest {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

// Device views of the tests: row-major everywhere (the default layout of a CUDA view is
// column-major, which a uq cache, for one, must not be).
template <class DataType>
using DeviceView = Kokkos::View<DataType, Kokkos::LayoutRight, Mem>;

inline constexpr std::uint16_t kPoisonBf16 = 0x7fc1;  // a NaN no kernel produces

// Heavy-tailed, realistic-looking bf16 rows: N(0, sigma) with a few outlier channels
// scaled 10-30x (as KV projections have), rounded to bf16.
struct RowGenerator {
  std::mt19937_64 rng;
  std::vector<float> channel_gain;  // per dim

  explicit RowGenerator(std::uint64_t seed, int dims = 256, int outliers = 4) : rng(seed), channel_gain(dims, 1.0f) {
    std::uniform_int_distribution<int> pick(0, dims - 1);
    std::uniform_real_distribution<float> gain(10.0f, 30.0f);
    for (int i = 0; i < outliers; ++i) channel_gain[pick(rng)] = gain(rng);
  }

  void fill(std::uint16_t* row, float sigma) {
    std::normal_distribution<float> n(0.0f, sigma);
    for (std::size_t d = 0; d < channel_gain.size(); ++d)
      row[d] = uq::codec::float_to_bf16(n(rng) * channel_gain[d]).bits;
  }
};

// Copies a host vector into a new device view of the given extents (LayoutRight).
template <class T, class... Extents>
auto to_device(const std::vector<T>& host, const std::string& label, Extents... extents) {
  using Traits = T;
  constexpr int rank = sizeof...(Extents);
  using DataType = std::conditional_t<
      rank == 1, Traits*,
      std::conditional_t<rank == 2, Traits**,
                         std::conditional_t<rank == 3, Traits***, std::conditional_t<rank == 4, Traits****, void>>>>;
  Kokkos::View<DataType, Kokkos::LayoutRight, Mem> v(label, static_cast<std::size_t>(extents)...);
  Kokkos::View<DataType, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(
      const_cast<T*>(host.data()), static_cast<std::size_t>(extents)...);
  Kokkos::deep_copy(v, h);
  return v;
}

// Copies any view (any layout) to a host vector in its logical row-major order. A
// strided device view is first copied into a row-major one in the same memory: Kokkos
// copies non-contiguous views between memory spaces only on the host.
template <class View>
std::vector<typename View::non_const_value_type> to_host(const View& v) {
  using T = typename View::non_const_value_type;
  Kokkos::View<typename View::non_const_data_type, Kokkos::LayoutRight, typename View::memory_space> dense(
      "to_host", Kokkos::LayoutRight(v.extent(0), v.extent(1), v.extent(2), v.extent(3)));
  Kokkos::deep_copy(dense, v);
  auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dense);
  std::vector<T> out;
  out.reserve(v.size());
  if constexpr (View::rank == 1) {
    for (std::size_t i = 0; i < m.extent(0); ++i) out.push_back(m(i));
  } else if constexpr (View::rank == 2) {
    for (std::size_t i = 0; i < m.extent(0); ++i)
      for (std::size_t j = 0; j < m.extent(1); ++j) out.push_back(m(i, j));
  } else if constexpr (View::rank == 3) {
    for (std::size_t i = 0; i < m.extent(0); ++i)
      for (std::size_t j = 0; j < m.extent(1); ++j)
        for (std::size_t k = 0; k < m.extent(2); ++k) out.push_back(m(i, j, k));
  } else {
    for (std::size_t i = 0; i < m.extent(0); ++i)
      for (std::size_t j = 0; j < m.extent(1); ++j)
        for (std::size_t k = 0; k < m.extent(2); ++k)
          for (std::size_t l = 0; l < m.extent(3); ++l) out.push_back(m(i, j, k, l));
  }
  return out;
}

// Runs f, which must throw uq::Error whose message contains every fragment.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected uq::Error";
  } catch (const uq::Error& e) {
    const std::string what = e.what();
    for (const auto& frag : fragments)
      EXPECT_NE(what.find(frag), std::string::npos) << "message '" << what << "' lacks '" << frag << "'";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected uq::Error, got another exception: " << e.what();
  }
}

}  // namespace uqtest
