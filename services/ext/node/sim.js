// The Node drivers' co-simulated mode: ext protocol version 2 (services/ext/PROTOCOL.md, "Version 2").
//
// The harness owns this process's time, network and randomness:
// - time: @sinonjs/fake-timers replaces Date, performance.now, process.hrtime and the timer
//   functions; each harness line carries the client's simulated clocks, which the fake clock is
//   moved to (monotonic first, firing due timers, then the wall clock);
// - network: every ioredis client is built with SimConnector, every node-postgres Client with a
//   pg_stream, and @grpc/grpc-js's net.connect makes a tcp_connect stream: each writes the
//   library's bytes as `send` lines and is fed by `recv` lines; no real socket is ever opened;
// - randomness: Math.random and node:crypto's random sources draw from a PRNG seeded by the harness.
// After each harness line the driver runs until idle and says when its next timer is due. So
// everything it writes is a function of what it was sent: the run stays a function of the seed.
//
// A driver may serve many runs one after another (op `reset` ends one, the next `init` starts the
// next): the harness keeps drivers warm across a sweep's seeds. What a run sees is what it would
// see in a fresh process: the clock and the random sources are reset, not replaced, and the
// library is built anew.
//
// Invariants: one exchange at a time (the harness waits for `idle`); nothing here reads the real
// clock once installed, except the bounded settle loop's real setImmediate, which only yields to
// Node's own queues (promise jobs, nextTick) and never decides anything.
"use strict";

const { Duplex } = require("node:stream");
const crypto = require("node:crypto");
const FakeTimers = require("@sinonjs/fake-timers");

const PROTOCOL = 2;
const SETTLE_ROUNDS_MAX = 10000;  // a bound on the settle loop: a library that never idles fails
const CONNECTIONS_MAX = 1000;     // a bound on connections one driver opens

// Captured before the fake clock is installed: the settle loop yields with the real one.
const real_set_immediate = setImmediate;

// --- randomness -----------------------------------------------------------------------------

// xoshiro128** over 32-bit words, seeded by splitmix32 from a string: small, exact, portable.
function make_prng(seed_text) {
  let h = 0x9e3779b9;
  for (let i = 0; i < seed_text.length; i++) h = Math.imul(h ^ seed_text.charCodeAt(i), 0x85ebca6b) >>> 0;
  const splitmix = () => {
    h = (h + 0x9e3779b9) >>> 0;
    let z = h;
    z = Math.imul(z ^ (z >>> 16), 0x21f0aaad) >>> 0;
    z = Math.imul(z ^ (z >>> 15), 0x735a2d97) >>> 0;
    return (z ^ (z >>> 15)) >>> 0;
  };
  const s = [splitmix(), splitmix(), splitmix(), splitmix()];
  const rotl = (x, k) => ((x << k) | (x >>> (32 - k))) >>> 0;
  return function next_u32() {
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] = (s[2] ^ t) >>> 0;
    s[3] = rotl(s[3], 11);
    return result;
  };
}

