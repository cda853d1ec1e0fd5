#include "cli/temp_files.hpp"

#include "cli/failure.hpp"

#include <cstring>

#include <signal.h>
#include <unistd.h>

namespace uq {
namespace cli {
namespace {

// Storage the handler reads: plain arrays and sig_atomic_t flags only. A slot's name is
// written while `used` is 0 and the flag set afterwards, so the handler never reads a
// half-copied name.
struct Slot {
  volatile std::sig_atomic_t used;
  char name[TempRegistration::kMaxName];
};
Slot g_slots[TempRegistration::kMaxTemporaries];

extern "C" void remove_temporaries_and_reraise(int sig) {
  for (Slot& s : g_slots)
    if (s.used) ::unlink(s.name);  // async-signal-safe; a name already renamed away fails harmlessly
  // The default action then ends the program with this signal, as without the handler.
  ::signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
}

sigset_t cleanup_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kCleanupSignals) sigaddset(&set, sig);
  return set;
}

}  // namespace

void install_signal_cleanup() {
  for (int sig : kCleanupSignals) {
    struct sigaction old;
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_temporaries_and_reraise;
    // All three are blocked while one is handled: a second signal cannot interrupt the
    // removal half-way; it stays pending and the first one ends the program.
    sa.sa_mask = cleanup_set();
    ::sigaction(sig, &sa, nullptr);
  }
}

TempRegistration::TempRegistration(const std::string& name_template) : slot_(-1) {
  if (name_template.size() >= kMaxName)
    throw IoError(name_template, "cannot create a temporary file: its path is longer than " +
                                     std::to_string(kMaxName - 1) + " bytes");
  for (int i = 0; i < kMaxTemporaries; ++i) {
    if (g_slots[i].used) continue;
    std::memcpy(g_slots[i].name, name_template.c_str(), name_template.size() + 1);
    g_slots[i].used = 1;
    slot_ = i;
    return;
  }
  throw IoError(name_template, "cannot create a temporary file: " + std::to_string(kMaxTemporaries) +
                                   " are open already");
}

TempRegistration::~TempRegistration() { g_slots[slot_].used = 0; }

char* TempRegistration::name() { return g_slots[slot_].name; }

SignalHold::SignalHold() {
  const sigset_t set = cleanup_set();
  ::sigprocmask(SIG_BLOCK, &set, &saved_);
}

SignalHold::~SignalHold() { ::sigprocmask(SIG_SETMASK, &saved_, nullptr); }

}  // namespace cli
}  // namespace uq
