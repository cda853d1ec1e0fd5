#include "cli/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace uq {
namespace cli {

Progress::Progress(std::ostream& err, bool interactive, std::string label, std::int64_t total)
    : err_(err), interactive_(interactive), label_(std::move(label)), total_(total) {
  update(0);
}

void Progress::update(std::int64_t done) {
  if (!interactive_) return;
  const double now = clock_.seconds();
  if (last_draw_ >= 0 && now - last_draw_ < 0.1) return;
  last_draw_ = now;
  err_ << "\r\033[K  " << label_;
  if (total_ > 0)
    err_ << "  " << std::min(100, static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total_)))
         << "%";
  err_ << " ..." << std::flush;
}

double Progress::finish(const std::string& summary) {
  const double s = clock_.seconds();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f s", s);
  if (interactive_) err_ << "\r\033[K";
  err_ << "  " << label_ << ": " << summary << " (" << took << ")\n" << std::flush;
  return s;
}

}  // namespace cli
}  // namespace uq
