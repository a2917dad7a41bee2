// The ext process protocol (services/ext/PROTOCOL.md): the codec on its own, then DriverProcess against
// small fake drivers (node -e) that die, hang, babble or lie about their clock. Each must come back
// as exactly that failure, with the driver's stderr, and never as a lock result.
#include <catch2/catch.hpp>

#include <signal.h>
#include <time.h>

#include <chrono>
#include <future>
#include <thread>

#include "real/server_errors.h"
#include "services/ext/driver/driver_process.h"
#include "services/ext/driver/node_drivers.h"
#include "tests/real_support.h"

namespace lockstep::ext {
namespace {

template <class T>
T as(const Line& line) {
  if (const auto* error = std::get_if<DecodeError>(&line)) FAIL("decode error: " << error->message);
  REQUIRE(std::holds_alternative<T>(line));
  return std::get<T>(line);
}

std::string decode_error(std::string_view text) {
  const Line line = decode_line(text);
  REQUIRE(std::holds_alternative<DecodeError>(line));
  return std::get<DecodeError>(line).message;
}

}  // namespace

TEST_CASE("ext codec: the three kinds of driver line decode with every field", "[ext][protocol]") {
  const Ready ready = as<Ready>(decode_line(
      R"({"ready":true,"name":"locco-redis","version":"@kontsedal/locco 0.1.0","protocol":1,)"
      R"("capabilities":{"extend":true,"is_locked":false,"token":"random"},"now_ns":"123"})"));
  CHECK(ready.name == "locco-redis");
  CHECK(ready.protocol == 1);
  CHECK(ready.capabilities.extend);
  CHECK_FALSE(ready.capabilities.is_locked);
  CHECK(ready.capabilities.token == TokenKind::random);
  CHECK(ready.now_ns == 123);

  const Response r = as<Response>(decode_line(
      R"({"id":7,"ok":false,"status":"contended","err":{"name":"RetryError","message":"no"},"t0_ns":"10","t1_ns":"25"})"));
  CHECK(r.id == 7);
  CHECK(r.status == Status::contended);
  REQUIRE(r.err.has_value());
  CHECK(r.err->name == "RetryError");
  CHECK(r.t1_ns - r.t0_ns == 15);
  CHECK(
      as<Response>(
          decode_line(R"({"id":1,"ok":true,"status":"ok","token":"abc","t0_ns":"1","t1_ns":"1"})"))
          .token == "abc");

  const Event e =
      as<Event>(decode_line(R"({"event":"lock_lost","handle":"h","key":"k","t_ns":"5"})"));
  CHECK(e.key == "k");
}

TEST_CASE("ext codec: malformed lines are errors that say what is wrong", "[ext][protocol]") {
  CHECK(decode_error("not json") == "not JSON");
  CHECK(decode_error("[1,2]") == "not a JSON object");
  CHECK(decode_error(R"({"hello":1})").find("neither") != std::string::npos);
  CHECK(decode_error(R"({"id":1,"ok":true,"status":"ok","t0_ns":"1"})").find("t1_ns") !=
        std::string::npos);
  CHECK(decode_error(R"({"id":1,"ok":true,"status":"ok","t0_ns":1,"t1_ns":"2"})")
            .find("not a string") != std::string::npos);
  CHECK(decode_error(R"({"id":1,"ok":true,"status":"ok","t0_ns":"-4","t1_ns":"2"})")
            .find("decimal") != std::string::npos);
  CHECK(decode_error(R"({"id":1,"ok":true,"status":"maybe","t0_ns":"1","t1_ns":"2"})")
            .find("unknown status") != std::string::npos);
  CHECK(decode_error(R"({"id":1,"ok":true,"status":"contended","t0_ns":"1","t1_ns":"2"})")
            .find("\"ok\"") != std::string::npos);
  CHECK(
      decode_error(R"({"id":1,"ok":true,"status":"ok","t0_ns":"5","t1_ns":"2"})").find("before") !=
      std::string::npos);
  CHECK(decode_error(R"({"id":"1","ok":true,"status":"ok","t0_ns":"1","t1_ns":"2"})")
            .find("integer") != std::string::npos);
  CHECK(decode_error(R"({"id":1,"ok":false,"status":"error","err":"x","t0_ns":"1","t1_ns":"2"})")
            .find("err") != std::string::npos);
  CHECK(decode_error(
            R"({"ready":true,"name":"x","version":"1","protocol":1,"capabilities":{"extend":true,)"
            R"("is_locked":true,"token":"sometimes"},"now_ns":"1"})")
            .find("sometimes") != std::string::npos);
  CHECK(decode_error(R"({"event":"lock_found","t_ns":"1"})").find("unknown event") !=
        std::string::npos);
  CHECK(decode_error(std::string(kLineMaxBytes + 1, ' ')).find("bytes") != std::string::npos);
}

TEST_CASE("ext codec: requests carry exactly their op's fields", "[ext][protocol]") {
  CHECK(encode({.id = 3, .op = Op::acquire, .handle = "h", .key = "k", .ttl_ms = 500}) ==
        R"({"handle":"h","id":3,"key":"k","op":"acquire","ttl_ms":500})");
  CHECK(encode({.id = 4, .op = Op::release, .client = 2, .handle = "h"}) ==
        R"({"client":2,"handle":"h","id":4,"op":"release"})");
  CHECK(encode({.id = 5, .op = Op::pause, .duration_ms = 50}) ==
        R"({"duration_ms":50,"id":5,"op":"pause"})");
  CHECK(encode({.id = 6, .op = Op::shutdown}) == R"({"id":6,"op":"shutdown"})");
  CHECK(encode({.id = 7, .op = Op::acquire, .handle = "h", .key = "bad\xff", .ttl_ms = 1})
            .find('\n') == std::string::npos);
}

TEST_CASE("ext codec: the benchmark ops ping and bench, and a bench response's counts",
          "[ext][protocol]") {
  CHECK(encode({.id = 8, .op = Op::ping}) == R"({"id":8,"op":"ping"})");
  CHECK(encode({.id = 9,
                .op = Op::bench,
                .key = "k",
                .ttl_ms = 1000,
                .duration_ms = 300,
                .hold_ms = 1,
                .loops = 4}) ==
        R"({"duration_ms":300,"hold_ms":1,"id":9,"key":"k","loops":4,"op":"bench","ttl_ms":1000})");
  // A fixed window in CLOCK_MONOTONIC replaces the duration; the instants travel as strings.
  CHECK(
      encode({.id = 10,
              .op = Op::bench,
              .key = "k",
              .ttl_ms = 5,
              .start_ns = 100,
              .stop_ns = 200,
              .retry_max_ms = 8}) ==
      R"({"hold_ms":0,"id":10,"key":"k","loops":1,"op":"bench","retry_max_ms":8,"start_ns":"100","stop_ns":"200","ttl_ms":5})");

  const Response r = as<Response>(decode_line(
      R"({"id":9,"ok":true,"status":"ok","t0_ns":"1","t1_ns":"2","bench":{"successes":5,"attempts":7,"releases":5,)"
      R"("release_not_owner":0,"commands":14,"loops":4,"start_ns":"100","end_ns":"300"}})"));
  REQUIRE(r.bench.has_value());
  CHECK(r.bench->successes == 5);
  CHECK(r.bench->attempts == 7);
  CHECK(r.bench->commands == 14);
  CHECK(r.bench->end_ns - r.bench->start_ns == 200);
  // commands is optional (-1: not reported); counts that run backwards are malformed.
  CHECK(
      as<Response>(
          decode_line(
              R"({"id":1,"ok":true,"status":"ok","t0_ns":"1","t1_ns":"2","bench":{"successes":0,)"
              R"("attempts":0,"releases":0,"release_not_owner":0,"loops":1,"start_ns":"5","end_ns":"5"}})"))
          .bench->commands == -1);
  CHECK_THAT(
      decode_error(
          R"({"id":1,"ok":true,"status":"ok","t0_ns":"1","t1_ns":"2","bench":{"successes":0,)"
          R"("attempts":0,"releases":0,"release_not_owner":0,"loops":1,"start_ns":"9","end_ns":"5"}})"),
      Catch::Contains("end_ns is before start_ns"));
  CHECK_THAT(decode_error(R"({"id":1,"ok":true,"status":"ok","t0_ns":"1","t1_ns":"2","bench":[]})"),
             Catch::Contains("bench"));
}

namespace {

std::string node_or_skip() {
  try {
    return require_node_drivers();
  } catch (const real::ServerUnavailable& e) {
    testing::skip_or_fail(e.what());
  }
  return {};
}

// A fake driver: the common prelude, then `body` (JavaScript) handling each request line `req`.
DriverOptions fake(const std::string& body, std::string ready_extra = "{}",
                   int64_t deadline_ms = 2000) {
  const std::string script =
      "const now = () => process.hrtime.bigint().toString();\n"
      "const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');\n"
      "out(Object.assign({ready: true, name: 'fake', version: 'fake 1', protocol: 1,\n"
      "  capabilities: {extend: true, is_locked: true, token: 'random'}, now_ns: now()}, " +
      ready_extra +
      "));\n"
      "const ok = (req, extra) => out(Object.assign({id: req.id, ok: true, status: 'ok', t0_ns: "
      "now(), t1_ns: now()},"
      " extra || {}));\n"
      "require('readline').createInterface({input: process.stdin}).on('line', (line) => {\n"
      "  const req = JSON.parse(line);\n"
      "  if (req.op === 'shutdown') { ok(req); process.exit(0); }\n" +
      body + "\n});\n";
  return {.program = node_or_skip(),
          .args = {"-e", script},
          .name = "fake",
          .start_deadline_ms = 5000,
          .request_deadline_ms = deadline_ms};
}

}  // namespace

TEST_CASE("ext driver: a well-behaved driver answers each request by id", "[ext][driver]") {
  std::vector<Event> events;
  DriverOptions options = fake(
      "out({event: 'lock_lost', handle: req.handle, key: 'k', t_ns: now()}); ok(req, {token: "
      "'tok-' + req.id});");
  std::mutex events_mutex;
  options.on_event = [&](const Event& e) {
    std::lock_guard<std::mutex> lock(events_mutex);
    events.push_back(e);
  };
  DriverProcess driver(options);
  CHECK(driver.ready().name == "fake");
  const CallResult first =
      driver.call({.op = Op::acquire, .handle = "h1", .key = "k", .ttl_ms = 100});
  REQUIRE(first.ok());
  CHECK(first.response.status == Status::ok);
  CHECK(first.response.token == "tok-" + std::to_string(first.response.id));
  CHECK(first.sent_ns <= first.response.t0_ns);  // the driver reads our clock
  CHECK(first.response.t1_ns <= first.received_ns);
  CHECK(driver.call({.op = Op::release, .handle = "h1"}).ok());
  std::lock_guard<std::mutex> lock(events_mutex);
  CHECK(events.size() == 2);
}

TEST_CASE("ext driver: one that dies is reported as died, with its stderr, for good",
          "[ext][driver]") {
  DriverProcess driver(
      fake("process.stderr.write('boom: the library crashed\\n'); process.exit(3);"));
  const CallResult r = driver.call({.op = Op::acquire, .handle = "h", .key = "k", .ttl_ms = 100});
  CHECK(r.failure == DriverFailure::died);
  CHECK_THAT(r.message, Catch::Contains("exited with code 3"));
  CHECK_THAT(r.message, Catch::Contains("boom: the library crashed"));
  CHECK(driver.call({.op = Op::release, .handle = "h"}).failure == DriverFailure::died);
}

TEST_CASE("ext driver: one that hangs past the deadline is reported as hung", "[ext][driver]") {
  // Its stderr line is written before its ready line (so it is there, however busy the machine,
  // when the deadline fires), and it never answers.
  DriverProcess driver(
      fake("", "(process.stderr.write('waiting forever\\n'), {})", /*deadline_ms=*/300));
  // The message names the deadline that fired; how long the wait took on this machine is not
  // asserted (a busy machine stretches it).
  const CallResult r = driver.call({.op = Op::acquire, .handle = "h", .key = "k", .ttl_ms = 100});
  CHECK(r.failure == DriverFailure::hung);
  CHECK_THAT(r.message, Catch::Contains("no answer to acquire within 300 ms"));
  CHECK_THAT(r.message, Catch::Contains("waiting forever"));
  CHECK(driver.call({.op = Op::release, .handle = "h"}).failure == DriverFailure::hung);
}

TEST_CASE("ext driver: malformed lines and answers to no request are reported as malformed",
          "[ext][driver]") {
  SECTION("not JSON") {
    DriverProcess driver(fake("process.stdout.write('acquired, trust me\\n');"));
    const CallResult r = driver.call({.op = Op::acquire, .handle = "h", .key = "k", .ttl_ms = 100});
    CHECK(r.failure == DriverFailure::malformed);
    CHECK_THAT(r.message, Catch::Contains("not JSON"));
  }
  SECTION("a response to an id nobody sent") {
    DriverProcess driver(fake("ok({id: req.id + 1000});"));
    const CallResult r = driver.call({.op = Op::acquire, .handle = "h", .key = "k", .ttl_ms = 100});
    CHECK(r.failure == DriverFailure::malformed);
    CHECK_THAT(r.message, Catch::Contains("not waiting"));
  }
  SECTION("a second ready line") {
    DriverProcess driver(
        fake("out({ready: true, name: 'x', version: 'x', protocol: 1, capabilities: {extend: "
             "true, is_locked: true, token: 'none'}, now_ns: now()});"));
    CHECK(driver.call({.op = Op::acquire, .handle = "h", .key = "k", .ttl_ms = 100}).failure ==
          DriverFailure::malformed);
  }
}

TEST_CASE("ext driver: a driver that cannot start says why", "[ext][driver]") {
  CHECK_THROWS_WITH(DriverProcess(fake("", "{protocol: 2}")), Catch::Contains("speaks protocol 2"));
  CHECK_THROWS_WITH(DriverProcess(fake("", "{now_ns: '1'}")), Catch::Contains("CLOCK_MONOTONIC"));
  // Says something on stderr at once and never says ready. A shell, not node: what it wrote must
  // be there when the deadline fires, and node may take longer than that to start on a busy
  // machine (it did, under ASan with both cores loaded: the stderr was still empty).
  DriverOptions silent = fake("");
  silent.program = "/bin/sh";
  silent.args = {"-c", "echo starting slowly >&2; exec sleep 60"};
  silent.start_deadline_ms = 2000;
  CHECK_THROWS_WITH(DriverProcess(silent), Catch::Contains("no ready line within 2000 ms") &&
                                               Catch::Contains("starting slowly"));
  DriverOptions quitter = fake("");
  quitter.args = {"-e", "console.error('missing module'); process.exit(2);"};
  CHECK_THROWS_WITH(DriverProcess(quitter),
                    Catch::Contains("exited with code 2") && Catch::Contains("missing module"));
}

TEST_CASE("ext driver: stop is a real stop-the-world, kill a real death", "[ext][driver]") {
  DriverProcess driver(fake("ok(req);"));
  driver.stop();  // returns once waitpid reports the driver stopped
  auto answered = std::async(
      std::launch::async, [&driver] { return driver.call({.op = Op::is_locked, .handle = "h"}); });
  // A stopped process cannot answer, however long we look; a short look cannot be flaky.
  CHECK(answered.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  timespec resumed{};
  ::clock_gettime(CLOCK_MONOTONIC, &resumed);
  driver.resume();
  const CallResult r = answered.get();
  REQUIRE(r.ok());
  // Order, not a duration: the answer was received only after the resume.
  CHECK(r.received_ns >= int64_t{resumed.tv_sec} * 1'000'000'000 + resumed.tv_nsec);
  driver.kill();
  CHECK(::kill(driver.pid(), 0) == -1);
  CHECK(driver.call({.op = Op::is_locked, .handle = "h"}).failure == DriverFailure::died);
}

TEST_CASE("ext driver: the Node drivers start, read CLOCK_MONOTONIC and block on pause",
          "[ext][driver]") {
  const std::string node = node_or_skip();
  DriverProcess driver(
      {.program = node, .args = node_driver_args("locco-memory", {}), .name = "locco-memory"});
  CHECK(driver.ready().version == "@kontsedal/locco 0.1.0");
  CHECK(driver.ready().capabilities.token == TokenKind::random);
  const CallResult paused = driver.call({.op = Op::pause, .duration_ms = 100});
  REQUIRE(paused.ok());
  CHECK(paused.response.t1_ns - paused.response.t0_ns >= 100'000'000);
  const CallResult a =
      driver.call({.op = Op::acquire, .client = 0, .handle = "a", .key = "k", .ttl_ms = 1000});
  const CallResult b =
      driver.call({.op = Op::acquire, .client = 1, .handle = "b", .key = "k", .ttl_ms = 1000});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.response.status == Status::ok);
  CHECK(b.response.status == Status::contended);
  CHECK(driver.call({.op = Op::release, .client = 1, .handle = "a"}).response.status ==
        Status::bad_request);
  CHECK(driver.call({.op = Op::release, .client = 0, .handle = "a"}).response.status == Status::ok);
}

}  // namespace lockstep::ext
