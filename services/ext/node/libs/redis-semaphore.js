"use strict";
module.exports = { create: require("./semaphore.js").create_mutex };
