// The uq program: Kokkos around the command dispatcher (cli.cpp).
#include "cli/cli.hpp"
#include "cli/temp_files.hpp"

#include <Kokkos_Core.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

// Runs f with file descriptor 1 pointing at stderr: Kokkos prints its initialisation
// advice (e.g. OpenMP's OMP_PROC_BIND warning) on stdout, which must carry only the
// command's output; the advice stays visible on stderr.
template <class F>
void with_stdout_on_stderr(F&& f) {
  std::cout.flush();
  std::fflush(stdout);
  const int saved = ::dup(1);
  if (saved >= 0) ::dup2(2, 1);
  f();
  std::cout.flush();
  std::fflush(stdout);
  if (saved >= 0) {
    ::dup2(saved, 1);
    ::close(saved);
  }
}

struct KokkosSession {
  KokkosSession(int& argc, char* argv[]) {
    with_stdout_on_stderr([&] { Kokkos::initialize(argc, argv); });
  }
  ~KokkosSession() {
    with_stdout_on_stderr([] { Kokkos::finalize(); });
  }
  KokkosSession(const KokkosSession&) = delete;
  KokkosSession& operator=(const KokkosSession&) = delete;
};

}  // namespace

int main(int argc, char* argv[]) {
  // Before anything can create a temporary output (uq --help says where they go).
  uq::cli::install_signal_cleanup();
  // Kokkos gets only its own --kokkos-* options: Kokkos 3.x also reads some
  // unprefixed ones (--help among them) that belong to this program.
  std::vector<char*> kokkos_argv = {argv[0]};
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--kokkos-", 9) == 0) kokkos_argv.push_back(argv[i]);
    else args.emplace_back(argv[i]);
  }
  int kokkos_argc = static_cast<int>(kokkos_argv.size());
  kokkos_argv.push_back(nullptr);
  int status = 0;
  {
    KokkosSession kokkos(kokkos_argc, kokkos_argv.data());
    const bool interactive = ::isatty(::fileno(stderr)) != 0;
    status = uq::cli::run_cli(args, std::cout, std::cerr, interactive);
    std::cout.flush();
  }
  return status;
}
