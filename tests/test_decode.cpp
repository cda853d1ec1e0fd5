// Stamp of the shared decode cases (decode_cases.hpp) for the generic path: uq::decode's plan
// with Backend::Generic, out and lse against the float64 reference with the tolerances of
// support/decode_case.hpp. The generic path's own tests: test_decode_plan.cpp (plan reuse, the
// two stages), test_decode_bad_data.cpp, test_decode_splitk.cpp. test_decode_team_path reruns
// this program's cases on the GPU (team) path of the kernel on a host backend.
#include "support/decode_path.hpp"

namespace {

struct GenericDecodePath {
  static constexpr const char* kName = "generic";

  template <class Q, class Cache, class Tables, class Lens, class Out, class Lse>
  uq::Status run(const uqtest::DecodeCase& c, const Q& q, const Cache& cache, const Tables& tables, const Lens& lens,
                 const Out& out, const Lse& lse) {
    return uqtest::run_decode_plan(c, uq::Backend::Generic, uq::Path::Generic, q, cache, tables, lens, out, lse);
  }
  uqtest::DecodeTolerance tolerance(const uqtest::DecodeCase&) const { return {}; }
  uqtest::LseTolerance lse_tolerance(const uqtest::DecodeCase&) const { return {}; }
  void cross_check(const uqtest::DecodeCase&, const uqtest::DecodeCheck&) {}
};

}  // namespace

#define UQ_DECODE_PATH GenericDecodePath
#define UQ_DECODE_PREFIX
#include "decode_cases.hpp"
