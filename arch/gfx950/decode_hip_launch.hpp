// Host-side HIP runtime glue of the launchers in decode.hip and reduce.hip (compiled only
// there, with UQ_GFX950_LAUNCHER): the runtime header and the launch error check.
#pragma once

#include <hip/hip_runtime.h>

#include "uq/error.hpp"

#include <string>

namespace uq::gfx950 {

// Throws uq::Error when the kernel launch just issued on this thread failed.
inline void check_launch(const char* function) {
  const hipError_t rc = hipGetLastError();
  if (rc != hipSuccess) {
    throw uq::Error(function, "kernel launch", "hipSuccess",
                    std::string(hipGetErrorName(rc)) + ": " + hipGetErrorString(rc));
  }
}

}  // namespace uq::gfx950
