// What both cache writers (uq::KvWriter, uq::IndexKeyWriter) keep between calls and do on each:
// the device status counters (allocated once), the host checks skipped when a call's views are
// the last checked call's (same pointers, extents, strides: impl/arg_key.hpp), the path chosen
// once at construction, and one call through the dispatcher (impl/dispatch.hpp) between the
// counters' reset and their read-back when `check` is on. Not for concurrent use from several
// host threads (the checked views and the last path are mutable state).
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/arg_key.hpp"
#include "uq/impl/dispatch.hpp"
#include "uq/impl/status_counters.hpp"

#include <string>
#include <utility>

namespace uq {
namespace impl {

// A writer derives from it: the status and path accessors are the writer's public ones.
template <class ExecSpace, class Launch>
class WriterCore {
 public:
  // The path of the last call (before any call: the device's candidate), and why it is not a
  // tuned path.
  Path path() const { return last_.path; }
  const std::string& path_reason() const { return last_.reason; }
  Status status() const { return counters_.read(exec_); }
  void reset_status() const { counters_.reset(exec_); }

 protected:
  using Counts = typename StatusCounters<ExecSpace>::view_type;

  // fn: the public name ("uq::write_kv"); Native without a tuned writer for this device throws.
  WriterCore(const char* fn, const ExecSpace& exec, Backend backend, bool check)
      : fn_(fn), exec_(exec), backend_(backend), check_(check), counters_(exec),
        candidate_(Call::candidate(fn, backend, exec)), last_(candidate_) {}

  // Runs host_checks() unless these views are the last call's that passed them.
  template <class HostChecks, class... Views>
  void check_views(HostChecks&& host_checks, const Views&... views) const {
    ArgKey key;
    (key.add(views), ...);
    if (checked_ && key == checked_key_) return;
    host_checks();
    checked_key_ = key;
    checked_ = true;
  }

  // One call: `launch` (made with counts()) on the tuned path, or generic(); with check on, the
  // counters reset before and read after (throwing on bad data, naming `inputs`).
  template <class Generic>
  void dispatch(const Launch& launch, const char* inputs, Generic&& generic) const {
    if (check_) counters_.reset(exec_);
    Call::run(fn_, exec_, candidate_, backend_, {launch}, last_, std::forward<Generic>(generic));
    if (check_) throw_if_bad(fn_, inputs, counters_.read(exec_));
  }

  const ExecSpace& exec() const { return exec_; }
  const Counts& counts() const { return counters_.view(); }

 private:
  using Call = TunedCall<ExecSpace, Launch>;

  const char* fn_;
  ExecSpace exec_;
  Backend backend_;
  bool check_;
  StatusCounters<ExecSpace> counters_;
  PathChoice candidate_;
  mutable PathChoice last_;
  mutable ArgKey checked_key_;
  mutable bool checked_ = false;
};

}  // namespace impl
}  // namespace uq
