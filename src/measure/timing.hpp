// Wall-clock helpers for the demo's and the benchmarks' measurements.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace uq {
namespace measure {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct TimingRule {
  int min_reps = 5;             // at least this many timed runs...
  double min_seconds = 0.25;    // ...and this much timed work, so a GPU reaches steady clocks
  double budget_seconds = 8.0;  // but stop once this is spent and 2 runs are timed
  int max_reps = 100000;
};

// Times run() (which must wait for its work) as the rule says; after_each(n) is called
// with the number of runs timed so far (progress display).
template <class Run, class After>
std::vector<double> time_repeatedly(Run&& run, const TimingRule& rule, After&& after_each) {
  std::vector<double> times;
  double timed = 0;
  const Stopwatch total;
  for (;;) {
    const Stopwatch one;
    run();
    times.push_back(one.seconds());
    timed += times.back();
    after_each(static_cast<int>(times.size()));
    const int n = static_cast<int>(times.size());
    if (n >= rule.max_reps) break;
    if (n >= 2 && total.seconds() > rule.budget_seconds) break;
    if (n >= rule.min_reps && timed >= rule.min_seconds) break;
  }
  return times;
}

}  // namespace measure
}  // namespace uq
