// CUDA graph replay of the plans (built only in Kokkos CUDA builds; run on the H200): a
// DecodePlan / ScorePlan run with check = false is captured once on the plan's execution-space
// stream and replayed with new block tables, lengths (0 and the table's maximum among them),
// q contents and cache contents written into the same views between replays. Every replay
// must equal, bit for bit, an eager run of the same plan on the same inputs.
//
// A captured graph fixes its grid and its views: num_seqs (num_reqs) is the q extent at capture
// time. A caller with fewer live sequences replays the same graph with seq_len 0 for the rest
// (their rows are written as an empty sequence's); the last replay of each test does that.
#include "support/decode_case.hpp"
#include "support/test_util.hpp"
#include "test_index_common.hpp"
#include "uq/uq.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace {

using namespace uqtest;

#define UQ_CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(cudaGetLastError())

// Captures `body` on `stream` into an executable graph.
cudaGraphExec_t capture(cudaStream_t stream, const std::function<void()>& body) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess);
  body();
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  cudaGraphDestroy(graph);
  return exec;
}

// A Kokkos::Cuda instance on a stream of its own: capture is not allowed on the legacy
// default stream that the default instance uses.
struct CapturableExec {
  cudaStream_t stream = nullptr;
  Kokkos::Cuda exec;
  CapturableExec() : stream(make()), exec(stream) {}
  ~CapturableExec() {
    exec.fence();
    cudaStreamDestroy(stream);
  }
  static cudaStream_t make() {
    cudaStream_t s = nullptr;
    EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    return s;
  }
};

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Decode: 5 sequences, block size 32, a 40-block table; the cache holds every block any
// replay's table can name.
void decode_replays(uq::Backend backend) {
  constexpr int kSeqs = 5, kQg = 8, kHk = 2, kBlock = 32, kMaxBlocks = 40;
  DecodeCase c;
  c.qg = kQg;
  c.num_kv_heads = kHk;
  c.block_size = kBlock;
  c.seq_lens = {kMaxBlocks * kBlock, 1000, 0, 31, 700};
  c.max_blocks_per_seq = kMaxBlocks;
  c.spare_blocks = 5;
  c.strided_q = false;
  const DecodeData d = build_decode_data(c);
  const std::int64_t kNumBlocks = d.num_blocks;
  DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  // Writable copies of the inputs the replays change (the graph keeps these views' pointers).
  DeviceView<uq::bf16***> q("q", kSeqs, kHk * kQg, 256);
  DeviceView<std::uint8_t****> cache("cache", kNumBlocks, kBlock, kHk, 272);
  DeviceView<std::int32_t**> tables("tables", kSeqs, kMaxBlocks);
  DeviceView<std::int32_t*> lens("lens", kSeqs);
  Kokkos::deep_copy(q, in.q);
  Kokkos::deep_copy(cache, in.cache);
  Kokkos::deep_copy(tables, in.tables);
  Kokkos::deep_copy(lens, in.lens);
  DeviceView<uq::bf16***> out_graph("out_graph", kSeqs, kHk * kQg, 256), out_eager("out_eager", kSeqs, kHk * kQg, 256);

  CapturableExec on_stream;
  const Kokkos::Cuda& exec = on_stream.exec;
  uq::DecodeConfig cfg;
  cfg.check = false;
  cfg.backend = backend;
  uq::DecodePlan<Kokkos::Cuda> plan(exec, {kSeqs, kHk, kQg, kBlock, kMaxBlocks}, cfg);
  plan.run(q, cache, tables, lens, out_eager);  // warm-up: lazy set-up happens outside the capture
  exec.fence();
  cudaGraphExec_t graph = capture(exec.cuda_stream(), [&] { plan.run(q, cache, tables, lens, out_graph); });

  std::mt19937_64 rng(77);
  RowGenerator qgen(78, 256, 0), kvgen(79);
  for (int replay = 0; replay < 5; ++replay) {
    // New lengths (the maximum and 0 in every replay but the last, which pads with zeros),
    // a new table, new q, and new tokens written into the cache by the library's writer.
    std::vector<std::int32_t> new_lens(kSeqs), new_tables(static_cast<std::size_t>(kSeqs) * kMaxBlocks);
    for (int b = 0; b < kSeqs; ++b)
      new_lens[b] = replay == 4 ? (b == 1 ? 333 : 0) : static_cast<std::int32_t>(rng() % (kMaxBlocks * kBlock + 1));
    if (replay < 4) {
      new_lens[replay % kSeqs] = kMaxBlocks * kBlock;
      new_lens[(replay + 2) % kSeqs] = 0;
    }
    for (auto& id : new_tables) id = static_cast<std::int32_t>(rng() % kNumBlocks);
    std::vector<std::uint16_t> qbits(static_cast<std::size_t>(kSeqs) * kHk * kQg * 256);
    for (std::size_t r = 0; r < qbits.size() / 256; ++r) qgen.fill(&qbits[r * 256], 1.0f);
    std::vector<uq::bf16> qv(qbits.size());
    for (std::size_t i = 0; i < qv.size(); ++i) qv[i].bits = qbits[i];
    const int T = 64;
    std::vector<uq::bf16> kv(static_cast<std::size_t>(T) * kHk * 256 * 2);
    std::vector<std::uint16_t> kvbits(kv.size());
    for (std::size_t r = 0; r < kv.size() / 256; ++r) kvgen.fill(&kvbits[r * 256], 1.0f);
    for (std::size_t i = 0; i < kv.size(); ++i) kv[i].bits = kvbits[i];
    std::vector<std::int64_t> slots(T);
    for (auto& s : slots) s = static_cast<std::int64_t>(rng() % (kNumBlocks * kBlock));
    std::vector<uq::bf16> kpart(kv.begin(), kv.begin() + static_cast<std::ptrdiff_t>(kv.size() / 2));
    std::vector<uq::bf16> vpart(kv.begin() + static_cast<std::ptrdiff_t>(kv.size() / 2), kv.end());
    uq::write_kv(exec, to_device(kpart, "k", T, kHk, 256), to_device(vpart, "v", T, kHk, 256),
                 to_device(slots, "slots", T), cache);
    Kokkos::deep_copy(lens, to_device(new_lens, "l", kSeqs));
    Kokkos::deep_copy(tables, to_device(new_tables, "t", kSeqs, kMaxBlocks));
    Kokkos::deep_copy(q, to_device(qv, "qn", kSeqs, kHk * kQg, 256));
    Kokkos::deep_copy(out_graph, uq::bf16{kPoisonBf16});
    Kokkos::deep_copy(out_eager, uq::bf16{0x7fc2});
    exec.fence();

    UQ_CUDA_OK(cudaGraphLaunch(graph, exec.cuda_stream()));
    UQ_CUDA_OK(cudaStreamSynchronize(exec.cuda_stream()));
    plan.run(q, cache, tables, lens, out_eager);
    exec.fence();
    const auto g = to_host(out_graph), e = to_host(out_eager);
    ASSERT_EQ(bytes_of(g), bytes_of(e)) << "decode replay " << replay << " differs from the eager run ("
                                        << uq::path_name(plan.path()) << ")";
    // An empty sequence's rows are exactly +0 in both.
    for (int b = 0; b < kSeqs; ++b)
      if (new_lens[b] == 0)
        for (int i = 0; i < kHk * kQg * 256; ++i)
          ASSERT_EQ(g[static_cast<std::size_t>(b) * kHk * kQg * 256 + i].bits, 0) << "replay " << replay;
  }
  cudaGraphExecDestroy(graph);
}

