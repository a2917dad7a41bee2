// lockstep's whole command line (list, run, sweep, matrix, replay, calibrate) for my own lock.
#include <memory>
#include <string>

#include "lockstep/cli.h"
#include "lockstep/registry.h"
#include "my_deadline_lock.h"
#include "my_fenced_lock.h"
#include "my_keyed_locks.h"
#include "my_lock.h"
#include "my_whole_client.h"
#include "redis_lock_kit.h"

void register_my_lock(std::string name, my_lock::MyLock::Extend extend, std::string description) {
  // What the lock claims to be, so every scenario that fits it judges it by that: a lease lock on
  // one Redis (redis_lock_kit.h), no fencing token, owner-checked release and extend. Both
  // variants claim the same; one lies.
  lockstep::register_adapter(my_redis::redis_lock_entry(
      std::move(name), std::move(description), {.tokens = lockstep::TokenKind::none},
      [extend](lockstep::RedisConnection& c,
               lockstep::ClientSeams) -> std::unique_ptr<lockstep::LockAdapter> {
        return std::make_unique<my_lock::MyLock>(c, extend);
      }));
}

int main(int argc, char** argv) {
  register_my_lock("my-correct", my_lock::MyLock::Extend::owner_checked, "my Redis lock");
  register_my_lock("my-buggy", my_lock::MyLock::Extend::plain_pexpire, "extends by plain PEXPIRE");
  my_keyed::register_my_keyed_locks();           // my-rw, my-rw-buggy, my-fifo, my-fifo-buggy
  my_deadline::register_my_deadline_locks();     // my-deadline, my-deadline-buggy
  my_whole_client::register_my_whole_clients();  // my-whole-client, my-whole-client-buggy
  my_fenced::register_my_fenced_locks();         // my-fenced, my-fenced-buggy
  return lockstep::cli_main(argc, argv);
}
