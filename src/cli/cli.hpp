// The entry point of the uq program without main(): tests drive it with argument
// lists and string streams. Kokkos must be initialised by the caller (main.cpp, or
// the test main) because commands create views.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace uq {
namespace cli {

// args excludes the program name: {"decode", "--q", "Q.npy", ...}. Returns the exit
// status (0 ok, 1 failure, 2 invalid arguments or input) after printing any error as
// one line "uq <cmd>: ..." on err. interactive: err is a terminal (progress display).
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            bool interactive = false);

// `uq --help`.
std::string program_help();

}  // namespace cli
}  // namespace uq
