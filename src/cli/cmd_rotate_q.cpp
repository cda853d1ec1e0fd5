// uq rotate-q: q_rot = WHT(fp32(q)) with uq::rotate_query, written as float32.
#include "cli/commands.hpp"
#include "cli/device_arrays.hpp"
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/npy.hpp"

#include "uq/rotate_query.hpp"

#include <ostream>

namespace uq {
namespace cli {
namespace {

void run_rotate_q(const ParsedOptions& o, CommandIo& io) {
  const std::string& file = o.text("--q");
  // [B, H, 256], or [N, 256] taken as [N, 1, 256]; the output keeps the input's shape.
  const npy::Array peek = npy::read(file);
  ShapeBindings shapes;
  const ShapePattern pattern = peek.rank() == 2 ? ShapePattern{"N", "256"} : ShapePattern{"B", "H", "256"};
  if (!peek.dtype.is('f', 4) && !peek.dtype.is('u', 2))
    throw InputError(file, "float32 (rounded to bf16) or uint16 (bf16 bits)", peek.dtype.name());
  if (peek.rank() != 2 && peek.rank() != 3)
    throw InputError(file, "a 3-d array [B, H, 256] (or 2-d [N, 256])",
                     "a " + std::to_string(peek.rank()) + "-d array " + npy::shape_string(peek.shape) + " " +
                         peek.dtype.name());
  shapes.match(peek, file, pattern);
  const std::vector<bf16> q = to_bf16(peek, file);
  const std::int64_t B = peek.shape[0], H = peek.rank() == 3 ? peek.shape[1] : 1;

  const Exec exec;
  auto q_d = to_device_3d("uq::cli::q", q.data(), B, H, 256);
  DeviceView3<float> rot_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::cli::q_rot"), B, H, 256);
  uq::rotate_query(exec, q_d, rot_d);
  const std::vector<float> rot = to_host(rot_d);
  npy::write(o.text("--out"), npy::float32(), peek.shape, rot.data());
  io.out << "uq rotate-q: wrote " << o.text("--out") << " " << npy::shape_string(peek.shape) << " float32\n";
}

}  // namespace

Command rotate_q_command() {
  Command c("rotate-q", "Walsh-Hadamard rotation of queries (uq::rotate_query)", run_rotate_q);
  c.usage = "rotate-q --q Q.npy --out QROT.npy";
  c.description =
      "Writes q_rot = WHT(fp32(q)), the rotation decode applies to raw queries before their E4M3 "
      "rounding (fp32 butterflies in the order of the spec, then x 1/16), as float32. Passing "
      "bf16(q_rot) to 'uq decode --q-rotated' gives the same result as passing q.";
  c.options = {
      text_option("--q", "Q.npy", "Queries [B, H, 256] (or [N, 256]): float32 (rounded to bf16) or uint16 (bf16 bits).",
                  true),
      text_option("--out", "QROT.npy", "Output: float32, the shape of Q.", true),
  };
  return c;
}

}  // namespace cli
}  // namespace uq
