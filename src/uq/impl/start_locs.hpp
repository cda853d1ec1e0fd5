// Start-location arrays (spec ultraquant.md §5.9, §7): query_start_loc of a decode with several
// query tokens per sequence and kv_start_loc of gather_kv, int32 [num_seqs + 1] views that tile
// [0, T) into the sequences' rows. Their host side: the copy a checked call reads and the host
// check, whose conditions are those of the device's per-sequence rule
// (core/sequence_rules.hpp, malformed_start_range), stated globally.
#pragma once

#include "uq/error.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace uq {
namespace impl {

// The entries of a rank-1 view (any stride, any memory the execution space reaches) on the
// host; waits for the execution space.
template <class ExecSpace, class Starts>
std::vector<std::int32_t> start_locs_on_host(const ExecSpace& exec, const Starts& starts) {
  using MemSpace = typename Starts::memory_space;
  Kokkos::View<std::int32_t*, Kokkos::LayoutRight, MemSpace> dense(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::start_locs"), starts.extent(0));
  Kokkos::deep_copy(exec, dense, starts);  // a kernel on exec when the layouts differ
  auto host = Kokkos::create_mirror_view(dense);
  Kokkos::deep_copy(exec, host, dense);
  exec.fence();
  return std::vector<std::int32_t>(host.data(), host.data() + host.extent(0));
}

// The host check of a start-location array over T rows: entry 0 is 0, entries never decrease,
// the last is T and no sequence has more than max_len rows (max_len 0: no limit; max_what names
// that limit in the message). Throws uq::Error naming `fn`, `arg`, the entry, the expected and
// the actual value.
inline void check_start_locs(const char* fn, const char* arg, const std::vector<std::int32_t>& locs, std::int64_t T,
                             const char* T_what, int max_len, const char* max_what) {
  const std::string a(arg);
  const std::size_t n = locs.size();
  require(n >= 1, fn, a, "num_seqs + 1 >= 1 entries", "0 entries");
  require(locs[0] == 0, fn, a, a + "[0] == 0", a + "[0] = " + str(locs[0]));
  for (std::size_t b = 0; b + 1 < n; ++b) {
    const std::int64_t rows = static_cast<std::int64_t>(locs[b + 1]) - locs[b];
    if (rows < 0)
      require(false, fn, a, "non-decreasing entries",
              a + "[" + str(static_cast<std::int64_t>(b + 1)) + "] = " + str(locs[b + 1]) + " < " + a + "[" +
                  str(static_cast<std::int64_t>(b)) + "] = " + str(locs[b]));
    if (max_len > 0 && rows > max_len)
      require(false, fn, a,
              "at most " + str(max_len) + " rows per sequence (" + max_what + ")",
              "sequence " + str(static_cast<std::int64_t>(b)) + ": " + a + "[" + str(static_cast<std::int64_t>(b + 1)) +
                  "] - " + a + "[" + str(static_cast<std::int64_t>(b)) + "] = " + str(rows));
  }
  require(locs[n - 1] == T, fn, a,
          a + "[num_seqs] == " + str(T) + " (" + T_what + ")",
          a + "[" + str(static_cast<std::int64_t>(n - 1)) + "] = " + str(locs[n - 1]));
}

// The largest number of rows of one sequence, at least 1 and at most `cap` (sizing a plan from
// a possibly malformed array: the device masks what does not fit).
inline int largest_start_range(const std::vector<std::int32_t>& locs, int cap) {
  std::int64_t most = 1;
  for (std::size_t b = 0; b + 1 < locs.size(); ++b)
    most = std::max<std::int64_t>(most, static_cast<std::int64_t>(locs[b + 1]) - locs[b]);
  return static_cast<int>(std::min<std::int64_t>(most, cap));
}

}  // namespace impl
}  // namespace uq
