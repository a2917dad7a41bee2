"use strict";
const locco = require("@kontsedal/locco");
const { connect } = require("./common.js");
const { make } = require("./locco.js");

async function create({ redis, command_timeout_ms }) {
  const [client] = await connect(redis.slice(0, 1), command_timeout_ms);
  return make("locco-redis", new locco.IoRedisAdapter({ client }), async () => { await client.quit(); });
}
module.exports = { create };
