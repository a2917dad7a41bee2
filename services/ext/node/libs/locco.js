// @kontsedal/locco 0.1.0 over any of its adapters (ioredis or in-memory).
"use strict";

const locco = require("@kontsedal/locco");
const { error_of, Handles, RELEASED_ALREADY, RETIRED, UNKNOWN_HANDLE, version_of } = require("./common.js");

// One attempt per acquire: locco's retry() stops once retryTimes <= attempts made.
const ONE_ATTEMPT = { retryTimes: 1, retryDelay: 0 };

function make(name, adapter, close) {
  const locker = new locco.Locker({ adapter, retrySettings: ONE_ATTEMPT });
  const handles = new Handles();
  return {
    name,
    version: version_of("@kontsedal/locco"),
    capabilities: { extend: true, is_locked: true, token: "random" },
    async acquire(handle, key, ttl_ms) {
      if (handles.full()) return handles.full_error();
      const lock = locker.lock(key, ttl_ms);
      try {
        await lock.acquire();
      } catch (e) {
        if (e instanceof locco.errors.RetryError) return { status: "contended", err: error_of(e) };
        return { status: "error", err: error_of(e) };
      }
      handles.add(handle, lock);
      return { status: "ok", token: lock.uniqueValue };
    },
    async release(handle) {
      const lock = handles.get(handle);
      if (!lock) return UNKNOWN_HANDLE;
      if (lock === RETIRED) return RELEASED_ALREADY;
      try {
        await lock.release({ throwOnFail: true });
        handles.retire(handle);
        return { status: "ok" };
      } catch (e) {
        // LockReleaseError: the store refused; LoccoError: the Lock object refuses (released already).
        if (e instanceof locco.errors.LoccoError && !(e instanceof locco.errors.ValidationError)) {
          handles.retire(handle);  // gone either way: a second release is "not ours" again
          return { status: "not_owner", err: error_of(e) };
        }
        return { status: "error", err: error_of(e) };
      }
    },
    async extend(handle, ttl_ms) {
      const lock = handles.get(handle);
      if (!lock) return UNKNOWN_HANDLE;
      if (lock === RETIRED) return RELEASED_ALREADY;
      try {
        await lock.extend(ttl_ms);
        return { status: "ok" };
      } catch (e) {
        // LockExtendError: the store refused; LoccoError: the Lock object refuses (released already).
        if (e instanceof locco.errors.LoccoError && !(e instanceof locco.errors.ValidationError)) {
          return { status: "not_owner", err: error_of(e) };
        }
        return { status: "error", err: error_of(e) };
      }
    },
    async is_locked(handle) {
      const lock = handles.get(handle);
      if (!lock) return UNKNOWN_HANDLE;
      if (lock === RETIRED) return { status: "not_owner" };
      return (await lock.isLocked()) ? { status: "ok" } : { status: "not_owner" };
    },
    close,
  };
}

module.exports = { make };
