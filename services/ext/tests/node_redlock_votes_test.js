// node-redlock's driver (libs/node-redlock.js) classifying a failed attempt, driven directly: a
// node that voted against because the key is locked makes it contention; votes against for other
// reasons make it an error; and votes still out when the driver stops waiting say nothing of the
// key, so they are an error too (before, they were counted as contention, which the harness
// retries as if another owner held the key).
// Usage: node node_redlock_votes_test.js  (exit 0 pass, 1 fail, 77 skipped without node_modules)
"use strict";
const assert = require("node:assert");
const fs = require("node:fs");
const path = require("node:path");

const node_dir = path.join(__dirname, "..", "node");
if (!fs.existsSync(path.join(node_dir, "node_modules", "redlock"))) {
  console.log("skipped: services/ext/node/node_modules missing (npm ci --prefix services/ext/node)");
  process.exit(77);
}
const { ExecutionError, ResourceLockedError } = require(path.join(node_dir, "node_modules", "redlock"));
const { classify_failure } = require(path.join(node_dir, "libs", "node-redlock.js"));

function stats_with(against) {
  const votesAgainst = new Map(against.map((error, i) => [`node${i}`, error]));
  return { membershipSize: 3, quorumSize: 2, votesFor: new Set(), votesAgainst };
}

async function main() {
  const locked = new ExecutionError("no quorum", [Promise.resolve(stats_with([
    new ResourceLockedError("locked"), new ResourceLockedError("locked"), new Error("reset")]))]);
  assert.strictEqual((await classify_failure(locked)).status, "contended");

  const broken = new ExecutionError("no quorum", [Promise.resolve(stats_with([
    new Error("ECONNRESET"), new Error("ECONNRESET")]))]);
  assert.strictEqual((await classify_failure(broken)).status, "error");

  // A quorum voted against (the library threw), the last vote never comes.
  const outstanding = new ExecutionError("no quorum", [new Promise(() => {})]);
  const got = await classify_failure(outstanding);
  assert.strictEqual(got.status, "error", JSON.stringify(got));
  assert.match(got.err.message, /votes still out/);

  assert.strictEqual((await classify_failure(new Error("other"))).status, "error");
  assert.strictEqual((await classify_failure(new ExecutionError("refused", []))).status, "not_owner");
}

main().then(() => console.log("node-redlock vote classification: ok"), (e) => {
  console.error(e);
  process.exit(1);
});
