#include "measure/copy_bandwidth.hpp"

#include "measure/timing.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <unistd.h>

namespace uq {
namespace measure {

namespace {
using Exec = Kokkos::DefaultExecutionSpace;
using DeviceMemory = Exec::memory_space;
template <class T>
using DeviceView1 = Kokkos::View<T*, DeviceMemory>;
}  // namespace

std::size_t default_copy_buffer_bytes(std::string* note) {
  constexpr std::size_t MiB = std::size_t(1) << 20;
  const bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, DeviceMemory>::accessible;
  if (!host) {
    if (note) *note = "1 GiB per buffer on a device";
    return 1024 * MiB;
  }
  long llc = -1;
#if defined(_SC_LEVEL3_CACHE_SIZE)
  llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  const bool known = llc > 0;
  const std::size_t cache = known ? static_cast<std::size_t>(llc) : 32 * MiB;
  const std::size_t bytes = std::min(1024 * MiB, std::max(256 * MiB, 4 * cache));
  if (note)
    *note = std::string("4x the ") + (known ? "reported" : "assumed") + " last-level cache of " +
            std::to_string(cache / MiB) + " MiB, within [256 MiB, 1 GiB]";
  return bytes;
}

CopyBandwidth measure_copy_bandwidth(std::size_t buffer_bytes, int repetitions, double budget_s) {
  // Each work item copies kStreams words, one from each of kStreams equal slices: with
  // one word per GPU thread too few loads are in flight to saturate HBM (an H200 copies
  // at ~1.7 TB/s that way and at ~3.9 TB/s with four, close to cudaMemcpy's ~4.1).
  constexpr std::int64_t kStreams = 4;
  const std::int64_t slice = static_cast<std::int64_t>(buffer_bytes / sizeof(std::uint64_t)) / kStreams;
  const std::int64_t n = slice * kStreams;
  DeviceView1<std::uint64_t> src(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::copy::src"), n);
  DeviceView1<std::uint64_t> dst(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::copy::dst"), n);
  using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;
  Kokkos::parallel_for("uq::copy::fill", Policy(0, n),
                       KOKKOS_LAMBDA(const std::int64_t i) { src(i) = static_cast<std::uint64_t>(i) * 0x9e3779b9u; });
  auto copy = [&] {
    Kokkos::parallel_for(
        "uq::copy", Policy(0, slice), KOKKOS_LAMBDA(const std::int64_t i) {
          std::uint64_t words[kStreams];  // all loads issued before any store
          for (std::int64_t j = 0; j < kStreams; ++j) words[j] = src(i + j * slice);
          for (std::int64_t j = 0; j < kStreams; ++j) dst(i + j * slice) = words[j];
        });
  };
  copy();  // warm-up: first touch of dst, kernel load
  Kokkos::fence();
  TimingRule rule;
  rule.min_reps = std::max(2, repetitions);
  rule.budget_seconds = budget_s;
  const std::vector<double> times = time_repeatedly(
      [&] {
        copy();
        Kokkos::fence();
      },
      rule, [](int) {});
  CopyBandwidth r;
  r.buffer_bytes = static_cast<std::size_t>(n) * sizeof(std::uint64_t);
  r.repetitions = static_cast<int>(times.size());
  r.seconds = median(times);
  r.gb_per_s = 2.0 * static_cast<double>(r.buffer_bytes) / r.seconds / 1e9;
  return r;
}

}  // namespace measure
}  // namespace uq