// Scorer: 6 requests, QL 2, 2 heads, a 12-block table over a 40-page cache.
void score_replays(uq::Backend backend) {
  using namespace uqtest::index;
  constexpr int kReqs = 6, kQl = 2, kH = 2, kMaxBlocks = 12, kPages = 40;
  std::mt19937_64 rng(91);
  DeviceView<std::uint8_t**> cache("icache", kPages, kPage);
  Kokkos::deep_copy(cache, to_device(random_cache(rng, kPages, true), "c0", kPages, kPage));
  DeviceView<std::uint8_t***> q("q", kReqs * kQl, kH, kD);
  DeviceView<std::int32_t**> tables("tables", kReqs, kMaxBlocks);
  DeviceView<std::int32_t*> lens("lens", kReqs);
  DeviceView<float***> s_graph("s_graph", kH, kReqs * kQl, kMaxBlocks), s_eager("s_eager", kH, kReqs * kQl, kMaxBlocks);

  CapturableExec on_stream;
  const Kokkos::Cuda& exec = on_stream.exec;
  uq::ScoreConfig cfg;
  cfg.query_len = kQl;
  cfg.init_blocks = 1;
  cfg.local_blocks = 2;
  cfg.check = false;
  cfg.backend = backend;
  uq::ScoreShape shape;
  shape.max_reqs = kReqs;
  shape.query_len = kQl;
  shape.heads = kH;
  shape.max_blocks = kMaxBlocks;
  uq::ScorePlan<Kokkos::Cuda> plan(exec, shape, cfg);
  plan.run(q, cache, tables, lens, s_eager);
  exec.fence();
  cudaGraphExec_t graph = capture(exec.cuda_stream(), [&] { plan.run(q, cache, tables, lens, s_graph); });

  for (int replay = 0; replay < 5; ++replay) {
    std::vector<std::int32_t> new_lens(kReqs), new_tables(static_cast<std::size_t>(kReqs) * kMaxBlocks);
    for (int r = 0; r < kReqs; ++r)
      new_lens[r] = replay == 4 ? (r == 2 ? 300 : 0) : static_cast<std::int32_t>(rng() % (kMaxBlocks * kBlk + 1));
    if (replay < 4) {
      new_lens[replay % kReqs] = kMaxBlocks * kBlk;
      new_lens[(replay + 3) % kReqs] = 0;
    }
    for (auto& id : new_tables) id = static_cast<std::int32_t>(rng() % kPages);
    // New keys written by the library's writer into random slots.
    const int T = 100;
    std::vector<float> keys(static_cast<std::size_t>(T) * kD);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (auto& x : keys) x = n(rng);
    std::vector<std::int64_t> slots(T);
    for (auto& s : slots) s = static_cast<std::int64_t>(rng() % (kPages * kBlk));
    uq::write_index_keys(exec, to_device(keys, "k", T, kD), to_device(slots, "s", T), cache);
    Kokkos::deep_copy(lens, to_device(new_lens, "l", kReqs));
    Kokkos::deep_copy(tables, to_device(new_tables, "t", kReqs, kMaxBlocks));
    Kokkos::deep_copy(q, to_device(random_q(rng, kReqs * kQl * kH * kD), "qn", kReqs * kQl, kH, kD));
    // Entries past a request's blocks are not written: both outputs start equal there.
    Kokkos::deep_copy(s_graph, 7.0f);
    Kokkos::deep_copy(s_eager, 7.0f);
    exec.fence();

    UQ_CUDA_OK(cudaGraphLaunch(graph, exec.cuda_stream()));
    UQ_CUDA_OK(cudaStreamSynchronize(exec.cuda_stream()));
    plan.run(q, cache, tables, lens, s_eager);
    exec.fence();
    ASSERT_EQ(bytes_of(to_host(s_graph)), bytes_of(to_host(s_eager)))
        << "score replay " << replay << " differs from the eager run (" << uq::path_name(plan.path()) << ")";
  }
  cudaGraphExecDestroy(graph);
}

TEST(CudaGraphReplay, DecodeAuto) { decode_replays(uq::Backend::Auto); }
TEST(CudaGraphReplay, DecodeGeneric) { decode_replays(uq::Backend::Generic); }
TEST(CudaGraphReplay, ScoreAuto) { score_replays(uq::Backend::Auto); }
TEST(CudaGraphReplay, ScoreGeneric) { score_replays(uq::Backend::Generic); }

}  // namespace
