// The cache writers against their speed of light, in one process: write_kv and
// write_index_keys (check = false) over T = 1 .. 65536 tokens (write_kv at Hk = 1, 4),
// each beside
//   - two SOL kernels that read exactly the writer's input bytes (bf16 rows and the slot
//     mapping, 16-byte loads, one or four a thread) and write exactly its output bytes
//     (16-byte stores at the same scattered slots), timed the same way; the faster is the SOL;
//   - an empty kernel, launched the same way (the floor of a decode-sized call);
//   - the copy bandwidth of this process (uqbench::copy_bandwidth).
// Two timings of each: per call over back-to-back calls (events around a batch, or
// fences on a host), and a single event-timed call (which measures the launch, not
// the writer, at small T). Inputs rotate through enough copies to exceed 4x the
// last-level cache, for the writer and the SOL kernel alike.
//
//   bench_write [--quick] [--json FILE | --benchmark_out=FILE] [--only NAME] [--no-copy]
//     --quick: T <= 4096; --only write_kv/T65536/Hk1: that row alone; --no-copy: no copy
//     bandwidth (and no JSON), for profilers
//
// Prints a markdown table (as in docs/PERF.md) and, with a file, the same rows as JSON (not
// Google Benchmark's format: perf/report.py does not read it).
#include "bench_support.hpp"
#include "measure/timing.hpp"
#include "uq/uq.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using uqbench::Exec;
using Mem = Exec::memory_space;
using Light = Kokkos::Experimental::WorkItemProperty::HintLightWeight_t;
template <class T>
using DView = Kokkos::View<T, Kokkos::LayoutRight, Mem>;

// ------------------------------------------------------------------ timing
using uq::measure::median;

struct Timing {
  double per_call_s = 0;  // back to back
  double single_s = 0;    // one call, event-timed
};

// call(i) runs the i-th call (i picks the input copy). Back to back: batches of n calls
// lasting >= ~2 ms (at least 3 calls), median of 5 batches; single: median of 15.
Timing time_calls(const std::function<void(int)>& call) {
  const Exec exec;
  for (int i = 0; i < 3; ++i) call(i);  // warm-up: kernels loaded, caches touched
  exec.fence();
  const double once = uqbench::time_on_device(exec, [&] { call(0); });
  const int n = std::max(3, std::min(2000, static_cast<int>(2e-3 / std::max(once, 1e-7))));
  Timing t;
  std::vector<double> batches, singles;
  int i = 0;
  for (int b = 0; b < 5; ++b)
    batches.push_back(uqbench::time_on_device(exec, [&] {
                        for (int j = 0; j < n; ++j) call(i++);
                      }) /
                      n);
  for (int s = 0; s < 15; ++s) singles.push_back(uqbench::time_on_device(exec, [&] { call(i++); }));
  t.per_call_s = median(batches);
  t.single_s = median(singles);
  return t;
}

// ------------------------------------------------------------------ inputs
// Slots as a writer sees them: decode-sized calls (T <= 256) one token per sequence,
// each in its own block; prefill runs of 64 tokens in scattered blocks.
std::vector<std::int64_t> make_slots(int T, int block_size, std::int64_t num_blocks, std::uint64_t seed) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed));
  std::vector<std::int64_t> s(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t)
    s[t] = T <= 256 ? perm[t] * block_size + (t * 7) % block_size
                    : perm[t / block_size] * block_size + t % block_size;
  return s;
}

template <class View>
void fill_bf16(const View& v, std::uint64_t seed) {
  auto flat = Kokkos::View<uq::bf16*, Mem, Kokkos::MemoryUnmanaged>(v.data(), v.size());
  Kokkos::parallel_for(
      "bench::fill_bf16", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, flat.size()),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const std::uint32_t h = uqbench::hash32(static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + seed);
        flat(i) = uq::codec::float_to_bf16((static_cast<float>(h % 20001) - 10000.0f) / 2500.0f);
      });
}

DView<std::int64_t*> slots_view(const std::vector<std::int64_t>& s) {
  DView<std::int64_t*> d("slots", s.size());
  auto h = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < s.size(); ++i) h(i) = s[i];
  Kokkos::deep_copy(d, h);
  return d;
}

// ------------------------------------------------------------------ SOL kernels
// 16 bytes, loaded and stored as one instruction (the bench's own: it is built against
// older library versions too, for before/after runs).
struct alignas(16) Chunk {
  std::uint32_t w[4];
};

