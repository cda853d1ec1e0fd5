// The achievable memory bandwidth of the execution space, measured with a plain
// Kokkos copy kernel over buffers several times the last-level cache: the roofline
// that decode timings are compared with ("% of copy bandwidth"). Shared by the demo and
// the benchmarks (library uq_measure), so both report the same roofline.
#pragma once

#include <cstddef>
#include <string>

namespace uq {
namespace measure {

struct CopyBandwidth {
  std::size_t buffer_bytes = 0;  // each of source and destination
  int repetitions = 0;
  double seconds = 0;            // median time of one copy
  double gb_per_s = 0;           // 2 x buffer_bytes / seconds / 1e9 (read + write)
  std::string cache_note;        // how the buffer size was chosen
};

// Buffer size: 4x the host's last-level cache on host spaces (within [256 MiB, 1 GiB]),
// 1 GiB on devices (16x an H200's L2, 4x an MI355X's 256 MB Infinity Cache).
std::size_t default_copy_buffer_bytes(std::string* note = nullptr);

// Runs a warm-up copy, then times copies: at least `repetitions` of them and 0.25 s of
// copying (steady GPU clocks), fewer once ~`budget_s` seconds have passed (at least 2).
CopyBandwidth measure_copy_bandwidth(std::size_t buffer_bytes, int repetitions = 5, double budget_s = 3.0);

}  // namespace measure
}  // namespace uq
