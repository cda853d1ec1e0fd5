// The device status counters (spec ultraquant.md §6): a small view in the execution
// space's memory that kernels increment atomically when they mask bad data.
#pragma once

#include "uq/error.hpp"

#include <Kokkos_Core.hpp>

namespace uq {
namespace impl {

template <class ExecSpace>
class StatusCounters {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using view_type = Kokkos::View<unsigned long long[kNumCounters], memory_space>;

  StatusCounters() = default;
  explicit StatusCounters(const ExecSpace& exec) : counts_("uq::status") {
    reset(exec);
  }

  // Counters in caller-owned memory (kNumCounters values, 8-byte aligned, in the execution
  // space's memory; e.g. a plan's workspace), cleared here.
  StatusCounters(const ExecSpace& exec, unsigned long long* storage) : counts_(storage) { reset(exec); }

  const view_type& view() const { return counts_; }

  void reset(const ExecSpace& exec) const { Kokkos::deep_copy(exec, counts_, 0ull); }

  // Waits for the execution space, then copies the counters to the host.
  Status read(const ExecSpace& exec) const {
    auto host = Kokkos::create_mirror_view(counts_);
    Kokkos::deep_copy(exec, host, counts_);
    exec.fence();
    Status s;
    for (int i = 0; i < kNumCounters; ++i) s.counts[i] = host(i);
    return s;
  }

 private:
  view_type counts_;
};

// Device-side increment (n occurrences of counter c).
template <class CountView>
KOKKOS_INLINE_FUNCTION void count(const CountView& counts, Counter c, unsigned long long n = 1) {
  if (n) Kokkos::atomic_add(&counts(static_cast<int>(c)), n);
}

}  // namespace impl
}  // namespace uq
