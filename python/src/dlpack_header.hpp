// The DLPack header: Debian's libdlpack-dev (dlpack/dlpack.h), or the copy a torch installation
// ships as ATen/dlpack.h where that is the one found (python/CMakeLists.txt).
#pragma once

#if defined(UQ_DLPACK_ATEN_HEADER)
#include <ATen/dlpack.h>
#else
#include <dlpack/dlpack.h>
#endif
