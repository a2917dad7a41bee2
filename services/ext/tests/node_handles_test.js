// The Node drivers' handle table (libs/common.js) and a driver over it (locco-memory), driven
// directly: a released acquisition leaves the table, so a run of many acquisitions never fills it
// (before, every handle stayed and the 100,001st grant was reported as an error while it stayed
// held); a second release of a handle is the library's "not ours", not an unknown handle; a full
// table refuses before the library is asked, so no grant is ever dropped.
// Usage: node node_handles_test.js  (exit 0 pass, 1 fail, 77 skipped without node_modules)
"use strict";
const assert = require("node:assert");
const fs = require("node:fs");
const path = require("node:path");

const node_dir = path.join(__dirname, "..", "node");
if (!fs.existsSync(path.join(node_dir, "node_modules", "@kontsedal", "locco"))) {
  console.log("skipped: services/ext/node/node_modules missing (npm ci --prefix services/ext/node)");
  process.exit(77);
}
const { Handles, RETIRED } = require(path.join(node_dir, "libs", "common.js"));
const memory = require(path.join(node_dir, "libs", "locco-memory.js"));

function table_rules() {
  const t = new Handles(2);
  t.add("a", 1);
  t.add("b", 2);
  assert.ok(t.full());
  assert.throws(() => t.add("c", 3));
  t.add("b", 4);  // replacing a live handle's object (an extend's new Lock) is no growth
  t.retire("a");
  assert.ok(!t.full());
  assert.strictEqual(t.get("a"), RETIRED);
  assert.strictEqual(t.get("b"), 4);
  assert.strictEqual(t.get("never"), undefined);
  t.retire("b");
  t.add("c", 5);
  t.retire("c");  // three retired, bound 2: the oldest ("a") is forgotten
  assert.strictEqual(t.get("a"), undefined);
  assert.strictEqual(t.get("b"), RETIRED);
  assert.strictEqual(t.get("c"), RETIRED);
}

async function many_acquisitions() {
  const driver = await memory.create();
  const rounds = 100_001;  // one more than the table holds
  for (let i = 0; i < rounds; ++i) {
    const handle = "h" + i;
    const got = await driver.acquire(handle, "k" + (i % 7), 60_000);
    assert.strictEqual(got.status, "ok", `acquire ${i}: ${JSON.stringify(got)}`);
    const released = await driver.release(handle);
    assert.strictEqual(released.status, "ok", `release ${i}: ${JSON.stringify(released)}`);
  }
  const again = await driver.release("h" + (rounds - 1));
  assert.strictEqual(again.status, "not_owner", JSON.stringify(again));
  const extend = await driver.extend("h" + (rounds - 1), 1000);
  assert.strictEqual(extend.status, "not_owner", JSON.stringify(extend));
  assert.strictEqual((await driver.is_locked("h" + (rounds - 1))).status, "not_owner");
  assert.strictEqual((await driver.release("never-acquired")).status, "bad_request");
}

async function full_table_refuses_before_acquiring() {
  const driver = await memory.create();
  const held = [];
  for (let i = 0; i < 100_000; ++i) {
    const got = await driver.acquire("h" + i, "key" + i, 60_000);
    assert.strictEqual(got.status, "ok");
    held.push("h" + i);
  }
  const refused = await driver.acquire("one-more", "free-key", 60_000);
  assert.strictEqual(refused.status, "error");
  assert.match(refused.err.message, /live handles/);
  // The library was never asked: the key is free for the next acquisition once there is room.
  assert.strictEqual((await driver.release(held[0])).status, "ok");
  assert.strictEqual((await driver.acquire("after", "free-key", 60_000)).status, "ok");
}

(async () => {
  table_rules();
  await many_acquisitions();
  await full_table_refuses_before_acquiring();
  console.log("node handles: ok");
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
