// LDS bank-conflict degrees of the gfx950 decode kernels (the one-token and multi-token partition
// kernels and the reducer), for the performance model
// (perf/gfx950_model.py --banks): the kernels' own source runs in the wavefront emulator with
// LaunchConfig::profile_lds_banks on a small ragged problem, and every LDS instruction's cost
// is computed from all 64 lanes' addresses (bank model in arch/emu/emulator.hpp,
// LdsBankSite). Printed as one JSON object:
//
//   {"<kernel>": {"by_instruction": {"ds_write:16": {"degree64": 1.0, "degree32": 2.0,
//                                    "instances": 52, "max64": 1}, ...},
//                 "sites": [{"site": "decode_kernel.hpp:73", "op": "ds_write:16", ...}, ...]}, ...}
//
// degree = cycles / phases over all instances (1 = conflict-free); "ds_read_tr:8" is
// ds_read_b64_tr_b16. The model multiplies each LDS instruction's pipe time by the degree of
// its kind in its kernel. No Kokkos: the launch descriptions are filled by hand.
#include "gfx950/decode_emulated.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using uq::gfx950::DecodePartitionsLaunch;
using uq::gfx950::DecodeQueriesLaunch;
using uq::gfx950::DecodeReduceLaunch;

std::string base_name(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

// The profile gathered since the last reset, as the JSON value of one kernel.
std::string take_profile() {
  struct Sum {
    std::uint64_t instances = 0, phases64 = 0, cycles64 = 0, phases32 = 0, cycles32 = 0;
    std::uint32_t max64 = 0;
  };
  std::map<std::string, Sum> by_kind;
  std::string sites;
  for (const uq::emu::LdsBankSite& s : uq::emu::lds_bank_profile()) {
    const std::string kind = std::string(s.op) + ":" + std::to_string(s.bytes);
    Sum& k = by_kind[kind];
    k.instances += s.instances;
    k.phases64 += s.phases64;
    k.cycles64 += s.cycles64;
    k.phases32 += s.phases32;
    k.cycles32 += s.cycles32;
    k.max64 = s.max_degree64 > k.max64 ? s.max_degree64 : k.max64;
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s{\"site\": \"%s:%d\", \"op\": \"%s\", \"instances\": %llu, \"degree64\": %.4f, "
                  "\"degree32\": %.4f, \"max64\": %u}",
                  sites.empty() ? "" : ", ", base_name(s.file).c_str(), s.line, kind.c_str(),
                  static_cast<unsigned long long>(s.instances),
                  s.phases64 ? static_cast<double>(s.cycles64) / static_cast<double>(s.phases64) : 1.0,
                  s.phases32 ? static_cast<double>(s.cycles32) / static_cast<double>(s.phases32) : 1.0,
                  s.max_degree64);
    sites += line;
  }
  uq::emu::reset_lds_bank_profile();
  std::string kinds;
  for (const auto& [kind, k] : by_kind) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "%s\"%s\": {\"degree64\": %.4f, \"degree32\": %.4f, \"instances\": %llu, \"max64\": %u}",
                  kinds.empty() ? "" : ", ", kind.c_str(),
                  k.phases64 ? static_cast<double>(k.cycles64) / static_cast<double>(k.phases64) : 1.0,
                  k.phases32 ? static_cast<double>(k.cycles32) / static_cast<double>(k.phases32) : 1.0,
                  static_cast<unsigned long long>(k.instances), k.max64);
    kinds += line;
  }
  return "{\"by_instruction\": {" + kinds + "}, \"sites\": [" + sites + "]}";
}

// A ragged batch over one cache: every code path of the partition kernel that valid data takes
// (whole and partial tiles, several blocks, P > 1 with empty partitions).
struct DecodeProblem {
  static constexpr int kSeqs = 3, kBlockSize = 64, kMaxBlocks = 8, kSlot = 272;
  std::vector<std::uint8_t> cache;
  std::vector<std::int32_t> tables, lens{300, 17, 512};
  std::vector<std::uint16_t> q, partial_out;
  std::vector<float> partial_l, partial_m;
  std::vector<unsigned long long> counters = std::vector<unsigned long long>(8, 0);