// The bytes of the write_kv SOL kernels: dense LayoutRight arrays, heads a power of two, so
// index arithmetic is shifts on 32-bit values (the slot's bytes start at (slot * heads + head)
// * 272) and the kernels are bound by their memory traffic alone.
struct SolKvBytes {
  const Chunk* k;
  const Chunk* v;
  const std::int64_t* slots;
  Chunk* cache;
  int head_shift = 0;
  KOKKOS_INLINE_FUNCTION std::int64_t slot_of(int item) const { return slots[item >> head_shift]; }
  // the 17 chunks of item's slot
  KOKKOS_INLINE_FUNCTION Chunk* slot_chunks(std::int64_t slot, int item) const {
    return cache + ((slot << head_shift) + (item & ((1 << head_shift) - 1))) * 17;
  }
};

// A value made from what a thread read (stored, so that no load is optimised away).
KOKKOS_INLINE_FUNCTION Chunk xor_chunks(const Chunk& a, const Chunk& b, const Chunk& c, const Chunk& d) {
  Chunk o;
  for (int w = 0; w < 4; ++w) o.w[w] = a.w[w] ^ b.w[w] ^ c.w[w] ^ d.w[w];
  return o;
}

// write_kv: per item 64 threads, one 16-byte chunk of K (0..31) or V (32..63) each;
// threads 0..16 also store a 16-byte chunk of the 272-byte slot.
struct SolKv : SolKvBytes {
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int item = i >> 6, c = i & 63;
    Chunk x = (c < 32 ? k : v)[item * 32 + (c & 31)];
    const std::int64_t slot = slot_of(item);
    if (c < 17 && slot >= 0) {
      x.w[0] ^= static_cast<std::uint32_t>(slot);
      slot_chunks(slot, item)[c] = x;
    }
  }
};

// write_kv, 4 chunks a thread: per item 16 threads, thread c loads K chunks c, c + 16 and V
// chunks c, c + 16 (four 16-byte loads in flight before any use: more bytes in flight per
// thread than SolKv) and stores slot chunk c, thread 0 also chunk 16. The SOL of a row is
// the faster of the two kernels.
struct SolKvWide : SolKvBytes {
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int item = i >> 4, c = i & 15;
    const Chunk a = k[item * 32 + c], b = k[item * 32 + c + 16], x = v[item * 32 + c], y = v[item * 32 + c + 16];
    const std::int64_t slot = slot_of(item);
    if (slot < 0) return;
    Chunk* dst = slot_chunks(slot, item);
    dst[c] = xor_chunks(a, b, x, y);
    if (c == 0) dst[16] = a;
  }
};

// The bytes of the write_index_keys SOL kernels: dense bf16 key rows of 16 chunks, the index
// cache's 9216-byte pages (128 tokens: 64 code bytes each, then 8 scale bytes each).
struct SolKeyBytes {
  const Chunk* keys;
  const std::int64_t* slots;
  std::uint8_t* cache;
  // the 4 code chunks of slot's token
  KOKKOS_INLINE_FUNCTION Chunk* code_chunks(std::int64_t slot) const {
    return reinterpret_cast<Chunk*>(cache + (slot >> 7) * 9216 + (slot & 127) * 64);
  }
  // its 8 scale bytes, stored as two words taken from x
  KOKKOS_INLINE_FUNCTION void store_scales(std::int64_t slot, const Chunk& x) const {
    std::uint32_t* s = reinterpret_cast<std::uint32_t*>(cache + (slot >> 7) * 9216 + 8192 + (slot & 127) * 8);
    s[0] = x.w[0];
    s[1] = x.w[1];
  }
};

// write_index_keys, 4 chunks a thread: per token 4 threads, thread c loads key chunks c,
// c + 4, c + 8, c + 12 together and stores code chunk c; thread 0 the 8 scale bytes.
struct SolKeysWide : SolKeyBytes {
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int token = i >> 2, c = i & 3;
    const Chunk a = keys[token * 16 + c], b = keys[token * 16 + c + 4], x = keys[token * 16 + c + 8],
                y = keys[token * 16 + c + 12];
    const std::int64_t slot = slots[token];
    if (slot < 0) return;
    code_chunks(slot)[c] = xor_chunks(a, b, x, y);
    if (c == 0) store_scales(slot, a);
  }
};

// write_index_keys: per token 16 threads, one 16-byte chunk of the bf16 key each;
// threads 0..3 store the 64 code bytes, thread 4 the 8 scale bytes.
struct SolKeys : SolKeyBytes {
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int token = i >> 4, c = i & 15;
    Chunk x = keys[token * 16 + c];
    const std::int64_t slot = slots[token];
    if (c > 4 || slot < 0) return;
    if (c < 4) code_chunks(slot)[c] = x;
    else store_scales(slot, x);
  }
};

struct Empty {
  KOKKOS_INLINE_FUNCTION void operator()(const int) const {}
};

