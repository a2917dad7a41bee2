// What the library modules share: ioredis clients that are connected before the driver says ready,
// the handle table, and turning a thrown error into {name, message}.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const Redis = require("ioredis");

const MAX_HANDLES = 100000;  // a bound on live acquisitions per driver

// Commands the libraries' ioredis clients sent (every client, every node): the driver's `bench` op
// reports the count over its window as server calls. Counting only: the command is sent as before.
let commands_sent = 0;
function commands_sent_so_far() { return commands_sent; }
function count_commands(client) {
  const send = client.sendCommand;
  client.sendCommand = function (...args) {
    commands_sent++;
    return send.apply(this, args);
  };
}

function error_of(e) {
  if (e instanceof Error) return { name: e.name || e.constructor.name, message: String(e.message) };
  return { name: typeof e, message: String(e) };
}

// Co-simulated drivers (sim.js): connector_for(I) is the ioredis Connector class of the harness's
// server I, which the endpoint `sim:I` names; pg_stream() a node-postgres stream that connects to
// `sim:I`; tcp_connect(I, cb) a socket connected to server I. Unset: real sockets.
let connector_for = null;
let pg_stream = null;
let tcp_connect = null;
function use_connectors(factory, pg_stream_factory = null, tcp_connect_factory = null) {
  connector_for = factory;
  pg_stream = pg_stream_factory;
  tcp_connect = tcp_connect_factory;
}

// node-postgres's Client as the libraries get it (require("pg").Client, replaced once, on the
// first call, since a library reads it when it makes a client): over the harness's streams when
// co-simulated, and with an "error" listener, so that an error on an idle client (the server
// ended its session) is seen by the library at its next call instead of being thrown at the
// process, as connect() does for ioredis. Without one, node-postgres's documented behaviour is an
// uncaught exception.
let pg_hooked = false;
function hook_pg_clients() {
  if (pg_hooked) return;
  pg_hooked = true;
  const pg = require("pg");
  const OriginalPgClient = pg.Client;
  pg.Client = class LockstepPgClient extends OriginalPgClient {
    constructor(config) {
      const options = typeof config === "string" ? { connectionString: config } : Object.assign({}, config);
      if (pg_stream) options.stream = () => pg_stream();
      super(options);
      this.on("error", () => {});
    }
  };
}

// net.connect as @grpc/grpc-js calls it (etcd3's transport: `net.connect({host, port}, cb)`, then
// HTTP/2 over the socket), replaced once: when co-simulated, a connection to 127.0.0.1:PORT is a
// harness stream to server PORT - 1 (etcd3 is given hosts 127.0.0.1:1, 127.0.0.1:2, ... for
// `sim:0`, `sim:1`, ...: IP literals, so grpc-js resolves nothing), and any other connect fails;
// otherwise net.connect is left as it is.
let net_hooked = false;
const SIM_GRPC_HOST = "127.0.0.1";
function hook_grpc_net() {
  if (net_hooked || !tcp_connect) return;
  net_hooked = true;
  const net = require("node:net");
  net.connect = net.createConnection = function sim_connect(options, on_connect) {
    const server = options && options.host === SIM_GRPC_HOST ? Number(options.port) - 1 : -1;
    if (!Number.isInteger(server) || server < 0) {
      throw new Error(`co-simulated: no real connection (${JSON.stringify(options)})`);
    }
    return tcp_connect(server, on_connect);
  };
}
// The etcd3 host of an endpoint: `sim:I` when co-simulated (see hook_grpc_net), else host:port.
function grpc_host({ host, port }) {
  return host === "sim" ? `${SIM_GRPC_HOST}:${port + 1}` : `${host}:${port}`;
}

// ioredis clients with their defaults (no command timeout unless command_timeout_ms > 0), one per
// endpoint, each connected (bounded wait).
async function connect(endpoints, command_timeout_ms = 0) {
  if (endpoints.length === 0) throw new Error("this library needs --redis HOST:PORT");
  const options = command_timeout_ms > 0 ? { commandTimeout: command_timeout_ms } : {};
  const clients = endpoints.map(({ host, port }) => new Redis(Object.assign(
    { host, port }, options, connector_for && host === "sim" ? { Connector: connector_for(port) } : {})));
  clients.forEach(count_commands);
  await Promise.all(clients.map((client) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis ${client.options.port}: not ready in 5 s`)), 5000);
    client.once("ready", () => { clearTimeout(timer); resolve(); });
  })));
  // After the start, connection errors are the library's to see in its calls; do not crash on them.
  for (const client of clients) client.on("error", () => {});
  return clients;
}

// The lock objects of live acquisitions, by the harness's handle. A released acquisition leaves
// the table (so a long run does not fill it) but its handle is remembered as retired, so that a
// second release or an extend of it is the library's "not ours", not an unknown handle; the
// retired handles are bounded too, the oldest forgotten first. An acquire checks full() before it
// asks the library: a grant the table could not keep would be a lock held and never released.
const RETIRED = Symbol("retired");

class Handles {
  constructor(max = MAX_HANDLES) {
    this.max = max;
    this.map = new Map();
    this.retired = new Map();  // insertion order: the oldest first
  }
  full() { return this.map.size >= this.max; }
  full_error() {
    return { status: "error", err: { name: "HandleTableFull", message: `more than ${this.max} live handles` } };
  }
  add(handle, value) {
    if (this.full() && !this.map.has(handle)) throw new Error(`more than ${this.max} live handles`);
    this.retired.delete(handle);
    this.map.set(handle, value);
  }
  // The lock object, RETIRED for a released handle, undefined for one never seen.
  get(handle) { return this.map.has(handle) ? this.map.get(handle) : this.retired.has(handle) ? RETIRED : undefined; }
  retire(handle) {
    if (!this.map.delete(handle)) return;
    this.retired.set(handle, true);
    if (this.retired.size > this.max) this.retired.delete(this.retired.keys().next().value);
  }
}

const RELEASED_ALREADY = { status: "not_owner", err: { name: "LockReleased", message: "this acquisition was released" } };

const UNKNOWN_HANDLE = { status: "bad_request", err: { name: "BadRequest", message: "unknown handle" } };

// A release by a library call that resolves whether or not it removed the lock: `unknown`, also for
// a handle released before (the library would run its release again, saying nothing), after
// `release_fn(lock)` with the handle's lock object; an error it throws is the release's error.
async function release_unreported(handles, handle, release_fn) {
  const lock = handles.get(handle);
  if (!lock) return UNKNOWN_HANDLE;
  if (lock === RETIRED) return { status: "unknown" };
  try {
    await release_fn(lock);
  } catch (e) {
    return { status: "error", err: error_of(e) };
  }
  handles.retire(handle);
  return { status: "unknown" };
}

// "NAME VERSION" as installed (some packages do not export their package.json to require()).
function version_of(pkg) {
  const file = path.join(__dirname, "..", "node_modules", pkg, "package.json");
  return `${pkg} ${JSON.parse(fs.readFileSync(file, "utf8")).version.replace(/^v/, "")}`;
}

// "host:port" endpoints as [{host, port}].
function endpoints_of(list) {
  return list.split(",").filter(Boolean).map((endpoint) => {
    const at = endpoint.lastIndexOf(":");
    return { host: endpoint.slice(0, at), port: Number(endpoint.slice(at + 1)) };
  });
}

module.exports = { commands_sent_so_far, connect, endpoints_of, grpc_host, hook_grpc_net, hook_pg_clients, use_connectors, error_of, Handles, RELEASED_ALREADY, release_unreported, RETIRED, UNKNOWN_HANDLE, version_of };