  // query_len > 1: room for that many query tokens a sequence (q and the partial rows).
  DecodePartitionsLaunch launch(int qg, int partitions, int query_len = 1) {
    std::mt19937 rng(7);
    const int blocks = kSeqs * kMaxBlocks;
    cache.assign(static_cast<std::size_t>(blocks) * kBlockSize * kSlot, 0);
    for (auto& b : cache) b = static_cast<std::uint8_t>(rng() % 120 + 1);  // nonzero scales, finite
    tables.resize(static_cast<std::size_t>(blocks));
    for (int i = 0; i < blocks; ++i) tables[static_cast<std::size_t>(i)] = (i * 5) % blocks;
    q.resize(static_cast<std::size_t>(kSeqs) * query_len * qg * 256);
    for (auto& x : q) x = static_cast<std::uint16_t>(0x3C00 + rng() % 0x400);  // bf16 in [2^-7, 2^-6)
    const std::size_t rows = static_cast<std::size_t>(kSeqs) * query_len * partitions * qg;
    partial_out.assign(rows * 256, 0);
    partial_l.assign(rows, 0.0f);
    partial_m.assign(rows, 0.0f);
    DecodePartitionsLaunch l;
    l.partial_out = partial_out.data();
    l.partial_l = partial_l.data();
    l.partial_m = partial_m.data();
    l.counters = counters.data();
    l.q = q.data();
    l.q_stride_seq = static_cast<std::int64_t>(qg) * 256;
    l.q_stride_head = 256;
    l.cache = cache.data();
    l.num_blocks = blocks;
    l.block_stride = static_cast<std::int64_t>(kBlockSize) * kSlot;
    l.block_size = kBlockSize;
    l.num_kv_heads = 1;
    l.slot_bytes = kSlot;
    l.block_tables = tables.data();
    l.table_stride_seq = kMaxBlocks;
    l.max_blocks_per_seq = kMaxBlocks;
    l.seq_lens = lens.data();
    l.num_seqs = kSeqs;
    l.qg = qg;
    l.partitions = partitions;
    l.tgpp = (kMaxBlocks * kBlockSize / 256 + partitions - 1) / partitions;
    l.scale = 0.0625f;
    return l;
  }
  // The multi-token kernel's launch (spec §5.9): the uniform form of query_len tokens a sequence.
  DecodeQueriesLaunch queries(int qg, int partitions, int query_len) {
    DecodeQueriesLaunch l;
    static_cast<DecodePartitionsLaunch&>(l) = launch(qg, partitions, query_len);
    l.query_len = query_len;
    l.max_query_len = query_len;
    l.num_query_tokens = kSeqs * query_len;
    return l;
  }
};

}  // namespace

int main() {
  std::string out = "{";
  for (int qg : {6, 8, 16}) {
    DecodeProblem d;
    uq::emu::reset_lds_bank_profile();
    // P = 2: partitions with 1 and 2 tile-groups, one sequence shorter than a tile-group
    uq::gfx950::emulate_decode_partitions(d.launch(qg, 2), true);
    out += (qg == 6 ? "" : ", ") + std::string("\"uq_gfx950_decode_qg") + std::to_string(qg) + "\": " + take_profile();
    // The multi-token kernel with the tile full: 16 / QG query tokens a sequence.
    DecodeProblem dq;
    uq::emu::reset_lds_bank_profile();
    uq::gfx950::emulate_decode_queries(dq.queries(qg, 2, 16 / qg), true);
    out += ", \"uq_gfx950_decode_queries_qg" + std::to_string(qg) + "\": " + take_profile();
    // The two-N-tile kernel, full: 32 / QG query tokens a sequence.
    DecodeProblem dq2;
    uq::emu::reset_lds_bank_profile();
    uq::gfx950::emulate_decode_queries(dq2.queries(qg, 2, 32 / qg), true);
    out += ", \"uq_gfx950_decode_queries_2tiles_qg" + std::to_string(qg) + "\": " + take_profile();
    if (qg == 6) {
      // The reducer on these partials, and on a wide plan (P = 300, many empty partitions).
      uq::emu::reset_lds_bank_profile();
      for (int partitions : {2, 300}) {
        DecodeProblem r;
        const DecodePartitionsLaunch pl = r.launch(6, partitions);
        if (partitions != 2) {
          std::mt19937 rng(11);
          for (std::size_t i = 0; i < r.partial_l.size(); ++i) {
            const bool empty = rng() % 3 == 0;
            r.partial_l[i] = empty ? 0.0f : 1.0f + static_cast<float>(rng() % 100);
            r.partial_m[i] = empty ? -__builtin_inff() : static_cast<float>(rng() % 20) * 0.25f;
          }
        } else {
          uq::gfx950::emulate_decode_partitions(pl);
        }
        std::vector<std::uint16_t> o(static_cast<std::size_t>(pl.num_seqs) * 6 * 256);
        DecodeReduceLaunch rl;
        rl.partial_out = r.partial_out.data();
        rl.partial_l = r.partial_l.data();
        rl.partial_m = r.partial_m.data();
        rl.out = o.data();
        rl.out_stride_seq = 6 * 256;
        rl.out_stride_head = 256;
        rl.num_seqs = pl.num_seqs;
        rl.num_kv_heads = 1;
        rl.qg = 6;
        rl.partitions = partitions;
        uq::gfx950::emulate_decode_reduce(rl, true);
      }
      out += ", \"uq_gfx950_decode_reduce\": " + take_profile();
    }
  }
  out += "}";
  std::printf("%s\n", out.c_str());
  return 0;
}
