// redlock 5.0.0-beta.2 (node-redlock) over one ioredis client per node.
"use strict";

const { default: Redlock, ExecutionError, ResourceLockedError } = require("redlock");
const { connect, error_of, Handles, RELEASED_ALREADY, RETIRED, UNKNOWN_HANDLE, version_of } = require("./common.js");

// How long to wait for the votes still out when classifying a failed attempt.
const VOTES_WAIT_MS = 200;

// Contention when some node voted against because the key was locked; else an error. Votes still
// out after VOTES_WAIT_MS say nothing of the key (a slow or cut-off node), so they are an error,
// never contention: the attempt failed for a reason nobody saw.
async function classify_failure(e) {
  if (!(e instanceof ExecutionError)) return { status: "error", err: error_of(e) };
  const last = e.attempts[e.attempts.length - 1];
  if (last === undefined) return { status: "not_owner", err: error_of(e) };  // refused before any vote
  const stats = await Promise.race([last, new Promise((resolve) => setTimeout(resolve, VOTES_WAIT_MS, null))]);
  if (stats === null) {
    const err = error_of(e);
    return { status: "error", err: { ...err, message: `${err.message} (votes still out after ${VOTES_WAIT_MS} ms)` } };
  }
  const against = [...stats.votesAgainst.values()];
  const locked = against.some((v) => v instanceof ResourceLockedError);
  return locked ? { status: "contended", err: error_of(e) } : { status: "error", err: error_of(e) };
}

async function create({ redis, command_timeout_ms }) {
  const clients = await connect(redis, command_timeout_ms);
  // retryCount 0: one attempt per call (acquire, release, extend); the harness retries.
  const redlock = new Redlock(clients, { retryCount: 0 });
  const handles = new Handles();
  return {
    name: "node-redlock",
    version: version_of("redlock"),
    capabilities: { extend: true, is_locked: false, token: "random" },
    async acquire(handle, key, ttl_ms) {
      if (handles.full()) return handles.full_error();
      try {
        const lock = await redlock.acquire([key], ttl_ms);
        handles.add(handle, lock);
        // Its own validity (start + TTL - drift, by Date.now()): what its caller is told.
        return { status: "ok", token: lock.value, valid_until_ms: Math.round(lock.expiration) };
      } catch (e) {
        return classify_failure(e);
      }
    },
    async release(handle) {
      const lock = handles.get(handle);
      if (!lock) return UNKNOWN_HANDLE;
      if (lock === RETIRED) return RELEASED_ALREADY;
      try {
        await lock.release();
        handles.retire(handle);
        return { status: "ok" };
      } catch (e) {
        const failure = await classify_failure(e);
        if (failure.status !== "contended") return failure;
        handles.retire(handle);
        return { status: "not_owner", err: failure.err };
      }
    },
    async extend(handle, ttl_ms) {
      const lock = handles.get(handle);
      if (!lock) return UNKNOWN_HANDLE;
      if (lock === RETIRED) return RELEASED_ALREADY;
      try {
        const extended = await lock.extend(ttl_ms);  // extend returns a new Lock
        handles.add(handle, extended);
        return { status: "ok", valid_until_ms: Math.round(extended.expiration) };
      } catch (e) {
        const failure = await classify_failure(e);
        return failure.status === "contended" ? { status: "not_owner", err: failure.err } : failure;
      }
    },
    async close() { await Promise.all(clients.map((c) => c.quit().catch(() => {}))); },
  };
}
module.exports = { create, classify_failure };
