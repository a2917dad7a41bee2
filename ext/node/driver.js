#!/usr/bin/env node
// lockstep's Node driver: one npm lock library behind the ext process protocol, version 1
// (ext/PROTOCOL.md). JSON lines in on stdin, JSON lines out on stdout; logs go to stderr.
//
//   node driver.js --lib NAME --redis HOST:PORT[,HOST:PORT...] [--clients N] [--command-timeout-ms MS]
//
// Requests run concurrently (a shared driver serves several clients at once); each gets exactly one
// response line. A library module (libs/NAME.js) exports
//   create({redis: [{host, port}], emit, command_timeout_ms}) -> Promise<{name, version, capabilities, acquire, release,
//                                                     extend, is_locked, close}>
// whose operations resolve to {status, token?, err?} and never throw for lock outcomes.
"use strict";

const readline = require("node:readline");

const PROTOCOL = 1;
const LIBS = ["locco-redis", "locco-memory", "node-redlock", "redis-semaphore", "redis-semaphore-redlock"];
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
  const args = { lib: "", redis: [], clients: 1, command_timeout_ms: 0 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === "--lib") { args.lib = value; i++; }
    else if (flag === "--redis") {
      args.redis = value.split(",").filter(Boolean).map((endpoint) => {
        const at = endpoint.lastIndexOf(":");
        return { host: endpoint.slice(0, at), port: Number(endpoint.slice(at + 1)) };
      });
      i++;
    } else if (flag === "--clients") { args.clients = Number(value); i++; }
    else if (flag === "--command-timeout-ms") { args.command_timeout_ms = Number(value); i++; }
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!LIBS.includes(args.lib)) throw new Error(`--lib must be one of ${LIBS.join(", ")}`);
  if (!(args.clients >= 1 && args.clients <= 10000)) throw new Error("--clients must be in [1, 10000]");
  return args;
}

// Blocks the whole event loop (timers, sockets, everything) for duration_ms: a stop-the-world.
function block_event_loop(duration_ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, duration_ms);
}

async function main() {
  const args = parse_args(process.argv.slice(2));
  const emit = (event) => write(Object.assign({ t_ns: now_ns() }, event));
  const lib = await require(`./libs/${args.lib}.js`).create({ redis: args.redis, emit, command_timeout_ms: args.command_timeout_ms });
  write({ ready: true, name: lib.name, version: lib.version, protocol: PROTOCOL,
          capabilities: lib.capabilities, now_ns: now_ns() });

  let closing = false;
  const pending = new Set();
  const handle_of = (req) => `${req.client ?? 0}/${req.handle}`;

  async function serve(req) {
    const t0 = now_ns();
    let result;
    try {
      switch (req.op) {
        case "acquire": result = await lib.acquire(handle_of(req), req.key, req.ttl_ms); break;
        case "release": result = await lib.release(handle_of(req)); break;
        case "extend":
          result = lib.capabilities.extend ? await lib.extend(handle_of(req), req.ttl_ms) : { status: "unsupported" };
          break;
        case "is_locked":
          result = lib.capabilities.is_locked ? await lib.is_locked(handle_of(req)) : { status: "unsupported" };
          break;
        case "pause": block_event_loop(req.duration_ms); result = { status: "ok" }; break;
        default: result = { status: "bad_request", err: { name: "BadRequest", message: `unknown op ${req.op}` } };
      }
    } catch (e) {
      result = { status: "error", err: error_of(e) };
    }
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
