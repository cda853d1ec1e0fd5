// Stamp of the shared decode cases (decode_cases.hpp) for the Hopper (sm_90) path (arch/sm90):
// Backend::Native, which must run on Path::Sm90, out and lse against the float64 reference with
// the FP8-wgmma tolerance derived in support/sm90_decode_path.hpp. The path's own tests
// (the device check, serving-size contexts, misaligned caches, bad data, plan reuse, agreement
// with the generic path) are in sm90_decode_extras.cpp, linked into this program. On a build or
// device without the sm90 path these tests FAIL (they never skip); a build without arch/sm90
// (no CUDA) runs only NotBuiltHereSoNeverSelected, which says so.
#include "support/decode_path.hpp"

#if defined(UQ_ENABLE_SM90)

#include "support/sm90_decode_path.hpp"

#define UQ_DECODE_PATH uqtest::Sm90DecodePath
#define UQ_DECODE_PREFIX Sm90
#include "decode_cases.hpp"

#else  // no sm90 path in this build

#include <gtest/gtest.h>

namespace {

using namespace uqtest;

TEST(Sm90Decode, NotBuiltHereSoNeverSelected) {
  // Without arch/sm90 (a non-CUDA build) the dispatch must not claim the path.
  EXPECT_FALSE(uq::impl::built_paths().has(uq::Path::Sm90));
  const uq::DeviceInfo d = uq::impl::device_info(Exec());
  EXPECT_NE(uq::impl::DecodeDispatch<Exec>::tuned_path(d), uq::Path::Sm90);
}

}  // namespace

#endif
