// The scheduler: workgroups one after another, lanes as fibers run round-robin until each
// blocks in a rendezvous; rendezvous and barriers; the rule checks that name both sites.
#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

#include "state.hpp"
#include "uq/error.hpp"

namespace uq::emu::detail {
namespace {

thread_local Launch* t_launch = nullptr;
thread_local Thread* t_current = nullptr;

bool same_site(const char* op_a, Site a, const char* op_b, Site b) {
  if (a.line != b.line) return false;
  if (a.file != b.file && std::strcmp(a.file, b.file) != 0) return false;
  return op_a == op_b || std::strcmp(op_a, op_b) == 0;
}

std::string lane_list(const Wave& w) {
  // The lanes waiting in the rendezvous, as ranges.
  const auto here = [&w](std::uint32_t lane) { return ((w.arrived_mask >> lane) & 1u) != 0; };
  std::ostringstream s;
  bool first = true;
  std::uint32_t l = 0;
  while (l < kLanes) {
    if (!here(l)) {
      ++l;
      continue;
    }
    std::uint32_t end = l;
    while (end + 1 < kLanes && here(end + 1)) ++end;
    s << (first ? "" : ",") << l;
    if (end > l) s << "-" << end;
    first = false;
    l = end + 1;
  }
  return s.str();
}

const char* kRule =
    " (cross-lane operations and barriers must be reached by all lanes together: wave-uniform "
    "control flow, mask with predicates, not branches)";

std::string divergence_message(const Thread& me, const char* op, Site at, const Wave& w) {
  return "uq::emu: divergent cross-lane operation: " + who(me) + " reached " + op + " at " +
         where(at) + " while lanes " + lane_list(w) + " of its wave wait at " + w.op + " at " +
         where(w.site) + kRule;
}

std::string last_sync(const Thread& t) {
  if (t.last_op == nullptr) return "no cross-lane operation before";
  return "its last cross-lane operation: " + std::string(t.last_op) + " at " + where(t.last_site);
}

std::string missing_lane_message(const Thread& gone, const char* op, Site at) {
  return "uq::emu: missing lane: " + who(gone) + " returned from the kernel (" + last_sync(gone) +
         ") while its wave reaches " + op + " at " + where(at) + kRule;
}

std::string missing_wave_message(const Launch& L, std::uint32_t gone_wave, Site at) {
  const Wave& w = L.waves[gone_wave];
  return "uq::emu: missing wave: wave " + std::to_string(gone_wave) +
         " returned from the kernel (" + last_sync(*w.lanes[0]) + ") while other waves of " +
         "workgroup (" + std::to_string(L.workgroup[0]) + "," + std::to_string(L.workgroup[1]) +
         "," + std::to_string(L.workgroup[2]) + ") wait at barrier at " + where(at) +
         " (every wave must reach every barrier)";
}

std::string barrier_mismatch_message(const Launch& L, std::uint32_t wave, Site at) {
  return "uq::emu: divergent barrier: wave " + std::to_string(wave) + " reached barrier at " +
         where(at) + " while wave " + std::to_string(L.barrier_first_wave) +
         " waits at barrier at " + where(L.barrier_site) + " of workgroup (" +
         std::to_string(L.workgroup[0]) + "," + std::to_string(L.workgroup[1]) + "," +
         std::to_string(L.workgroup[2]) + ")";
}

std::string hang_message(const Launch& L) {
  std::string s = "uq::emu: no lane can run:";
  for (const Wave& w : L.waves) {
    if (w.arrived > 0) s += " wave " + std::to_string(w.index) + " waits at " + w.op + " at " + where(w.site) + ";";
  }
  return s;
}

// ---------------------------------------------------------------- lane lifecycle
void lane_finished(Thread& me) {
  Launch& L = *t_launch;
  Wave& w = *me.wave;
  me.finished = true;
  if (w.finished_lanes++ == 0) w.first_finished_lane = me.lane;
  if (w.arrived > 0) fault(missing_lane_message(me, w.op, w.site));
  if (w.finished_lanes == kLanes) {
    ++L.finished_waves;
    if (L.barrier_waves > 0) fault(missing_wave_message(L, w.index, L.barrier_site));
  }
}

void lane_entry(void*) {
  Launch& L = *t_launch;
  fiber_started(L.scheduler);
  {
    Thread& me = *t_current;
    try {
      L.body(L.body_arg);
    } catch (...) {
      L.exception = std::current_exception();
    }
    // Outside the handler: a fiber must not leave while an exception is being handled.
    if (L.exception) {
      L.faulted = true;
    } else {
      lane_finished(me);
    }
  }
  finish_and_switch(t_current->fiber, L.scheduler);
}

// ---------------------------------------------------------------- barrier
// The wave part of a barrier is a rendezvous; its compute adds the wave to the workgroup's
// barrier and holds the wave until the last wave arrives.
void barrier_compute(Wave& w) {
  Launch& L = *t_launch;
  if (L.finished_waves > 0) {
    for (const Wave& other : L.waves) {
      if (other.finished_lanes == kLanes) fault(missing_wave_message(L, other.index, w.site));
    }
  }
  if (L.barrier_waves == 0) {
    L.barrier_site = w.site;
    L.barrier_first_wave = w.index;
  } else if (!same_site("barrier", L.barrier_site, "barrier", w.site)) {
    fault(barrier_mismatch_message(L, w.index, w.site));
  }
  if (++L.barrier_waves < L.waves.size()) {
    w.hold = true;
    return;
  }
  L.barrier_waves = 0;
  for (Wave& other : L.waves) {
    ++other.barriers;
    for (Thread* t : other.lanes) t->blocked = false;
  }
}

void wave_barrier_compute(Wave&) {}

void run_workgroup(Launch& L) {
  for (Wave& w : L.waves) {
    w.arrived = 0;
    w.hold = false;
    w.finished_lanes = 0;
    w.arrived_mask = 0;
    w.epoch = 0;
    w.barriers = 0;
  }
  L.barrier_waves = 0;
  L.finished_waves = 0;
  for (std::size_t t = 0; t < L.threads.size(); ++t) {
    Thread& th = L.threads[t];
    th.blocked = false;
    th.finished = false;
    th.last_op = nullptr;
    fiber_init(th.fiber, L.stacks[t], &lane_entry, nullptr);
  }
  // LDS content and race records start afresh in every workgroup.
  std::fill(L.lds.begin(), L.lds.begin() + L.lds_used, L.config.lds_poison);
  if (L.config.detect_lds_races) {
    std::fill(L.lds_last_write.begin(), L.lds_last_write.begin() + L.lds_used, LdsAccess{});
    std::fill(L.lds_last_read.begin(), L.lds_last_read.begin() + L.lds_used, LdsAccess{});
  }

  std::size_t finished = 0;
  while (finished < L.threads.size()) {
    bool progressed = false;
    finished = 0;
    for (Thread& th : L.threads) {
      if (!th.finished && !th.blocked) {
        t_current = &th;
        switch_fiber(L.scheduler, th.fiber);
        t_current = nullptr;
        progressed = true;
        if (L.faulted) return;
      }
      if (th.finished) ++finished;
    }
    if (!progressed && finished < L.threads.size()) {
      L.faulted = true;
      L.fault_message = hang_message(L);
      return;
    }
  }
}

void check_config(const LaunchConfig& c) {
  const char* fn = "uq::emu::launch";
  if (c.waves_per_workgroup < 1 || c.waves_per_workgroup > kMaxWaves) {
    throw uq::Error(fn, "config.waves_per_workgroup", "1..16 (64..1024 lanes)",
                    std::to_string(c.waves_per_workgroup));
  }
  if (c.grid.x == 0 || c.grid.y == 0 || c.grid.z == 0) {
    throw uq::Error(fn, "config.grid", "at least 1 workgroup in x, y and z",
                    std::to_string(c.grid.x) + "x" + std::to_string(c.grid.y) + "x" +
                        std::to_string(c.grid.z));
  }
  if (c.stack_bytes < 16 * 1024) {
    throw uq::Error(fn, "config.stack_bytes", ">= 16384", std::to_string(c.stack_bytes));
  }
}

// Restores the OS thread's emulator pointers when run() leaves (also by an exception).
struct ActiveLaunch {
  Launch* previous_launch;
  Thread* previous_thread;
  explicit ActiveLaunch(Launch& L) : previous_launch(t_launch), previous_thread(t_current) {
    t_launch = &L;
    t_current = nullptr;
  }
  ~ActiveLaunch() {
    t_launch = previous_launch;
    t_current = previous_thread;
  }
};

}  // namespace

// ---------------------------------------------------------------- shared helpers
Launch& launch_state() { return *t_launch; }

Thread& current_thread(Site at, const char* op) {
  if (t_current == nullptr) {
    throw Fault(std::string("uq::emu: ") + op + " at " + where(at) +
                " called outside a kernel running in uq::emu::launch");
  }
  return *t_current;
}

void fault(std::string message) {
  Launch& L = *t_launch;
  L.faulted = true;
  L.fault_message = std::move(message);
  finish_and_switch(t_current->fiber, L.scheduler);
}

std::string where(Site at) {
  if (at.file == nullptr) return "?";
  return std::string(at.file) + ":" + std::to_string(at.line);
}

std::string who(const Thread& t) {
  const Launch& L = *t_launch;
  return "lane " + std::to_string(t.lane) + " of wave " + std::to_string(t.wave->index) +
         " of workgroup (" + std::to_string(L.workgroup[0]) + "," +
         std::to_string(L.workgroup[1]) + "," + std::to_string(L.workgroup[2]) + ")";
}

void rendezvous(const char* op, Site at, Compute compute, const void* operand, void* result) {
  Thread& me = current_thread(at, op);
  Wave& w = *me.wave;
  if (w.finished_lanes > 0) fault(missing_lane_message(*w.lanes[w.first_finished_lane], op, at));
  if (w.arrived == 0) {
    w.op = op;
    w.site = at;
    w.compute = compute;
  } else if (!same_site(w.op, w.site, op, at)) {
    fault(divergence_message(me, op, at, w));
  }
  w.operand[me.lane] = operand;
  w.result[me.lane] = result;
  w.arrived_mask |= std::uint64_t{1} << me.lane;
  me.last_op = op;
  me.last_site = at;
  if (++w.arrived < kLanes) {
    me.blocked = true;
    switch_fiber(me.fiber, launch_state().scheduler);
    return;
  }
  // The last lane: compute for everyone. The epoch is odd while the rendezvous itself
  // touches LDS, so those accesses are ordered after every lane's earlier ones and before
  // every lane's later ones.
  w.arrived = 0;
  w.hold = false;
  ++w.epoch;
  w.compute(w);
  ++w.epoch;
  w.arrived_mask = 0;
  if (w.hold) {
    me.blocked = true;
    switch_fiber(me.fiber, launch_state().scheduler);
    return;
  }
  for (Thread* t : w.lanes) t->blocked = false;
}

// ---------------------------------------------------------------- ids and synchronisation
std::uint32_t lane_id(Site at) { return current_thread(at, "lane_id").lane; }
std::uint32_t thread_id(Site at) { return current_thread(at, "thread_id").tid; }
std::uint32_t wave_id(Site at) { return current_thread(at, "wave_id").wave->index; }
std::uint32_t workgroup_id(int dim, Site at) {
  current_thread(at, "workgroup_id");
  return t_launch->workgroup[dim];
}

void barrier(Site at) { rendezvous("barrier", at, &barrier_compute, nullptr, nullptr); }
void wave_barrier(Site at) { rendezvous("wave_barrier", at, &wave_barrier_compute, nullptr, nullptr); }

// ---------------------------------------------------------------- launch
void run(const LaunchConfig& config, void (*body)(void*), void* arg) {
  check_config(config);
  if (t_current != nullptr) {
    throw Fault("uq::emu::launch: called from inside an emulated kernel");
  }
  Launch L;
  L.config = config;
  L.body = body;
  L.body_arg = arg;
  const std::uint32_t n = config.waves_per_workgroup * kLanes;
  L.stacks.reserve(n);
  for (std::uint32_t t = 0; t < n; ++t) L.stacks.emplace_back(config.stack_bytes);
  L.threads.resize(n);
  L.waves.resize(config.waves_per_workgroup);
  for (std::uint32_t t = 0; t < n; ++t) {
    Thread& th = L.threads[t];
    th.tid = t;
    th.lane = t % kLanes;
    th.wave = &L.waves[t / kLanes];
    th.wave->lanes[th.lane] = &th;
  }
  for (std::uint32_t w = 0; w < config.waves_per_workgroup; ++w) L.waves[w].index = w;
  L.mfma_a.assign(16 * 128, 0.0);
  L.mfma_b.assign(128 * 16, 0.0);

  ActiveLaunch active(L);
  for (std::uint32_t z = 0; z < config.grid.z && !L.faulted; ++z) {
    for (std::uint32_t y = 0; y < config.grid.y && !L.faulted; ++y) {
      for (std::uint32_t x = 0; x < config.grid.x && !L.faulted; ++x) {
        L.workgroup[0] = x;
        L.workgroup[1] = y;
        L.workgroup[2] = z;
        run_workgroup(L);
        if (!L.faulted) lds_bank_flush(L);
      }
    }
  }
  for (Thread& th : L.threads) fiber_release(th.fiber);
  fiber_release(L.scheduler);
  if (L.exception) std::rethrow_exception(L.exception);
  if (L.faulted) throw Fault(L.fault_message);
}

}  // namespace uq::emu::detail
