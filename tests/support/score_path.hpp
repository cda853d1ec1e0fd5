// The scorer path runner: what one scorer path gives the shared scorer cases
// (tests/score_cases.hpp), so that each case is written once and stamped per path (as the decode
// cases are: support/decode_path.hpp).
//
// A stamp defines, before including score_cases.hpp,
//   UQ_SCORE_PREFIX   the prefix of the suite's name: Index (IndexScore) or Emu (EmuScore)
// and, in namespace uqtest::index, the function
//   std::vector<std::unique_ptr<ScorePath>> score_paths();
// that gives the paths its program tests (the device stamp: the generic path and the device's
// tuned one; the emulator stamp: the gfx950 kernels in the wavefront emulator).
#pragma once

#include "test_index_common.hpp"

#include <memory>
#include <string>
#include <vector>

namespace uqtest {
namespace index {

class ScorePath {
 public:
  virtual ~ScorePath() = default;
  // The path's name in messages.
  virtual std::string name() const = 0;
  // Scores of the case ([H][rows][S], logical order; the output poisoned before the run) and
  // the status counters. `variant` picks the path's input layouts (0: dense; the device path
  // takes strided q and scores for odd variants, the emulated one cycles through its layouts).
  virtual RunResult run(const ScoreCase& c, int variant) const = 0;
  // The path's own further checks of a run just compared with the reference (the emulated
  // path: bit-exactness with the reference and agreement with the generic scorer).
  virtual void cross_check(const ScoreCase& /*c*/, int /*variant*/, const std::vector<float>& /*ref*/,
                           const RunResult& /*got*/, const std::string& /*what*/) const {}
};

std::vector<std::unique_ptr<ScorePath>> score_paths();

}  // namespace index
}  // namespace uqtest