// ------------------------------------------------------------------ rows
struct Row {
  std::string name;
  double bytes;
  Timing writer, sol_narrow, sol_wide;
  // the SOL: the faster of the two SOL kernels (b2b and single each)
  Timing sol() const {
    Timing t;
    t.per_call_s = std::min(sol_narrow.per_call_s, sol_wide.per_call_s);
    t.single_s = std::min(sol_narrow.single_s, sol_wide.single_s);
    return t;
  }
};

std::vector<Row> rows;
Timing empty_kernel;
std::string only;  // --only NAME: one row (profiling)

void bench_write_kv(int T, int Hk) {  // Hk: 1 or 4 (the SOL kernel shifts by log2 Hk)
  const int block_size = 64;
  const std::int64_t num_blocks = (T <= 256 ? T : (T + block_size - 1) / block_size) + 1;
  const double bytes = static_cast<double>(T) * Hk * (2.0 * 512.0 + 272.0) + 8.0 * T;
  const int copies = uqbench::cold_copies(static_cast<std::size_t>(bytes));
  struct Copy {
    DView<uq::bf16***> k, v;
    DView<std::int64_t*> slots;
    DView<std::uint8_t****> cache;
  };
  std::vector<Copy> in;
  for (int c = 0; c < copies; ++c) {
    Copy x;
    x.k = DView<uq::bf16***>("k", T, Hk, 256);
    x.v = DView<uq::bf16***>("v", T, Hk, 256);
    fill_bf16(x.k, 11 + 2 * c);
    fill_bf16(x.v, 12 + 2 * c);
    x.slots = slots_view(make_slots(T, block_size, num_blocks, 5 + c));
    x.cache = DView<std::uint8_t****>("cache", num_blocks, block_size, Hk, 272);
    in.push_back(x);
  }
  uq::WriteKvConfig cfg;
  cfg.check = false;
  const Exec exec;
  uq::KvWriter<Exec> writer(exec, cfg);
  Row r;
  r.name = "write_kv/T" + std::to_string(T) + "/Hk" + std::to_string(Hk);
  r.bytes = bytes;
  r.writer = time_calls([&](int i) {
    const Copy& x = in[i % copies];
    writer.run(x.k, x.v, x.slots, x.cache);
  });
  if (!writer.status().ok()) std::fprintf(stderr, "%s: status %s\n", r.name.c_str(), writer.status().describe().c_str());
  auto sol_bytes = [Hk](const Copy& x) {
    return SolKvBytes{reinterpret_cast<const Chunk*>(x.k.data()), reinterpret_cast<const Chunk*>(x.v.data()), x.slots.data(),
                      reinterpret_cast<Chunk*>(x.cache.data()), Hk == 4 ? 2 : 0};
  };
  r.sol_narrow = time_calls([&](int i) {
    const Copy& x = in[i % copies];
    Kokkos::parallel_for("bench::sol_write_kv", Kokkos::RangePolicy<Exec, Light>(exec, 0, T * Hk * 64),
                         SolKv{sol_bytes(x)});
  });
  r.sol_wide = time_calls([&](int i) {
    const Copy& x = in[i % copies];
    Kokkos::parallel_for("bench::sol_write_kv_wide", Kokkos::RangePolicy<Exec, Light>(exec, 0, T * Hk * 16),
                         SolKvWide{sol_bytes(x)});
  });
  rows.push_back(r);
}

void bench_write_index_keys(int T) {
  const std::int64_t num_blocks = (T + 127) / 128 + 1;
  const double bytes = static_cast<double>(T) * (256.0 + 72.0) + 8.0 * T;
  const int copies = uqbench::cold_copies(static_cast<std::size_t>(bytes));
  struct Copy {
    DView<uq::bf16**> keys;
    DView<std::int64_t*> slots;
    DView<std::uint8_t**> cache;
  };
  std::vector<Copy> in;
  for (int c = 0; c < copies; ++c) {
    Copy x;
    x.keys = DView<uq::bf16**>("keys", T, 128);
    fill_bf16(x.keys, 21 + c);
    // index slots: block * 128 + pos, runs of 128 in scattered pages (decode sizes: one
    // token per sequence, each in its own page)
    std::vector<std::int64_t> s = make_slots(T, 128, T <= 256 ? T + 1 : num_blocks, 7 + c);
    x.slots = slots_view(s);
    x.cache = DView<std::uint8_t**>("index_cache", T <= 256 ? T + 1 : num_blocks, 9216);
    in.push_back(x);
  }
  uq::IndexWriterConfig cfg;
  cfg.check = false;
  const Exec exec;
  uq::IndexKeyWriter<Exec> writer(exec, cfg);
  Row r;
  r.name = "write_index_keys/T" + std::to_string(T);
  r.bytes = bytes;
  r.writer = time_calls([&](int i) {
    const Copy& x = in[i % copies];
    writer.run(x.keys, x.slots, x.cache);
  });
  if (!writer.status().ok()) std::fprintf(stderr, "%s: status %s\n", r.name.c_str(), writer.status().describe().c_str());
  auto key_bytes = [](const Copy& x) {
    return SolKeyBytes{reinterpret_cast<const Chunk*>(x.keys.data()), x.slots.data(), x.cache.data()};
  };
  r.sol_narrow = time_calls([&](int i) {
    const Copy& x = in[i % copies];
    Kokkos::parallel_for("bench::sol_write_index_keys", Kokkos::RangePolicy<Exec, Light>(exec, 0, T * 16),
                         SolKeys{key_bytes(x)});
  });
  r.sol_wide = time_calls([&](int i) {
    const Copy& x = in[i % copies];
    Kokkos::parallel_for("bench::sol_write_index_keys_wide", Kokkos::RangePolicy<Exec, Light>(exec, 0, T * 4),
                         SolKeysWide{key_bytes(x)});
  });
  rows.push_back(r);
}

