"use strict";
module.exports = { create: require("./semaphore.js").create_redlock_mutex };
