// The temporary files of the uq program and the signals that must not leave them
// behind. An output is written to a temporary next to it and renamed over it when
// complete (output_file.hpp); a user who presses Ctrl-C (SIGINT), closes the terminal
// (SIGHUP) or kills the program (SIGTERM) meanwhile must not find it afterwards. The
// handler removes every registered temporary, then lets the signal end the program as
// it would have (the exit status still says which signal).
#pragma once

#include <csignal>
#include <string>

namespace uq {
namespace cli {

// The signals whose default action ends the program and that a user sends.
inline constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Installs the handler for kCleanupSignals (main() calls it once). A signal ignored when
// the program started (nohup, a shell's background job) stays ignored.
void install_signal_cleanup();

// One registered temporary: the name is held in storage the signal handler can read, so
// mkstemp() fills it in place (the handler then removes the file even if the signal
// arrives while mkstemp() runs). At most kMaxTemporaries at once.
class TempRegistration {
 public:
  static constexpr int kMaxTemporaries = 8;
  static constexpr std::size_t kMaxName = 4096;  // PATH_MAX on Linux, the terminating NUL included

  // Throws IoError(name_template, ...) when the name is too long or all slots are taken.
  explicit TempRegistration(const std::string& name_template);
  ~TempRegistration();  // forgets the name (does not remove the file)
  TempRegistration(const TempRegistration&) = delete;
  TempRegistration& operator=(const TempRegistration&) = delete;

  char* name();  // NUL-terminated, writable by mkstemp()

 private:
  int slot_;
};

// While it lives, kCleanupSignals are held back and delivered when it ends: an in-place
// update of a cache writes its blocks under it, so an interrupt cannot tear the update.
class SignalHold {
 public:
  SignalHold();
  ~SignalHold();
  SignalHold(const SignalHold&) = delete;
  SignalHold& operator=(const SignalHold&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace cli
}  // namespace uq
