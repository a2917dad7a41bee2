// advisory-lock 2.0.0 (npm): a PostgreSQL session advisory lock. Each tryLock() opens a session of
// its own (a node-postgres Client), takes pg_try_advisory_lock(k1, k2) on it (the key's SHA-256,
// two int32), and keeps the session open while the lock is held; the unlock function it returns
// runs pg_advisory_unlock and closes the session, and resolves without saying whether it
// unlocked. One attempt per call (tryLock, not the blocking lock()); no TTL (ttl_ms is not the
// library's), no extend, no token. The library's own code, unchanged: only its Client reaches the
// harness's streams (common.js, hook_pg_clients).
"use strict";

const { error_of, Handles, hook_pg_clients, release_unreported, version_of } = require("./common.js");

// application_name: what its sessions are called at the server (the harness terminates a client's
// sessions by it).
async function create({ postgres, application_name }) {
  if (postgres.length !== 1) throw new Error("advisory-lock needs --postgres HOST:PORT");
  hook_pg_clients();
  const mutex = require("advisory-lock").default;
  const { host, port } = postgres[0];
  // The superuser of lockstep's private cluster (trust authentication on loopback).
  const name = application_name ? `?application_name=${encodeURIComponent(application_name)}` : "";
  const mutex_of = mutex(`postgres://lockstep@${host}:${port}/postgres${name}`);
  const handles = new Handles();
  return {
    name: "advisory-lock",
    version: version_of("advisory-lock"),
    capabilities: { extend: false, is_locked: false, token: "none" },
    async acquire(handle, key, _ttl_ms) {
      if (handles.full()) return handles.full_error();
      let unlock;
      try {
        unlock = await mutex_of(key).tryLock();
      } catch (e) {
        return { status: "error", err: error_of(e) };
      }
      if (!unlock) return { status: "contended" };
      handles.add(handle, unlock);
      return { status: "ok" };
    },
    // pg_advisory_unlock's answer is not returned.
    release: (handle) => release_unreported(handles, handle, (unlock) => unlock()),
    async close() {},
  };
}

module.exports = { create };
