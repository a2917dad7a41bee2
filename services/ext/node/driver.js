#!/usr/bin/env node
// lockstep's Node driver: one npm lock library behind the ext process protocol, version 1
// (services/ext/PROTOCOL.md). JSON lines in on stdin, JSON lines out on stdout; logs go to stderr.
//
//   node driver.js --lib NAME --redis HOST:PORT[,HOST:PORT...] [--clients N] [--command-timeout-ms MS]
//   node driver.js --sim --lib NAME --redis sim:0[,sim:1...] [--command-timeout-ms MS]
//   node driver.js [--sim] --lib advisory-lock --postgres HOST:PORT|sim:0 [--application-name NAME]
//   node driver.js [--sim] --lib etcd3 --etcd HOST:PORT[,...]|sim:0[,sim:1...]
//
// --sim: version 2, co-simulated (sim.js): the harness owns time, the network and randomness;
// `sim:I` names the harness's server I.
//
// Requests run concurrently (a shared driver serves several clients at once); each gets exactly one
// response line. A library module (libs/NAME.js) exports
//   create({redis: [{host, port}], postgres: [{host, port}], etcd: [{host, port}], application_name, emit,
//           command_timeout_ms})
//     -> Promise<{name, version, capabilities, acquire, release, extend, is_locked, close}>
// whose operations resolve to {status, token?, err?} and never throw for lock outcomes.
//
// Two ops never reach the library's own protocol surface: `ping` (a pure round trip, for the
// protocol's own cost) and `bench` (an acquire/release loop run here, counted here: the harness's
// benchmark without a protocol round trip per operation). Both are additions to version 1.
"use strict";

const readline = require("node:readline");
const { commands_sent_so_far, endpoints_of } = require("./libs/common.js");

const PROTOCOL = 1;
const LIBS = ["locco-redis", "locco-memory", "node-redlock", "redis-semaphore", "redis-semaphore-redlock",
              "advisory-lock", "etcd3"];
const MAX_LINE_BYTES = 64 * 1024;

function now_ns() {
  return process.hrtime.bigint().toString();  // uv_hrtime: CLOCK_MONOTONIC on Linux
}

function write(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function error_of(e) {
  if (e instanceof Error) return { name: e.name || e.constructor.name, message: String(e.message) };
  return { name: typeof e, message: String(e) };
}

function parse_args(argv) {
  const args = { lib: "", redis: [], postgres: [], etcd: [], application_name: "", clients: 1,
                 command_timeout_ms: 0, sim: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === "--lib") { args.lib = value; i++; }
    else if (flag === "--redis") { args.redis = endpoints_of(value); i++; }
    else if (flag === "--postgres") { args.postgres = endpoints_of(value); i++; }
    else if (flag === "--etcd") { args.etcd = endpoints_of(value); i++; }
    else if (flag === "--application-name") { args.application_name = value; i++; }
    else if (flag === "--clients") { args.clients = Number(value); i++; }
    else if (flag === "--command-timeout-ms") { args.command_timeout_ms = Number(value); i++; }
    else if (flag === "--sim") { args.sim = true; }
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!LIBS.includes(args.lib)) throw new Error(`--lib must be one of ${LIBS.join(", ")}`);
  if (!(args.clients >= 1 && args.clients <= 10000)) throw new Error("--clients must be in [1, 10000]");
  return args;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// op "bench": `loops` concurrent acquire/hold/release loops on `key` from start_ns (CLOCK_MONOTONIC,
// decimal string; now if absent) until stop_ns (or duration_ms after the start). A contended
// attempt backs off 1 + U[0, min(2 << min(n, 3), retry_max_ms)) ms after the n-th failure in a row
// (n from 0; services/redis/bench/redis_bench.cc's backoff for lockstep's own adapter). A library error ends the
// run with status error. Resolves to {status, err?, bench: {successes, attempts, releases,
// release_not_owner, commands, loops, start_ns, end_ns}}: end_ns when the last loop's last release
// settled; commands: what the library's Redis clients sent meanwhile (0 for an in-memory library).
async function run_bench(lib, req, request_key) {
  const loops = Number.isInteger(req.loops) && req.loops >= 1 ? req.loops : 1;
  const hold_ms = Number(req.hold_ms) || 0;
  const retry_max_ms = Number(req.retry_max_ms) > 0 ? Number(req.retry_max_ms) : 16;
  const now = process.hrtime.bigint();
  const start = typeof req.start_ns === "string" ? BigInt(req.start_ns) : now;
  const stop = typeof req.stop_ns === "string" ? BigInt(req.stop_ns) : start + BigInt(Math.round((Number(req.duration_ms) || 0) * 1e6));
  if (stop <= start) return { status: "bad_request", err: { name: "BadRequest", message: "bench: stop_ns (or duration_ms) must be after the start" } };
  if (start > now) await sleep(Number((start - now) / 1000000n));
  while (process.hrtime.bigint() < start) await new Promise(setImmediate);  // the sub-ms rest
  const started = process.hrtime.bigint();
  const commands_before = commands_sent_so_far();
  const counts = { successes: 0, attempts: 0, releases: 0, release_not_owner: 0 };
  let failure = null;
  async function loop(index) {
    const handle = `${request_key}/${index}`;
    let failed_in_row = 0;
    while (failure === null && process.hrtime.bigint() < stop) {
      counts.attempts++;
      const got = await lib.acquire(handle, req.key, req.ttl_ms);
      if (got.status === "contended") {
        const window = Math.min(2 << Math.min(failed_in_row, 3), retry_max_ms);
        failed_in_row++;
        await sleep(1 + Math.floor(Math.random() * window));
        continue;
      }
      if (got.status !== "ok") { failure = failure ?? got; return; }
      failed_in_row = 0;
      if (hold_ms > 0) await sleep(hold_ms);
      const released = await lib.release(handle);
      counts.releases++;
      if (released.status === "not_owner") { counts.release_not_owner++; continue; }
      if (released.status !== "ok" && released.status !== "unknown") { failure = failure ?? released; return; }
      counts.successes++;
    }
  }
  const settled = await Promise.allSettled(Array.from({ length: loops }, (_, i) => loop(i)));
  const thrown = settled.find((s) => s.status === "rejected");
  if (thrown && failure === null) failure = { status: "error", err: error_of(thrown.reason) };
  const bench = Object.assign({ loops, start_ns: started.toString(), end_ns: process.hrtime.bigint().toString(),
                                commands: commands_sent_so_far() - commands_before }, counts);
  if (failure !== null) return { status: failure.status === "contended" ? "error" : failure.status, err: failure.err, bench };
  return { status: "ok", bench };
}

// Blocks the whole event loop (timers, sockets, everything) for duration_ms: a stop-the-world.
function block_event_loop(duration_ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, duration_ms);
}

