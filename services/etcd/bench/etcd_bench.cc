// BM_Sweep/etcd and BM_Sweep/etcd-lock (bench/sweep_bench.h): seeds of swarm workloads against the
// simulated 3-member cluster, 100 seeds per iteration (measured on the shared 2-core machine, one
// core: etcd 370 seeds/s, etcd-lock 720 seeds/s). No real-server contention cases: Debian's etcd
// on loopback is timed by its election and lessor ticks, not by the lock.
#include "bench/sweep_bench.h"

namespace {

[[maybe_unused]] const bool kSweepRegistered =
    lockstep::bench::register_sweep_benchmark({.adapter = "etcd", .seeds = 100}) &&
    lockstep::bench::register_sweep_benchmark({.adapter = "etcd-lock", .seeds = 100});

}  // namespace
