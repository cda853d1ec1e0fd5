// Path::HostSimd's specialisations of the tuned-path seam (uq/impl/tuned_path.hpp): the host
// execution spaces (Serial, OpenMP, Threads) in a build whose host compiler has vector
// extensions, and the one operation with a host-tuned kernel — the index key writer
// (uq/impl/write_index_keys_host.hpp, bit-identical to the generic kernel). Header-only:
// included by the seam in every build, it specialises nothing where the host path is not
// compiled (nvcc; compilers without vector extensions).
#pragma once

#include "uq/backend.hpp"
#include "uq/core/write_launch.hpp"
#include "uq/error.hpp"
#include "uq/impl/write_index_keys_host.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

#if defined(UQ_INDEX_WRITER_HOST_PATH)

namespace uq {
namespace impl {

template <>
struct TunedSpace<Path::HostSimd> {
  static constexpr bool built = true;
  template <class ExecSpace>
  static constexpr bool runs_on = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  template <class ExecSpace>
  static void* stream(const ExecSpace&) {
    return nullptr;
  }
};

template <>
struct TunedOp<Path::HostSimd, IndexKeyWriteLaunch> {
  static constexpr bool available = true;
  struct Prepared {};  // nothing to derive: the rows are read in place
  // The vector loads take a row's 128 values as one contiguous run.
  static Prepared prepare(const IndexKeyWriteLaunch& l) {
    if (l.key_stride_dim != 1 && l.num_tokens > 0)
      throw Error("uq::write_index_keys (host-simd)", "keys", "rows of contiguous values (stride(1) == 1)",
                  "stride(1) = " + std::to_string(l.key_stride_dim));
    return {};
  }
  template <class ExecSpace>
  static void launch(const ExecSpace& exec, const IndexKeyWriteLaunch& l, const Prepared&) {
    if (l.key_bytes == 2) {
      if (l.slot_bytes == 8) return index_host::launch<bf16, std::int64_t>(exec, l);
      return index_host::launch<bf16, std::int32_t>(exec, l);
    }
    if (l.slot_bytes == 8) return index_host::launch<float, std::int64_t>(exec, l);
    return index_host::launch<float, std::int32_t>(exec, l);
  }
};

}  // namespace impl
}  // namespace uq

#endif  // UQ_INDEX_WRITER_HOST_PATH