void print(FILE* f, const char* json, bool measured_copy) {
  const double copy = measured_copy ? uqbench::copy_bandwidth().gb_per_s : 0.0;
  std::fprintf(f, "Execution space: %s, device: %s, copy bandwidth %.1f GB/s; empty kernel %.2f us per call back to "
               "back, %.2f us single\n\n",
               Exec::name(), uq::impl::device_info(Exec()).name.c_str(), copy, 1e6 * empty_kernel.per_call_s,
               1e6 * empty_kernel.single_s);
  std::fprintf(f, "| call | MB | writer us (b2b) | writer us (single) | SOL us (b2b) | SOL 1 / 4 chunks a thread | "
               "writer %% of SOL | writer GB/s | %% of copy |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    const double gbs = r.bytes / r.writer.per_call_s * 1e-9;
    std::fprintf(f, "| %s | %.3f | %.2f | %.2f | %.2f | %.2f / %.2f | %.1f | %.1f | %.1f |\n", r.name.c_str(),
                 r.bytes * 1e-6, 1e6 * r.writer.per_call_s, 1e6 * r.writer.single_s, 1e6 * r.sol().per_call_s,
                 1e6 * r.sol_narrow.per_call_s, 1e6 * r.sol_wide.per_call_s, 100.0 * r.sol().per_call_s / r.writer.per_call_s,
                 gbs, copy > 0 ? 100.0 * gbs / copy : 0.0);
  }
  if (!json) return;
  FILE* j = std::fopen(json, "w");
  if (!j) return;
  std::fprintf(j, "{\"execution_space\": \"%s\", \"device\": \"%s\", \"copy_GB_per_s\": %.3f, \"empty_b2b_s\": %.4e, "
               "\"empty_single_s\": %.4e, \"rows\": [\n",
               Exec::name(), uq::impl::device_info(Exec()).name.c_str(), copy, empty_kernel.per_call_s,
               empty_kernel.single_s);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(j, "  {\"name\": \"%s\", \"bytes\": %.0f, \"writer_b2b_s\": %.4e, \"writer_single_s\": %.4e, "
                 "\"sol_b2b_s\": %.4e, \"sol_single_s\": %.4e, \"sol_narrow_b2b_s\": %.4e, \"sol_wide_b2b_s\": %.4e}%s\n",
                 r.name.c_str(), r.bytes, r.writer.per_call_s, r.writer.single_s, r.sol().per_call_s, r.sol().single_s,
                 r.sol_narrow.per_call_s, r.sol_wide.per_call_s, i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(j, "]}\n");
  std::fclose(j);
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  bool quick = false, copy = true;
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--no-copy") == 0) copy = false;  // profiling runs: skip the 2 GiB copy
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json = argv[++i];
    // ./uq bench passes Google Benchmark's output flag to every bench_* program
    if (std::strncmp(argv[i], "--benchmark_out=", 16) == 0) json = argv[i] + 16;
  }
  if (copy) (void)uqbench::copy_bandwidth();
  const Exec exec;
  empty_kernel = time_calls([&](int) {
    Kokkos::parallel_for("bench::empty", Kokkos::RangePolicy<Exec, Light>(exec, 0, 1), Empty{});
  });
  const std::vector<int> sizes = quick ? std::vector<int>{1, 64, 256, 4096} : std::vector<int>{1, 64, 256, 4096, 65536};
  auto wanted = [](const std::string& name) { return only.empty() || name == only; };
  for (int T : sizes)
    for (int Hk : {1, 4})
      if (wanted("write_kv/T" + std::to_string(T) + "/Hk" + std::to_string(Hk))) bench_write_kv(T, Hk);
  for (int T : sizes)
    if (wanted("write_index_keys/T" + std::to_string(T))) bench_write_index_keys(T);
  print(stdout, copy ? json : nullptr, copy);
  return 0;
}
