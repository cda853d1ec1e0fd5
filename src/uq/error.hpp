// uq::Error (host-checkable problems) and uq::Status (data problems found on the
// device), spec ultraquant.md §6.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace uq {

// Thrown before any work is launched when an argument is wrong, and after a call with
// Config::check = true when the device found bad data. The message always names the
// function, the argument, what was expected and what was given.
class Error : public std::runtime_error {
 public:
  Error(std::string function, std::string argument, std::string expected, std::string actual)
      : std::runtime_error(compose(function, argument, expected, actual)),
        function_(std::move(function)),
        argument_(std::move(argument)),
        expected_(std::move(expected)),
        actual_(std::move(actual)) {}

  const std::string& function() const { return function_; }
  const std::string& argument() const { return argument_; }
  const std::string& expected() const { return expected_; }
  const std::string& actual() const { return actual_; }

 private:
  static std::string compose(const std::string& f, const std::string& a, const std::string& e,
                             const std::string& g) {
    return f + ": argument '" + a + "': expected " + e + ", got " + g;
  }
  std::string function_, argument_, expected_, actual_;
};

// Indices of the device status counters. Each counts occurrences in one call (or,
// for plans with check = false, since the last reset).
enum class Counter : int {
  bad_block_ids = 0,   // (sequence/request, logical block) pairs whose needed block id is
                       // outside [0, num_blocks): those tokens are treated as absent
  negative_seq_lens,   // seq_lens entries < 0 (treated as 0)
  long_seq_lens,       // seq_lens entries above max_blocks_per_seq * block_size (clamped)
  bad_slots,           // writer slots >= num_blocks * block_size (token not written)
  nonfinite_inputs,    // rows holding a non-finite value: writer rows (token, head), whose
                       // affected scale groups are written as zero groups, and decode query
                       // heads (sequence or query token, query head), whose output row is NaN
  bad_start_locs,      // sequences whose range in query_start_loc (decode with several query
                       // tokens) or kv_start_loc (gather_kv) is malformed: skipped, no row written
  count_
};

inline constexpr int kNumCounters = static_cast<int>(Counter::count_);

inline const char* counter_name(Counter c) {
  switch (c) {
    case Counter::bad_block_ids: return "bad_block_ids";
    case Counter::negative_seq_lens: return "negative_seq_lens";
    case Counter::long_seq_lens: return "long_seq_lens";
    case Counter::bad_slots: return "bad_slots";
    case Counter::nonfinite_inputs: return "nonfinite_inputs";
    case Counter::bad_start_locs: return "bad_start_locs";
    case Counter::count_: break;
  }
  return "?";
}

// Host copy of the device status counters.
struct Status {
  std::uint64_t counts[kNumCounters] = {};

  std::uint64_t operator[](Counter c) const { return counts[static_cast<int>(c)]; }
  bool ok() const {
    for (std::uint64_t n : counts)
      if (n != 0) return false;
    return true;
  }
  // "bad_block_ids=3, long_seq_lens=1" (only the non-zero counters), or "ok".
  std::string describe() const {
    std::ostringstream s;
    bool first = true;
    for (int i = 0; i < kNumCounters; ++i) {
      if (counts[i] == 0) continue;
      s << (first ? "" : ", ") << counter_name(static_cast<Counter>(i)) << "=" << counts[i];
      first = false;
    }
    return first ? std::string("ok") : s.str();
  }
};

// Throws the Error that a call with check = true reports for bad device data.
inline void throw_if_bad(const char* function, const char* argument, const Status& s) {
  if (!s.ok()) throw Error(function, argument, "valid data (no device status counts)", s.describe());
}

namespace impl {

// The one way host checks fail, in uq and in the tuned paths' launchers (which cannot include
// Kokkos): a uq::Error naming the function, the argument, the expectation and the value.
inline std::string str(std::int64_t v) { return std::to_string(v); }

inline void require(bool cond, const char* function, const std::string& argument, const std::string& expected,
                    const std::string& actual) {
  if (!cond) throw Error(function, argument, expected, actual);
}

// The same with the words as literals and the value as a literal or an integer: nothing
// is composed unless the check fails. (A writer runs its checks on every call whose
// views changed, and composing strings there costs as much as the rest of a one-token
// call on a host.)
inline void require(bool cond, const char* function, const char* argument, const char* expected,
                    const char* actual) {
  if (!cond) throw Error(function, argument, expected, actual);
}
inline void require(bool cond, const char* function, const char* argument, const char* expected,
                    std::int64_t actual) {
  if (!cond) throw Error(function, argument, expected, str(actual));
}

}  // namespace impl
}  // namespace uq
