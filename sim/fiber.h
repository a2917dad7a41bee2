#pragma once
// A fiber: a body of blocking code with its own stack, resumed by the scheduler and suspending
// itself back to it. One fiber runs at a time; switches happen only at resume()/suspend().
// Boost.Context's fiber (fcontext) by default; its ucontext backend in sanitizer builds so that
// AddressSanitizer sees the stack switches. Each fiber has its own C++ exception-handling state
// (what `throw;` and std::uncaught_exceptions() see), so a fiber may suspend inside a catch block.
// Destroying an unfinished fiber unwinds its stack; one that never ran never runs its body.
#include <cstddef>
#include <functional>
#include <memory>

namespace lockstep::sim {

class Fiber {
 public:
  Fiber(std::function<void()> body, size_t stack_bytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // From the scheduler: runs the fiber until it suspends or finishes. Must not be done().
  void resume();
  // From inside this fiber: returns control to whoever called resume().
  void suspend();
  bool done() const;

  // Exceptions that escape the body are captured here and rethrown by resume() in the caller.
 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::sim
