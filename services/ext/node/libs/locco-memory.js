"use strict";
const locco = require("@kontsedal/locco");
const { make } = require("./locco.js");

// The store lives in this process: every client of a run shares this driver (--clients N).
async function create() {
  return make("locco-memory", new locco.InMemoryAdapter(), async () => {});
}
module.exports = { create };
