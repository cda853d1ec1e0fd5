// How the binding names an argument in its errors: the Python function ("uq.decode") and the
// argument ("q"), with the same uq::Error (function, argument, expected, actual) as the library.
#pragma once

#include "uq/error.hpp"

#include <string>

namespace uqpy {

struct Arg {
  const char* function;  // "uq.decode", "uq.DecodePlan.run", ...
  const char* name;      // "q", "kv_cache", ...
};

[[noreturn]] inline void fail(const Arg& a, const std::string& expected, const std::string& actual) {
  throw uq::Error(a.function, a.name, expected, actual);
}

}  // namespace uqpy