// Replaces every random source the libraries reach, once per process: the replacements draw from
// `current_prng`, which each init seeds anew. Installed once, because a module may keep a reference
// to a replaced function (`const { randomBytes } = require("node:crypto")`): in a driver reused for
// another run (op `reset`) that reference must draw from the new run's generator, as it would in a
// fresh process.
let current_prng = null;
function seed_randomness(seed_text) {
  const first = current_prng === null;
  current_prng = make_prng(seed_text);
  if (!first) return;
  const next_u32 = () => current_prng();
  const fill = (view) => {
    const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    for (let i = 0; i < bytes.length; i++) bytes[i] = next_u32() & 0xff;
    return view;
  };
  Math.random = () => (next_u32() * 2 ** 21 + (next_u32() >>> 11)) / 2 ** 53;
  crypto.randomBytes = (size, callback) => {
    const buffer = fill(Buffer.alloc(size));
    if (typeof callback === "function") { process.nextTick(callback, null, buffer); return undefined; }
    return buffer;
  };
  crypto.randomFillSync = (view, offset = 0, size) => {
    const end = size === undefined ? view.byteLength : offset + size;
    fill(new Uint8Array(view.buffer || view, (view.byteOffset || 0) + offset, end - offset));
    return view;
  };
  // node:crypto's getRandomValues is a fixed getter for webcrypto's (globalThis.crypto): seed
  // the method on that object, which both reach.
  crypto.webcrypto.getRandomValues = (view) => fill(view);
  crypto.randomUUID = () => {
    const b = fill(Buffer.alloc(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const hex = b.toString("hex");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
}

// --- time -----------------------------------------------------------------------------------

// The fake clock, installed once per process: a module may keep a reference to a faked function
// (`const { setTimeout } = globalThis` at load), so a reused driver keeps the same clock and
// resets it (no timers, hrtime 0, Date at the new run's wall clock), which is where a fresh
// install starts.
let installed_clock = null;
function fresh_clock(wall_ms) {
  if (installed_clock === null) {
    installed_clock = FakeTimers.install({
      now: wall_ms,
      toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "setImmediate",
               "clearImmediate", "Date", "hrtime", "performance"],
      shouldAdvanceTime: false,
      loopLimit: SETTLE_ROUNDS_MAX,
    });
  } else {
    installed_clock.reset();  // every timer dropped unfired; hrtime and performance.now read 0
    installed_clock.setSystemTime(wall_ms);
  }
  return installed_clock;
}

class SimClock {
  constructor(now) {
    this.mono_base_ns = BigInt(now.mono_ns);  // hrtime reads 0 at install: add this back
    this.mono_ns = this.mono_base_ns;
    this.clock = fresh_clock(now.wall_ms);
  }
  // Monotonic first (timers fire on the way), then the wall clock (a jump moves Date only).
  advance(now) {
    const mono_ns = BigInt(now.mono_ns);
    if (mono_ns > this.mono_ns) {
      this.clock.tick(Number(mono_ns - this.mono_ns) / 1e6);
      this.mono_ns = mono_ns;
    }
    if (this.clock.now !== now.wall_ms) this.clock.setSystemTime(now.wall_ms);
  }
  // The harness's monotonic time as last advanced: faked hrtime is not trusted across a wall-clock
  // jump (setSystemTime), and a duration must never come out negative.
  now_ns() { return this.mono_ns.toString(); }
  due_now() {
    for (const timer of this.clock.timers ? this.clock.timers.values() : []) {
      if (timer.callAt <= this.clock.now) return true;
    }
    return false;
  }
  // The earliest pending timer on the monotonic clock (ns), or null. Rounded up: a tick at that
  // time always fires it.
  next_timer_ns() {
    let first = null;
    for (const timer of this.clock.timers ? this.clock.timers.values() : []) {
      if (first === null || timer.callAt < first) first = timer.callAt;
    }
    if (first === null) return null;
    const ahead_ms = Math.max(0, first - this.clock.now);
    return (this.mono_ns + BigInt(Math.ceil(ahead_ms * 1e6))).toString();
  }
}

// --- network --------------------------------------------------------------------------------

// One connection's stream: what the library writes leaves as `send` lines, `recv` lines push.
class SimStream extends Duplex {
  constructor(conn, write) {
    super();
    this.conn = conn;
    this.write_line = write;
    this.connecting = false;  // connected at once: ioredis runs its connect handler next tick
    this.close_said = false;
  }
  _write(chunk, _encoding, callback) {
    this.write_line({ send: this.conn, data: Buffer.from(chunk).toString("base64") });
    callback();
  }
  _read() {}
  _final(callback) {
    this.say_close();
    this.push(null);
    callback();
  }
  _destroy(err, callback) {
    this.say_close();
    callback(err);
  }
  say_close() {
    if (this.close_said || this.conn === 0) return;  // 0: never connected
    this.close_said = true;
    this.write_line({ close: this.conn });
  }
  // Socket options of a real TCP socket: nothing to do for a simulated one (idle timeouts are not
  // simulated: ioredis sets one only while connecting, which is instant here).
  setNoDelay() { return this; }
  setKeepAlive() { return this; }
  setTimeout() { return this; }
}

class SimNet {
  constructor(write) {
    this.live = true;  // false once its run is over (op reset): its streams write nothing more
    this.write = (line) => { if (this.live) write(line); };
    this.next_conn = 1;
    this.streams = new Map();
  }
  // An ioredis Connector class (options.Connector) for server `server` (its index in --redis).
  connector_for(server) {
    const net = this;
    return class SimConnector {
      constructor(options) { this.options = options; this.stream = null; }
      check() { return true; }
      connect() {
        if (net.next_conn > CONNECTIONS_MAX) return Promise.reject(new Error(`more than ${CONNECTIONS_MAX} connections`));
        const conn = net.next_conn++;
        net.write({ connect: conn, server });
        this.stream = new SimStream(conn, net.write);
        net.streams.set(conn, this.stream);
        this.stream.on("close", () => net.streams.delete(conn));
        return Promise.resolve(this.stream);
      }
      disconnect() { if (this.stream) this.stream.end(); }
    };
  }
  // A node-postgres stream (its Client's `stream` option): its connection opens when pg calls
  // connect(port, host) on it, to server `port` of the endpoint `sim:PORT`.
  pg_stream() {
    const net = this;
    const stream = new SimStream(0, net.write);
    stream.connect = (port, host) => {
      const server = Number(port);
      if (host !== "sim" || !Number.isInteger(server)) {
        process.nextTick(() => stream.destroy(new Error(`not a simulated server: ${host}:${port}`)));
        return stream;
      }
      if (net.next_conn > CONNECTIONS_MAX) {
        process.nextTick(() => stream.destroy(new Error(`more than ${CONNECTIONS_MAX} connections`)));
        return stream;
      }
      const conn = net.next_conn++;
      stream.conn = conn;
      net.write({ connect: conn, server });
      net.streams.set(conn, stream);
      stream.on("close", () => net.streams.delete(conn));
      process.nextTick(() => stream.emit("connect"));  // connected at once, as a socket's event
      return stream;
    };
    return stream;
  }
  // A TCP socket as net.connect makes it (what @grpc/grpc-js opens for etcd3), to server `server`:
  // connected at once, on_connect called as net.connect's callback is.
  tcp_connect(server, on_connect) {
    const stream = this.pg_stream();
    if (on_connect) stream.once("connect", on_connect);
    return stream.connect(server, "sim");
  }
  recv(conn, data) {
    const stream = this.streams.get(conn);
    if (stream) stream.push(Buffer.from(data, "base64"));
  }
  closed(conn) {
    const stream = this.streams.get(conn);
    if (stream) { stream.close_said = true; stream.destroy(); }
  }
}

// --- modules with process-wide state ----------------------------------------------------------

// Packages that keep state for the whole process, which a fresh process would not have: grpc-js's
// global subchannel pool keeps the last run's connections (streams of a SimNet that is gone) and
// hands them to the next run's channels, and bignumber.js draws a random number as it loads. A
// reset forgets etcd3 and every package it brings, so the next run's require() loads them anew,
// drawing as a fresh process would. (ioredis is kept: its cached package.json spares every run a
// real file read; pg too: common.js replaced its Client once.)
const PROCESS_STATE_PACKAGES = ["etcd3", "@grpc/grpc-js", "@grpc/proto-loader", "bignumber.js",
                                "cockatiel", "protobufjs", "@protobufjs/", "long", "lodash.camelcase",
                                "@js-sdsl/"].map((name) => `/node_modules/${name.replace(/\/$/, "")}/`);
function forget_process_state_modules() {
  for (const file of Object.keys(require.cache)) {
    if (PROCESS_STATE_PACKAGES.some((dir) => file.includes(dir))) delete require.cache[file];
  }
}

// --- the exchange loop ----------------------------------------------------------------------

// Runs until idle: Node's own queues drained (a real setImmediate comes after every promise job
// and nextTick queued before it) and no fake timer due, twice in a row (a drained queue can have
// made a timer due at this very instant, e.g. a setImmediate).
async function settle(sim_clock) {
  let quiet = 0;
  for (let round = 0; round < SETTLE_ROUNDS_MAX; round++) {
    await new Promise((resolve) => real_set_immediate(resolve));
    if (sim_clock && sim_clock.due_now()) { sim_clock.clock.tick(0); quiet = 0; continue; }
    if (++quiet >= 2) return;
  }
  throw new Error(`not idle after ${SETTLE_ROUNDS_MAX} rounds`);
}

// serve(req) -> Promise<result>: the version 1 request handling of driver.js, shared.
async function sim_main(args, { error_of, serve_request, create_lib }) {
  const readline = require("node:readline");
  // An exchange's lines leave in one write, with its idle line: a write per line would wake the
  // harness for each, and it can do nothing with them before idle.
  const pending_lines = [];
  const write = (obj) => { pending_lines.push(JSON.stringify(obj)); };
  // The exchange's last line, and the write of all of them.
  const write_idle = (next_timer_ns) => {
    write({ idle: true, next_timer_ns });
    process.stdout.write(pending_lines.join("\n") + "\n");
    pending_lines.length = 0;
  };
  // Real I/O a library starts would finish at a real time, outside any exchange: do it first.
  // ioredis reads its package.json (fs, the thread pool) on every connect, once cached no more.
  // node-postgres loads its native binding lazily only when asked (pg.native): never here.
  await require("ioredis/built/utils").getPackageMeta();
  let net = new SimNet(write);
  let sim_clock = null;
  let lib = null;
  let closing = false;

  async function handle(line) {
    const msg = JSON.parse(line);
    if (!msg.now || typeof msg.now.mono_ns !== "string" || typeof msg.now.wall_ms !== "number") {
      throw new Error("every line carries now: {wall_ms, mono_ns}");
    }
    if (msg.op === "reset") {
      // The run is over; the next line is an init, as to a fresh process. The library's objects
      // are dropped without closing (their connections were simulated), their timers with the
      // clock's reset, and what they would still write goes nowhere.
      if (!sim_clock) throw new Error("reset before init");
      net.live = false;
      net = new SimNet(write);
      sim_clock.clock.reset();
      sim_clock = null;
      lib = null;
      forget_process_state_modules();
      await settle(null);
      write_idle(null);
      return;
    }
    if (msg.op === "init") {
      if (sim_clock) throw new Error("a second init");
      sim_clock = new SimClock(msg.now);
      seed_randomness(String(msg.seed));
      const run_net = net;  // this run's: a reset gives the next run a net of its own
      const run_clock = sim_clock;
      create_lib({ connector_for: (server) => run_net.connector_for(server), pg_stream: () => run_net.pg_stream(),
                   tcp_connect: (server, on_connect) => run_net.tcp_connect(server, on_connect),
                   now_ns: () => run_clock.now_ns(), write })
        .then((created) => {
          lib = created;
          write({ ready: true, name: lib.name, version: lib.version, protocol: PROTOCOL,
                  capabilities: lib.capabilities, now_ns: run_clock.now_ns() });
        }, (e) => {
          process.stderr.write(`driver failed: ${e && e.stack ? e.stack : e}\n`);
          process.exit(2);
        });
    } else {
      if (!sim_clock) throw new Error("init first");
      sim_clock.advance(msg.now);
      switch (msg.op) {
        case "tick": break;
        case "recv": net.recv(msg.conn, msg.data); break;
        case "closed": net.closed(msg.conn); break;
        case "shutdown":
          closing = true;
          if (lib) lib.close().catch(() => {});
          break;
        default: {
          if (!lib) throw new Error("a request before ready");
          if (!Number.isInteger(msg.id)) throw new Error("no integer id");
          const t0 = sim_clock.now_ns();
          serve_request(lib, msg).then((result) => {
            write(Object.assign({ id: msg.id, ok: result.status === "ok" }, result,
                                { t0_ns: t0, t1_ns: sim_clock.now_ns() }));
          });
        }
      }
    }
    await settle(sim_clock);
    write_idle(sim_clock.next_timer_ns());
    if (closing) process.exit(0);
  }

  // Lines are handled strictly one after another (the harness sends the next only after idle).
  let chain = Promise.resolve();
  const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  input.on("line", (line) => {
    chain = chain.then(() => handle(line)).catch((e) => {
      process.stderr.write(`sim exchange failed: ${e && e.stack ? e.stack : e}\n`);
      write({ id: -1, ok: false, status: "bad_request", err: error_of(e), t0_ns: "0", t1_ns: "0" });
      write_idle(null);
    });
  });
  input.on("close", () => { if (!closing) process.exit(0); });
}

module.exports = { sim_main };
