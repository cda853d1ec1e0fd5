// The format's dequantisation table (uq/nvfp4.hpp) as a device view: 256 scale bytes x
// 8 magnitude bytes, filled once on the device from the KOKKOS_INLINE_FUNCTION
// generator (CUDA cannot odr-use a host constexpr array inside a kernel). Owned by a
// plan; the scorer's teams copy it into scratch.
#pragma once

#include "uq/nvfp4.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

// Entry i of the table (a functor at namespace scope: CUDA kernels cannot be
// instantiated with a private nested type).
template <class View>
struct FillDequantTable {
  View bytes;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    bytes(i) = nvfp4::table_byte(static_cast<std::uint8_t>(i / 8), static_cast<unsigned>(i % 8));
  }
};

template <class ExecSpace>
class DequantTable {
 public:
  using view_type = Kokkos::View<std::uint8_t[nvfp4::kTableEntries], typename ExecSpace::memory_space>;

  DequantTable() = default;
  explicit DequantTable(const ExecSpace& exec)
      : bytes_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::nvfp4::dequant_table")) {
    Kokkos::parallel_for("uq::nvfp4::fill_dequant_table",
                         Kokkos::RangePolicy<ExecSpace>(exec, 0, nvfp4::kTableEntries),
                         FillDequantTable<view_type>{bytes_});
  }

  const view_type& view() const { return bytes_; }

 private:
  view_type bytes_;
};

}  // namespace impl
}  // namespace uq
