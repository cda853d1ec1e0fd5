#include "fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define UQ_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UQ_EMU_ASAN 1
#endif
#endif
#if defined(UQ_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// UQ_EMU_UCONTEXT forces the portable switch (to test it on x86-64).
#if defined(__x86_64__) && !defined(UQ_EMU_UCONTEXT)
#define UQ_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace uq::emu::detail {

// ---------------------------------------------------------------- stacks
// A fiber abandoned by a fault leaves ASan's redzone marks of its live frames behind; clear
// them before the stack is reused or unmapped (the addresses may come back as new memory).
namespace {
void forget_frames(void* bottom, std::size_t bytes) {
#if defined(UQ_EMU_ASAN)
  __asan_unpoison_memory_region(bottom, bytes);
#else
  (void)bottom;
  (void)bytes;
#endif
}
}  // namespace

FiberStack::FiberStack(std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  usable_bytes_ = (bytes + page - 1) / page * page;
  mapping_bytes_ = usable_bytes_ + page;
  mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw std::bad_alloc();
  }
  mprotect(mapping_, page, PROT_NONE);
  usable_ = static_cast<char*>(mapping_) + page;
}

FiberStack::~FiberStack() {
  if (mapping_ == nullptr) return;
  forget_frames(usable_, usable_bytes_);
  munmap(mapping_, mapping_bytes_);
}

FiberStack::FiberStack(FiberStack&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(other.mapping_bytes_),
      usable_(other.usable_),
      usable_bytes_(other.usable_bytes_) {}

// ---------------------------------------------------------------- ASan announcements
namespace {

#if defined(UQ_EMU_ASAN)
void announce_switch(void** fake_stack, const Fiber& to) {
  __sanitizer_start_switch_fiber(fake_stack, to.stack_bottom, to.stack_size);
}
void announce_arrival(void* fake_stack, Fiber* from) {
  const void* bottom = nullptr;
  std::size_t size = 0;
  __sanitizer_finish_switch_fiber(fake_stack, &bottom, &size);
  if (from != nullptr && from->stack_bottom == nullptr) {
    from->stack_bottom = bottom;
    from->stack_size = size;
  }
}
#else
void announce_switch(void**, const Fiber&) {}
void announce_arrival(void*, Fiber*) {}
#endif

}  // namespace

#if defined(UQ_EMU_ASM_SWITCH)
// ---------------------------------------------------------------- x86-64 context switch
// uq_emu_fiber_switch(void** save_sp, void* next_sp): pushes the callee-saved registers
// and the FP control words, stores the stack pointer, loads the other one, pops, returns
// into the other context. A new context's frame (fiber_init) returns into
// uq_emu_fiber_start, which calls entry(arg) from r13/r12 on an aligned stack.
extern "C" void uq_emu_fiber_switch(void** save_sp, void* next_sp);
extern "C" void uq_emu_fiber_start();

__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl uq_emu_fiber_switch\n"
    ".hidden uq_emu_fiber_switch\n"
    ".type uq_emu_fiber_switch,@function\n"
    "uq_emu_fiber_switch:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  subq $8, %rsp\n"
    "  stmxcsr (%rsp)\n"
    "  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n"
    "  fldcw 4(%rsp)\n"
    "  addq $8, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size uq_emu_fiber_switch, .-uq_emu_fiber_switch\n"
    ".p2align 4\n"
    ".globl uq_emu_fiber_start\n"
    ".hidden uq_emu_fiber_start\n"
    ".type uq_emu_fiber_start,@function\n"
    "uq_emu_fiber_start:\n"
    "  .cfi_startproc\n"
    "  .cfi_undefined rip\n"
    "  movq %r12, %rdi\n"
    "  callq *%r13\n"
    "  ud2\n"
    "  .cfi_endproc\n"
    ".size uq_emu_fiber_start, .-uq_emu_fiber_start\n");

