// The LDS bank-conflict profile (emulator.hpp, LdsBankSite): the emulator runs a wave's lanes
// one after another, so an LDS instruction's 64 addresses are gathered per access site: the
// n-th execution of a site by each lane of a wave is the n-th instance of that instruction
// (kernels keep LDS accesses in wave-uniform control flow, lanes switched off by predicates
// simply do not take part). A workgroup's instances are costed when it ends.
#include <map>
#include <mutex>
#include <tuple>

#include "state.hpp"

namespace uq::emu {
namespace {

std::mutex g_profile_mutex;
std::vector<LdsBankSite>& profile() {
  static std::vector<LdsBankSite> sites;
  return sites;
}

}  // namespace

LdsBankCost lds_bank_cost(const std::uint32_t (&addr)[64], std::uint64_t active, std::uint32_t bytes,
                          std::uint32_t banks) {
  // A phase moves one row of banks: banks * 4 bytes, i.e. that many bytes' worth of lanes
  // (sub-dword accesses count as a dword each).
  const std::uint32_t lane_bytes = bytes < 4 ? 4 : bytes;
  const std::uint32_t lanes_per_phase = banks * 4 / lane_bytes;
  LdsBankCost cost;
  for (std::uint32_t first = 0; first < 64; first += lanes_per_phase) {
    // distinct dwords per bank in this phase
    std::map<std::uint32_t, std::vector<std::uint32_t>> held;
    bool any = false;
    for (std::uint32_t l = first; l < first + lanes_per_phase && l < 64; ++l) {
      if (((active >> l) & 1u) == 0) continue;
      any = true;
      const std::uint32_t lo = addr[l] / 4, hi = (addr[l] + bytes - 1) / 4;
      for (std::uint32_t dw = lo; dw <= hi; ++dw) {
        std::vector<std::uint32_t>& in_bank = held[dw % banks];
        bool seen = false;
        for (std::uint32_t x : in_bank) seen = seen || x == dw;
        if (!seen) in_bank.push_back(dw);
      }
    }
    if (!any) continue;
    std::uint32_t worst = 0;
    for (const auto& b : held) worst = b.second.size() > worst ? static_cast<std::uint32_t>(b.second.size()) : worst;
    ++cost.phases;
    cost.cycles += worst;
    cost.worst = worst > cost.worst ? worst : cost.worst;
  }
  return cost;
}

std::vector<LdsBankSite> lds_bank_profile() {
  std::lock_guard<std::mutex> lock(g_profile_mutex);
  return profile();
}

void reset_lds_bank_profile() {
  std::lock_guard<std::mutex> lock(g_profile_mutex);
  profile().clear();
}

namespace detail {

struct LdsBankRecorder {
  struct Instance {
    std::uint32_t addr[kLanes] = {};
    std::uint64_t active = 0;
  };
  struct SiteLog {
    const char* file;
    int line;
    const char* op;
    std::uint32_t bytes;
    std::vector<std::uint32_t> next;             // per work-item: its next instance
    std::vector<std::vector<Instance>> by_wave;  // instances of each wave
  };
  std::map<std::tuple<const char*, int, const char*>, SiteLog> sites;
  std::vector<std::tuple<const char*, int, const char*>> order;

  SiteLog& site(const Launch& L, Site at, const char* op, std::uint32_t bytes) {
    const auto key = std::make_tuple(at.file, at.line, op);
    auto it = sites.find(key);
    if (it == sites.end()) {
      SiteLog s{at.file, at.line, op, bytes, std::vector<std::uint32_t>(L.threads.size(), 0),
             std::vector<std::vector<Instance>>(L.waves.size())};
      it = sites.emplace(key, std::move(s)).first;
      order.push_back(key);
    }
    return it->second;
  }
};

void lds_bank_record_lane(Launch& L, const Thread& me, Site at, const char* op, std::uint32_t addr,
                          std::uint32_t bytes) {
  if (!L.config.profile_lds_banks) return;
  if (!L.banks) L.banks = std::make_shared<LdsBankRecorder>();
  LdsBankRecorder::SiteLog& s = L.banks->site(L, at, op, bytes);
  std::vector<LdsBankRecorder::Instance>& mine = s.by_wave[me.wave->index];
  const std::uint32_t n = s.next[me.tid]++;
  if (mine.size() <= n) mine.resize(n + 1);
  mine[n].addr[me.lane] = addr;
  mine[n].active |= std::uint64_t{1} << me.lane;
}

void lds_bank_record_wave(Launch& L, Site at, const char* op, const std::uint32_t (&addr)[kLanes],
                          std::uint32_t bytes) {
  if (!L.config.profile_lds_banks) return;
  if (!L.banks) L.banks = std::make_shared<LdsBankRecorder>();
  LdsBankRecorder::SiteLog& s = L.banks->site(L, at, op, bytes);
  // a rendezvous: one instance of the whole wave (wave 0's slot: the wave index does not matter)
  LdsBankRecorder::Instance in;
  for (std::uint32_t l = 0; l < kLanes; ++l) in.addr[l] = addr[l];
  in.active = ~std::uint64_t{0};
  s.by_wave[0].push_back(in);
}

void lds_bank_flush(Launch& L) {
  if (!L.banks) return;
  std::lock_guard<std::mutex> lock(g_profile_mutex);
  std::vector<LdsBankSite>& out = profile();
  for (const auto& key : L.banks->order) {
    const LdsBankRecorder::SiteLog& s = L.banks->sites.at(key);
    LdsBankSite* rec = nullptr;
    for (LdsBankSite& r : out) {
      if (r.file == s.file && r.line == s.line && r.op == s.op) rec = &r;
    }
    if (rec == nullptr) {
      out.push_back(LdsBankSite{});
      rec = &out.back();
      rec->file = s.file;
      rec->line = s.line;
      rec->op = s.op;
      rec->bytes = s.bytes;
    }
    for (const auto& wave : s.by_wave) {
      for (const LdsBankRecorder::Instance& in : wave) {
        if (in.active == 0) continue;
        const LdsBankCost c64 = lds_bank_cost(in.addr, in.active, s.bytes, 64);
        const LdsBankCost c32 = lds_bank_cost(in.addr, in.active, s.bytes, 32);
        ++rec->instances;
        rec->phases64 += c64.phases;
        rec->cycles64 += c64.cycles;
        rec->phases32 += c32.phases;
        rec->cycles32 += c32.cycles;
        if (c64.worst > rec->max_degree64) rec->max_degree64 = c64.worst;
      }
    }
  }
  L.banks.reset();
}

}  // namespace detail
}  // namespace uq::emu
