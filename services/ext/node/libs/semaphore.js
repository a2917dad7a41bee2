// redis-semaphore 5.8.0: Mutex (one node) and RedlockMutex (every node), with their defaults except
// one acquire attempt per call and onLockLost reported as an event instead of thrown from a timer.
"use strict";

const semaphore = require("redis-semaphore");
const { connect, error_of, Handles, release_unreported, version_of } = require("./common.js");

function make(name, new_mutex, close, emit) {
  const handles = new Handles();
  return {
    name,
    version: version_of("redis-semaphore"),
    capabilities: { extend: false, is_locked: false, token: "random" },
    async acquire(handle, key, ttl_ms) {
      if (handles.full()) return handles.full_error();
      const mutex = new_mutex(key, {
        lockTimeout: ttl_ms,
        acquireAttemptsLimit: 1,
        retryInterval: 0,
        onLockLost: (e) => emit({ event: "lock_lost", handle, key, err: error_of(e) }),
      });
      try {
        if (!(await mutex.tryAcquire())) return { status: "contended" };
      } catch (e) {
        return { status: "error", err: error_of(e) };
      }
      handles.add(handle, mutex);
      return { status: "ok", token: mutex.identifier };
    },
    // release() resolves whether or not it deleted the key.
    release: (handle) => release_unreported(handles, handle, (mutex) => mutex.release()),
    close,
  };
}

async function create_mutex({ redis, emit, command_timeout_ms }) {
  const [client] = await connect(redis.slice(0, 1), command_timeout_ms);
  return make("redis-semaphore", (key, options) => new semaphore.Mutex(client, key, options),
              async () => { await client.quit(); }, emit);
}

async function create_redlock_mutex({ redis, emit, command_timeout_ms }) {
  const clients = await connect(redis, command_timeout_ms);
  return make("redis-semaphore-redlock", (key, options) => new semaphore.RedlockMutex(clients, key, options),
              async () => { await Promise.all(clients.map((c) => c.quit().catch(() => {}))); }, emit);
}

module.exports = { create_mutex, create_redlock_mutex };
