// Shared pieces of the Google Benchmark programs: device-accurate timing of one
// launch, the copy bandwidth measured once per process (the roofline every result is
// reported against), and the counters every benchmark sets.
#pragma once

#include "measure/copy_bandwidth.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/kokkos_compat.hpp"

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace uqbench {

using Exec = Kokkos::DefaultExecutionSpace;

inline bool on_host() { return Kokkos::SpaceAccessibility<Kokkos::HostSpace, Exec::memory_space>::accessible; }

// Seconds taken by f() on exec: CUDA events on the instance's stream where Kokkos runs
// on CUDA (no host round trip in the measurement), else a fence on each side.
template <class F>
double time_on_device(const Exec& exec, F&& f) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, exec.cuda_stream());
    f();
    cudaEventRecord(b, exec.cuda_stream());
    cudaEventSynchronize(b);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return 1e-3 * ms;
  }
#endif
  exec.fence();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  exec.fence();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A counter-based hash: input data that is the same on every backend, made on the device.
KOKKOS_INLINE_FUNCTION std::uint32_t hash32(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x);
}

// Block tables [batch, blocks] over a cache of batch * blocks pages, each sequence's
// pages scattered as a real allocator leaves them; every length = context.
template <class Tables, class Lens>
void fill_scattered_tables(const Tables& tables, const Lens& lens, int context, std::uint64_t seed) {
  const int batch = static_cast<int>(tables.extent(0)), nb = static_cast<int>(tables.extent(1));
  std::vector<std::int32_t> perm(static_cast<std::size_t>(batch) * nb);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(static_cast<unsigned>(seed)));
  auto ht = Kokkos::create_mirror_view(tables);
  auto hl = Kokkos::create_mirror_view(lens);
  for (int b = 0; b < batch; ++b) {
    hl(b) = context;
    for (int j = 0; j < nb; ++j) ht(b, j) = perm[static_cast<std::size_t>(b) * nb + j];
  }
  Kokkos::deep_copy(tables, ht);
  Kokkos::deep_copy(lens, hl);
  Exec().fence();
}

// The copy bandwidth of this process's execution space, measured on first use.
inline const uq::measure::CopyBandwidth& copy_bandwidth() {
  static const uq::measure::CopyBandwidth bw = [] {
    const auto b = uq::measure::measure_copy_bandwidth(uq::measure::default_copy_buffer_bytes(), 10, 5.0);
    std::fprintf(stderr, "copy bandwidth: %.1f GB/s (%zu MiB buffers, median of %d)\n", b.gb_per_s,
                 b.buffer_bytes >> 20, b.repetitions);
    return b;
  }();
  return bw;
}

// The largest cache in front of an AMD Instinct's HBM: MI300X / MI325X / MI350X / MI355X carry
// a 256 MB Infinity Cache (MALL), which HIP reports nowhere (hipDeviceAttributeL2CacheSize is
// the 4 MB L2 of one XCD). Cold-cache rotation on HIP sizes for it, as the copy-bandwidth
// roofline does (src/measure/copy_bandwidth.hpp: 1 GiB buffers on devices).
constexpr std::size_t kAmdInfinityCacheBytes = std::size_t(256) << 20;

// Last-level cache size of the device or host, to size cold-cache input rotation.
inline std::size_t last_level_cache_bytes() {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, Exec().cuda_device()) == cudaSuccess) return static_cast<std::size_t>(p.l2CacheSize);
  }
#endif
#if defined(KOKKOS_ENABLE_HIP)
  if constexpr (std::is_same<Exec, uq::impl::HipSpace>::value) return kAmdInfinityCacheBytes;
#endif
  return std::size_t(64) << 20;  // generous for the CPUs this runs on
}

// How many copies of a working set of `bytes` to rotate through so that each
// iteration reads data that is not in the last-level cache (4x the cache in total).
inline int cold_copies(std::size_t bytes) {
  if (bytes == 0) return 1;
  const std::size_t want = 4 * last_level_cache_bytes();  // 1 GiB on HIP: 13 copies of 4 x 75k's 81.6 MB
  const std::size_t n = (want + bytes - 1) / bytes;
  return static_cast<int>(n < 1 ? 1 : (n > 64 ? 64 : n));
}

// Counters every benchmark reports, set after its loop: the bytes it must move, GB/s
// over the manual (device) time, and that as % of the copy bandwidth of this process.
inline void set_bandwidth_counters(benchmark::State& state, double bytes_per_iteration, double total_seconds) {
  const double gbs =
      total_seconds > 0 ? bytes_per_iteration * static_cast<double>(state.iterations()) / total_seconds * 1e-9 : 0.0;
  state.counters["bytes"] = bytes_per_iteration;
  state.counters["FOM: GB/s"] = gbs;
  state.counters["copy_GB/s"] = copy_bandwidth().gb_per_s;
  state.counters["pct_copy"] = 100.0 * gbs / copy_bandwidth().gb_per_s;
}

// main() of every benchmark program: Kokkos up, Google Benchmark flags parsed, the
// context recorded (execution space, device, copy bandwidth), then register_all(full)
// (full: --uq_full, the device sweep even on a host backend) and the runs.
template <class Register>
int benchmark_main(int argc, char** argv, Register register_all) {
  Kokkos::ScopeGuard guard(argc, argv);
  bool full = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--uq_full") full = true;
    else args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::AddCustomContext("uq_execution_space", Exec::name());
  benchmark::AddCustomContext("uq_device", uq::impl::device_info(Exec()).name);
  benchmark::AddCustomContext("copy_GB/s", std::to_string(copy_bandwidth().gb_per_s));
  register_all(full);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace uqbench
