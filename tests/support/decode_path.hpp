// The decode path runner: what one decode path gives the shared decode cases
// (tests/decode_cases.hpp), so that each case is written once and stamped per path.
//
// A path is a class P, default-constructible, one object per case, with
//
//   static constexpr const char* kName;      the path's name in messages ("generic", "sm90", ...)
//   uq::Status run(const DecodeCase&, q, cache, tables, lens, out, lse);
//                                            decodes the case's device inputs (decode_case.hpp,
//                                            DeviceDecodeInputs) into out and lse (poisoned before,
//                                            copied to the host after) and returns the status
//                                            counters of the run; it may throw
//   DecodeTolerance tolerance(const DecodeCase&) const;
//   LseTolerance lse_tolerance(const DecodeCase&) const;
//                                            the path's tolerance against the float64 reference;
//                                            empty: the derivations of decode_case.hpp and
//                                            lse_tolerance.hpp
//   void cross_check(const DecodeCase&, const DecodeCheck&);
//                                            the path's own further checks of the run just made
//                                            (the emulated path compares with the generic one);
//                                            may do nothing
//
// check_on_path runs one case on a path through check_decode_lse (every element and lse against
// the reference) and requires the counters of these good-data cases to be zero.
#pragma once

#include "support/decode_case.hpp"

#include <gtest/gtest.h>

namespace uqtest {

template <class Path>
DecodeCheck check_on_path(Path& path, const DecodeCase& c) {
  uq::Status status;
  DecodeCheck check = check_decode_lse(
      c,
      [&](auto q, auto cache, auto tables, auto lens, auto out, auto lse) {
        status = path.run(c, q, cache, tables, lens, out, lse);
      },
      path.tolerance(c), path.lse_tolerance(c));
  EXPECT_TRUE(status.ok()) << Path::kName << ": " << c.name() << ": " << status.describe();
  path.cross_check(c, check);
  return check;
}

// The same on a fresh path object.
template <class Path>
DecodeCheck check_on_path(const DecodeCase& c) {
  Path path;
  return check_on_path(path, c);
}

// A DecodePlan run on one backend (the generic and the sm90 path): the plan uq::decode makes,
// with the case's softmax scale, rotation and forced partition count, check on (a non-zero
// counter throws, as in uq::decode), and the path the plan ran on required.
template <class Q, class Cache, class Tables, class Lens, class Out, class Lse>
uq::Status run_decode_plan(const DecodeCase& c, uq::Backend backend, uq::Path expected, const Q& q,
                           const Cache& cache, const Tables& tables, const Lens& lens, const Out& out,
                           const Lse& lse) {
  uq::DecodeConfig cfg;
  cfg.softmax_scale = c.scale;
  cfg.q_rotated = c.q_rotated;
  cfg.partitions = c.partitions;
  cfg.backend = backend;
  uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(q, cache, tables, cfg), cfg);
  plan.run(q, cache, tables, lens, out, lse);
  EXPECT_EQ(plan.path(), expected) << c.name() << ": ran on " << uq::path_name(plan.path()) << ", not "
                                   << uq::path_name(expected);
  return plan.status();
}

}  // namespace uqtest