void fiber_init(Fiber& fiber, FiberStack& stack, void (*entry)(void*), void* arg) {
  forget_frames(stack.bottom(), stack.size());
  auto top = reinterpret_cast<std::uintptr_t>(stack.bottom()) + stack.size();
  top &= ~static_cast<std::uintptr_t>(15);
  auto* frame = reinterpret_cast<std::uint64_t*>(top - 64);
  std::uint32_t mxcsr = 0;
  std::uint16_t fpucw = 0;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fpucw));
  frame[0] = static_cast<std::uint64_t>(mxcsr) | (static_cast<std::uint64_t>(fpucw) << 32);
  frame[1] = 0;                                           // r15
  frame[2] = 0;                                           // r14
  frame[3] = reinterpret_cast<std::uint64_t>(entry);      // r13
  frame[4] = reinterpret_cast<std::uint64_t>(arg);        // r12
  frame[5] = 0;                                           // rbx
  frame[6] = 0;                                           // rbp
  frame[7] = reinterpret_cast<std::uint64_t>(&uq_emu_fiber_start);  // return address
  fiber.sp = frame;
  fiber.stack_bottom = stack.bottom();
  fiber.stack_size = stack.size();
}

void fiber_release(Fiber&) {}

void switch_fiber(Fiber& from, Fiber& to) {
  void* fake_stack = nullptr;
  announce_switch(&fake_stack, to);
  uq_emu_fiber_switch(&from.sp, to.sp);
  announce_arrival(fake_stack, nullptr);
}

void finish_and_switch(Fiber& from, Fiber& to) {
  announce_switch(nullptr, to);
  uq_emu_fiber_switch(&from.sp, to.sp);
  std::abort();  // a finished fiber is never resumed
}

#else
// ---------------------------------------------------------------- ucontext fallback
namespace {
// makecontext passes int arguments only: entry and arg travel as 32-bit halves.
void start_trampoline(unsigned entry_hi, unsigned entry_lo, unsigned arg_hi, unsigned arg_lo) {
  const auto join = [](unsigned hi, unsigned lo) {
    return (static_cast<std::uintptr_t>(hi) << 32) | static_cast<std::uintptr_t>(lo);
  };
  auto entry = reinterpret_cast<void (*)(void*)>(join(entry_hi, entry_lo));
  entry(reinterpret_cast<void*>(join(arg_hi, arg_lo)));
}
ucontext_t& context_of(Fiber& fiber) {
  if (fiber.ucontext == nullptr) fiber.ucontext = new ucontext_t();
  return *static_cast<ucontext_t*>(fiber.ucontext);
}
}  // namespace

void fiber_init(Fiber& fiber, FiberStack& stack, void (*entry)(void*), void* arg) {
  forget_frames(stack.bottom(), stack.size());
  ucontext_t& uc = context_of(fiber);
  getcontext(&uc);
  uc.uc_stack.ss_sp = stack.bottom();
  uc.uc_stack.ss_size = stack.size();
  uc.uc_link = nullptr;
  fiber.stack_bottom = stack.bottom();
  fiber.stack_size = stack.size();
  const auto e = reinterpret_cast<std::uintptr_t>(entry);
  const auto a = reinterpret_cast<std::uintptr_t>(arg);
  makecontext(&uc, reinterpret_cast<void (*)()>(start_trampoline), 4,
              static_cast<unsigned>(static_cast<std::uint64_t>(e) >> 32), static_cast<unsigned>(e),
              static_cast<unsigned>(static_cast<std::uint64_t>(a) >> 32), static_cast<unsigned>(a));
}

void fiber_release(Fiber& fiber) {
  delete static_cast<ucontext_t*>(fiber.ucontext);
  fiber.ucontext = nullptr;
}

void switch_fiber(Fiber& from, Fiber& to) {
  void* fake_stack = nullptr;
  announce_switch(&fake_stack, to);
  swapcontext(&context_of(from), &context_of(to));
  announce_arrival(fake_stack, nullptr);
}

void finish_and_switch(Fiber& from, Fiber& to) {
  announce_switch(nullptr, to);
  swapcontext(&context_of(from), &context_of(to));
  std::abort();
}
#endif

void fiber_started(Fiber& from) { announce_arrival(nullptr, &from); }

}  // namespace uq::emu::detail
