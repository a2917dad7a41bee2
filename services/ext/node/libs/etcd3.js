// etcd3 1.1.2 (npm): its Lock helper, over etcd's v3 gRPC API (@grpc/grpc-js). acquire() grants
// a lease of the TTL in whole seconds (rounded up; at least 1), then puts the lock's key with that
// lease if its create revision is 0 (a transaction); the key taken already is
// EtcdLockFailedError, after the lease is revoked. One attempt per call, no queue. While held, the
// lease is kept alive by the library on its own stream, every TTL / 3. release() revokes the lease
// and does not say whether it still held the key. No extend, no token (the key's create revision
// is not returned). The library's own code, unchanged: with the harness it reaches the simulated
// members over grpc-js's own HTTP/2 (common.js, hook_grpc_net), against a real cluster through
// real sockets.
//
// The library's key for the harness's key K is lockstep/K/etcd3: under a prefix of K's own, as the
// simulated cluster's lease facts find a lock's holder (the first key created under it).
"use strict";

const { error_of, grpc_host, Handles, hook_grpc_net, release_unreported, version_of } = require("./common.js");

async function create({ etcd }) {
  if (etcd.length === 0) throw new Error("etcd3 needs --etcd HOST:PORT[,HOST:PORT...]");
  hook_grpc_net();
  const { Etcd3, EtcdLockFailedError } = require("etcd3");
  const client = new Etcd3({ hosts: etcd.map(grpc_host) });
  const handles = new Handles();
  return {
    name: "etcd3",
    version: version_of("etcd3"),
    capabilities: { extend: false, is_locked: false, token: "none" },
    async acquire(handle, key, ttl_ms) {
      if (handles.full()) return handles.full_error();
      const lock = client.lock(`lockstep/${key}/etcd3`).ttl(Math.max(1, Math.ceil(ttl_ms / 1000)));
      try {
        await lock.acquire();
      } catch (e) {
        if (e instanceof EtcdLockFailedError) return { status: "contended" };
        return { status: "error", err: error_of(e) };
      }
      handles.add(handle, lock);
      return { status: "ok" };
    },
    // A revoked lease that was gone already is not told apart.
    release: (handle) => release_unreported(handles, handle, (lock) => lock.release()),
    async close() { client.close(); },
  };
}

module.exports = { create };
