// The ways a uq subcommand fails, each with its exit status. The dispatcher
// (cli.cpp) turns them into one line on stderr: "uq <cmd>: ...".
#pragma once

#include <stdexcept>
#include <string>

namespace uq {
namespace cli {

// Exit statuses, documented in `uq --help`.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // I/O and other failures outside the user's input
inline constexpr int kExitInvalid = 2;  // invalid arguments or input data (incl. uq::Error)

// A command line the program cannot accept (unknown option, missing value, ...).
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

// An input file whose content is not what the command needs. Printed as
// "<file>: expected <expected>, found <found>".
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string expected, std::string found)
      : std::runtime_error(file + ": expected " + expected + ", found " + found),
        file_(std::move(file)),
        expected_(std::move(expected)),
        found_(std::move(found)) {}
  const std::string& file() const { return file_; }
  const std::string& expected() const { return expected_; }
  const std::string& found() const { return found_; }

 private:
  std::string file_, expected_, found_;
};

// A file that cannot be opened, read, written or renamed.
class IoError : public std::runtime_error {
 public:
  IoError(const std::string& file, const std::string& what) : std::runtime_error(file + ": " + what) {}
};

// A result the command checked and found wrong (uq demo against its references): exit
// status 1, like any other failure outside the user's input.
class CheckFailure : public std::runtime_error {
 public:
  explicit CheckFailure(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace cli
}  // namespace uq
