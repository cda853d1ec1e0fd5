// Cooperative fibers for the emulator's lanes: a stack per lane and a context switch.
//
// On x86-64 the switch is a few instructions of assembly (callee-saved registers, MXCSR and
// the x87 control word): ucontext's swapcontext makes a signal-mask system call per switch,
// and the emulator switches twice per lane per cross-lane operation. Other architectures
// use ucontext. Under AddressSanitizer every switch is announced to ASan.
#pragma once

#include <cstddef>

namespace uq::emu::detail {

// An mmap'ed stack with an inaccessible guard page below it: an overflow faults at once
// instead of corrupting the neighbouring lane.
class FiberStack {
 public:
  explicit FiberStack(std::size_t bytes);
  ~FiberStack();
  FiberStack(FiberStack&& other) noexcept;
  FiberStack& operator=(FiberStack&&) = delete;
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;

  void* bottom() const { return usable_; }  // lowest usable address
  std::size_t size() const { return usable_bytes_; }

 private:
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
  void* usable_ = nullptr;
  std::size_t usable_bytes_ = 0;
};

// A suspended execution context. The scheduler's context is captured by the first switch.
struct Fiber {
  void* sp = nullptr;               // saved stack pointer (x86-64 switch)
  void* ucontext = nullptr;         // ucontext_t storage (other architectures)
  const void* stack_bottom = nullptr;  // for ASan: the stack this context runs on
  std::size_t stack_size = 0;
};

// Prepares `fiber` to start entry(arg) on `stack` at its next switch_to. entry must never
// return: it ends by switching away for good (finish_and_switch).
void fiber_init(Fiber& fiber, FiberStack& stack, void (*entry)(void*), void* arg);
void fiber_release(Fiber& fiber);

// Saves the running context into `from` and resumes `to`.
void switch_fiber(Fiber& from, Fiber& to);
// Like switch_fiber, for a fiber that will never be resumed (its stack may be reused).
[[noreturn]] void finish_and_switch(Fiber& from, Fiber& to);
// First thing a new fiber does: completes the switch that started it; `from` is the context
// that switched to it (whose stack bounds ASan reports back).
void fiber_started(Fiber& from);

}  // namespace uq::emu::detail
