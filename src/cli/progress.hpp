// Progress of the demo's long steps. On a terminal the step's line is redrawn with its
// percentage; elsewhere (logs, tests) only the final line of each step is printed.
#pragma once

#include "measure/timing.hpp"

#include <cstdint>
#include <iosfwd>
#include <string>

namespace uq {
namespace cli {

class Progress {
 public:
  Progress(std::ostream& err, bool interactive, std::string label, std::int64_t total = 0);
  // Redraws (on a terminal, at most ten times a second) "label  37%".
  void update(std::int64_t done);
  // Ends the step: "label: <summary> (1.2 s)" on its own line. Returns the seconds taken.
  double finish(const std::string& summary);

 private:
  std::ostream& err_;
  bool interactive_;
  std::string label_;
  std::int64_t total_;
  measure::Stopwatch clock_;
  double last_draw_ = -1.0;
};

}  // namespace cli
}  // namespace uq