// One request's result ({status, token?, err?, bench?}), never a throw: both versions share it.
async function serve_request(lib, req) {
  try {
    switch (req.op) {
      case "acquire": return await lib.acquire(handle_of(req), req.key, req.ttl_ms);
      case "release": return await lib.release(handle_of(req));
      case "extend":
        return lib.capabilities.extend ? await lib.extend(handle_of(req), req.ttl_ms) : { status: "unsupported" };
      case "is_locked":
        return lib.capabilities.is_locked ? await lib.is_locked(handle_of(req)) : { status: "unsupported" };
      case "pause": block_event_loop(req.duration_ms); return { status: "ok" };
      case "ping": return { status: "ok" };
      case "bench": return await run_bench(lib, req, `${req.client ?? 0}/bench:${req.id}`);
      default: return { status: "bad_request", err: { name: "BadRequest", message: `unknown op ${req.op}` } };
    }
  } catch (e) {
    return { status: "error", err: error_of(e) };
  }
}

function handle_of(req) { return `${req.client ?? 0}/${req.handle}`; }

// The library module of --lib, made with the endpoints and settings the flags gave.
function create_lib(args, emit) {
  return require(`./libs/${args.lib}.js`).create({
    redis: args.redis, postgres: args.postgres, etcd: args.etcd, application_name: args.application_name, emit,
    command_timeout_ms: args.command_timeout_ms,
  });
}

async function main() {
  const args = parse_args(process.argv.slice(2));
  if (args.sim) {
    const { sim_main } = require("./sim.js");
    const { use_connectors } = require("./libs/common.js");
    return sim_main(args, {
      error_of, serve_request,
      create_lib: ({ connector_for, pg_stream, tcp_connect, now_ns: sim_now_ns, write: sim_write }) => {
        use_connectors(connector_for, pg_stream, tcp_connect);
        const emit = (event) => sim_write(Object.assign({ t_ns: sim_now_ns() }, event));
        return create_lib(args, emit);
      },
    });
  }
  const emit = (event) => write(Object.assign({ t_ns: now_ns() }, event));
  const lib = await create_lib(args, emit);
  write({ ready: true, name: lib.name, version: lib.version, protocol: PROTOCOL,
          capabilities: lib.capabilities, now_ns: now_ns() });

  let closing = false;
  const pending = new Set();

  async function serve(req) {
    const t0 = now_ns();
    const result = await serve_request(lib, req);
    const t1 = now_ns();
    write(Object.assign({ id: req.id, ok: result.status === "ok" }, result, { t0_ns: t0, t1_ns: t1 }));
  }

  const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  input.on("line", (line) => {
    if (closing) return;
    let req;
    try {
      if (Buffer.byteLength(line) > MAX_LINE_BYTES) throw new Error("line too long");
      req = JSON.parse(line);
      if (!Number.isInteger(req.id)) throw new Error("no integer id");
    } catch (e) {
      write({ id: -1, ok: false, status: "bad_request", err: error_of(e), t0_ns: now_ns(), t1_ns: now_ns() });
      return;
    }
    if (req.op === "shutdown") {
      closing = true;
      Promise.allSettled([...pending]).then(async () => {
        try { await lib.close(); } catch (e) { process.stderr.write(`close: ${e}\n`); }
        write({ id: req.id, ok: true, status: "ok", t0_ns: now_ns(), t1_ns: now_ns() });
        process.exit(0);
      });
      return;
    }
    const p = serve(req).finally(() => pending.delete(p));
    pending.add(p);
  });
  // The harness closed our stdin: it is gone or done with us.
  input.on("close", () => { if (!closing) process.exit(0); });
}

process.on("unhandledRejection", (e) => {
  process.stderr.write(`unhandled rejection: ${e && e.stack ? e.stack : e}\n`);
});

main().catch((e) => {
  process.stderr.write(`driver failed: ${e && e.stack ? e.stack : e}\n`);
  process.exit(2);
});
