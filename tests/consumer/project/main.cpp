// A user of the installed package: writes one token and decodes it; the output must
// equal that token's dequantised V (attention over a single token).
#include <uq/uq.hpp>

#include <cmath>
#include <cstdio>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  Kokkos::View<uq::bf16***> k("k", 1, 1, 256), v("v", 1, 1, 256), q("q", 1, 6, 256), out("out", 1, 6, 256);
  Kokkos::View<std::int64_t*> slots("slots", 1);
  Kokkos::View<std::uint8_t****> cache("cache", 2, 16, 1, 272);
  Kokkos::View<std::int32_t**> tables("tables", 1, 1);
  Kokkos::View<std::int32_t*> lens("lens", 1);
  Kokkos::parallel_for(256, KOKKOS_LAMBDA(int d) {
    k(0, 0, d) = uq::codec::float_to_bf16(0.25f * (d % 7) - 0.5f);
    v(0, 0, d) = uq::codec::float_to_bf16(d % 2 ? 1.5f : -3.0f);  // exactly representable: decodes exactly
    for (int h = 0; h < 6; ++h) q(0, h, d) = uq::codec::float_to_bf16(0.1f * h);
    if (d == 0) { slots(0) = 16; tables(0, 0) = 1; lens(0) = 1; }  // token 0 -> block 1, position 0
  });
  uq::write_kv(k, v, slots, cache);
  uq::decode(q, cache, tables, lens, out);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  int bad = 0;
  for (int hq = 0; hq < 6; ++hq)
    for (int d = 0; d < 256; ++d)
      if (uq::codec::bf16_to_float(h(0, hq, d)) != (d % 2 ? 1.5f : -3.0f)) ++bad;
  std::printf("consumer: %s (%d mismatches)\n", bad ? "FAILED" : "ok", bad);
  return bad ? 1 : 0;
}
