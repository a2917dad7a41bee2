#include "sim/fiber.h"

#include <cstdlib>
#include <exception>
#include <new>
#include <utility>
#include <vector>

#include <cxxabi.h>
#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>

#include "sim/assert.h"

namespace lockstep::sim {
namespace ctx = boost::context;

namespace {

// The C++ runtime keeps one per-thread record of the exceptions being handled (the stack that
// `throw;` and std::uncaught_exceptions() read). Fibers share the thread, so a fiber suspended
// inside a catch block would see another fiber's exceptions on that stack when it resumes: each
// fiber gets its own copy, swapped in around every resume. (libstdc++ layout: unwind-cxx.h.)
struct EhGlobals {
  void* caught_exceptions = nullptr;
  unsigned int uncaught_exceptions = 0;
};

EhGlobals* thread_eh_globals() { return reinterpret_cast<EhGlobals*>(abi::__cxa_get_globals()); }

// Fiber stacks are reused: a run starts a fiber per client and per server task, and a fresh
// 256 KiB stack was an mmap, page faults on every page it touched, and a munmap (a fifth of a
// memory-adapter sweep seed, by perf). A finished fiber's stack goes to its thread's free list
// (at most kStackPoolMax; the pages it touched stay mapped) and the next fiber of that size takes
// it. What a stack held is never read: a fiber starts on a fresh frame. One thread's fibers are
// created and destroyed on that thread, so the list needs no lock.
constexpr size_t kStackPoolMax = 256;

struct StackPool {
  struct Block {
    void* base = nullptr;
    size_t bytes = 0;
  };
  std::vector<Block> free;
  StackPool() { free.reserve(kStackPoolMax); }  // deallocate() is noexcept: it never grows it
  ~StackPool() {
    for (const Block& b : free) std::free(b.base);
  }
};

StackPool& stack_pool() {
  thread_local StackPool pool;
  return pool;
}

// Boost.Context's StackAllocator, fixedsize_stack's layout (malloc'd, sp at the top).
class PooledStack {
 public:
  explicit PooledStack(size_t bytes) : bytes_(bytes) {}

  ctx::stack_context allocate() {
    std::vector<StackPool::Block>& free = stack_pool().free;
    void* base = nullptr;
    for (size_t i = free.size(); i-- > 0;) {  // bounded by kStackPoolMax
      if (free[i].bytes != bytes_) continue;
      base = free[i].base;
      free.erase(free.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
    if (base == nullptr) base = std::malloc(bytes_);
    if (base == nullptr) throw std::bad_alloc();
    ctx::stack_context stack;
    stack.size = bytes_;
    stack.sp = static_cast<char*>(base) + bytes_;
    return stack;
  }

  void deallocate(ctx::stack_context& stack) noexcept {
    void* base = static_cast<char*>(stack.sp) - stack.size;
    std::vector<StackPool::Block>& free = stack_pool().free;
    if (free.size() >= kStackPoolMax) return std::free(base);
    free.push_back({.base = base, .bytes = stack.size});
  }

 private:
  size_t bytes_;
};

}  // namespace

struct Fiber::Impl {
  std::function<void()> body;
  ctx::fiber self;    // the suspended fiber, while it is not running
  ctx::fiber caller;  // inside the fiber: where suspend() returns to
  EhGlobals eh;       // this fiber's exception-handling state while it is not running
  bool running = false;
  bool started = false;
  bool abandoned = false;  // destroyed before it ever ran: the body must not start
  bool done = false;
  std::exception_ptr failure;

  ctx::fiber enter(ctx::fiber&& from) {
    caller = std::move(from);
    started = true;
    // fcontext unwinds a never-started fiber without entering here; ucontext enters it instead.
    if (abandoned) return std::move(caller);
    try {
      body();
    } catch (const ctx::detail::forced_unwind&) {
      throw;  // Boost.Context unwinding a destroyed fiber: must reach its entry frame
    } catch (...) {
      failure = std::current_exception();
    }
    done = true;
    body = nullptr;  // captures die on the fiber's own stack, like the rest of its frames
    return std::move(caller);
  }
};

Fiber::Fiber(std::function<void()> body, size_t stack_bytes) : impl_(std::make_unique<Impl>()) {
  LOCKSTEP_SIM_CHECK(body != nullptr, "a fiber needs a body");
  LOCKSTEP_SIM_CHECK(stack_bytes >= size_t{16} * 1024,
                     "a fiber stack below 16 KiB cannot hold much");
  impl_->body = std::move(body);
  Impl* impl = impl_.get();
  impl_->self = ctx::fiber(std::allocator_arg, PooledStack(stack_bytes),
                           [impl](ctx::fiber&& from) { return impl->enter(std::move(from)); });
}

// Destroying a suspended, unfinished fiber unwinds its stack (Boost.Context's forced_unwind), on
// the fiber's own exception-handling state like any other run of it.
Fiber::~Fiber() {
  if (!impl_->self) return;  // finished: nothing left on its stack
  impl_->abandoned = !impl_->started;
  EhGlobals* eh = thread_eh_globals();
  const EhGlobals outer = std::exchange(*eh, impl_->eh);
  impl_->self = ctx::fiber();
  *eh = outer;
}

void Fiber::resume() {
  LOCKSTEP_SIM_CHECK(!impl_->done, "resume() of a finished fiber");
  LOCKSTEP_SIM_CHECK(!impl_->running, "resume() of a running fiber (no nesting)");
  EhGlobals* eh = thread_eh_globals();
  const EhGlobals outer = std::exchange(*eh, impl_->eh);
  impl_->running = true;
  impl_->self = std::move(impl_->self).resume();
  impl_->running = false;
  impl_->eh = std::exchange(*eh, outer);
  if (impl_->failure) std::rethrow_exception(std::exchange(impl_->failure, nullptr));
}

void Fiber::suspend() {
  LOCKSTEP_SIM_CHECK(impl_->running, "suspend() from outside the fiber");
  impl_->caller = std::move(impl_->caller).resume();
}

bool Fiber::done() const { return impl_->done; }

}  // namespace lockstep::sim

#if defined(BOOST_USE_UCONTEXT)
// The ucontext backend (sanitizer builds) keeps a per-thread "current activation record" that
// Boost defines in its compiled library only when that library is built for ucontext. Debian's
// is built for fcontext, so the definitions live here: the thread's main context is created the
// first time it is asked for and deleted when the thread ends.
namespace boost::context::detail {
namespace {
thread_local fiber_activation_record* current_record = nullptr;
thread_local size_t record_users = 0;
}  // namespace

fiber_activation_record_initializer::fiber_activation_record_initializer() noexcept {
  if (record_users++ == 0) current_record = new fiber_activation_record();
}

fiber_activation_record_initializer::~fiber_activation_record_initializer() {
  if (--record_users == 0) {
    delete current_record;
    current_record = nullptr;
  }
}

fiber_activation_record*& fiber_activation_record::current() noexcept {
  thread_local fiber_activation_record_initializer initializer;
  return current_record;
}

}  // namespace boost::context::detail
#endif
