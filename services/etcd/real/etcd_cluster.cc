#include "services/etcd/real/etcd_cluster.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "base/check.h"
#include "real/child_process.h"
#include "real/loopback.h"
#include "real/server_errors.h"
#include "real/server_files.h"
#include "services/etcd/adapter/http_connection.h"
#include "services/etcd/client/etcd_json.h"

namespace lockstep::real {

namespace {

constexpr int kPortAttempts = 5;
constexpr int64_t kProbeTimeoutMs = 300;
constexpr auto kPollInterval = std::chrono::milliseconds(20);

std::string url(int port) { return fmt::format("http://127.0.0.1:{}", port); }

// The member's status over the gateway: its own ID and the leader's, 0 when it does not answer.
struct Status {
  uint64_t member_id = 0;
  uint64_t leader_id = 0;
};

Status status_of(int client_port) {
  HttpEtcdConnection connection({.ports = {client_port},
                                 .connect_timeout_ms = kProbeTimeoutMs,
                                 .request_timeout_ms = kProbeTimeoutMs});
  const EtcdResult reply = connection.call("/v3/maintenance/status", EtcdJson::object());
  if (!reply.ok() || reply.http_status != 200 || !reply.body.contains("header")) return {};
  return {.member_id = etcd::uint_field(reply.body["header"], "member_id").value_or(0),
          .leader_id = etcd::uint_field(reply.body, "leader").value_or(0)};
}

}  // namespace

struct EtcdCluster::Member {
  std::string name;
  std::string dir;
  int client_port = 0;
  int peer_port = 0;
  pid_t pid = -1;
  uint64_t id = 0;  // etcd's member ID, once known
  std::unique_ptr<ChildProcess> process;
};

std::string EtcdCluster::binary_path() {
  auto found = find_on_path("etcd");
  if (!found) throw ServerUnavailable("etcd not found on PATH: apt-get install etcd-server");
  return *found;
}

EtcdCluster::EtcdCluster(EtcdClusterOptions options) : options_(options), binary_(binary_path()) {
  LOCKSTEP_CHECK(options_.members >= 1 && options_.members <= 7, "1 to 7 members");
  LOCKSTEP_CHECK(options_.start_timeout_ms > 0 && options_.stop_timeout_ms > 0, "bounded waits");
  try {
    for (int i = 0; i < options_.members; ++i) {
      auto member = std::make_unique<Member>();
      member->name = fmt::format("etcd-{}", i);
      member->dir = make_server_dir("etcd");
      members_.push_back(std::move(member));
    }
    start_all();
  } catch (...) {
    stop();
    throw;
  }
}

EtcdCluster::~EtcdCluster() { stop(); }

int EtcdCluster::client_port(int member) const { return members_.at(member)->client_port; }

std::vector<int> EtcdCluster::client_ports() const {
  std::vector<int> ports;
  for (const auto& m : members_) ports.push_back(m->client_port);
  return ports;
}

pid_t EtcdCluster::pid(int member) const { return members_.at(member)->pid; }

bool EtcdCluster::running(int member) const {
  const Member& m = *members_.at(member);
  return m.process != nullptr && !m.process->reaped();
}

std::string EtcdCluster::initial_cluster() const {
  std::string out;
  for (const auto& m : members_)
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", m->name, url(m->peer_port));
  return out;
}

std::string EtcdCluster::log_tail(int member, size_t bytes_max) const {
  return tail_of_file(members_.at(member)->dir + "/output.log", bytes_max);
}

void EtcdCluster::start_all() {
  std::vector<int> all;
  for (int i = 0; i < members(); ++i) all.push_back(i);
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    for (auto& m : members_) {
      m->client_port = free_loopback_port();
      m->peer_port = free_loopback_port();
    }
    for (auto& m : members_) start_member(*m);
    if (wait_ready(all, options_.start_timeout_ms)) return;
    bool port_lost = false;
    for (int i = 0; i < members(); ++i)
      port_lost = port_lost || log_tail(i).find("address already in use") != std::string::npos;
    if (!port_lost) {
      std::string logs;
      for (int i = 0; i < members(); ++i) logs += members_[i]->name + ":\n" + log_tail(i) + "\n";
      throw ServerStartError(fmt::format("etcd did not become ready within {} ms:\n{}",
                                         options_.start_timeout_ms, logs));
    }
    for (auto& m : members_) {  // a port was taken meanwhile: start over on new ones
      m->process->kill_and_reap();
      remove_server_dir(m->dir);
      m->dir = make_server_dir("etcd");
    }
  }
  throw ServerStartError(
      fmt::format("etcd could not bind free loopback ports in {} attempts", kPortAttempts));
}

void EtcdCluster::start_member(Member& m) {
  const std::vector<std::string> args = {
      "--name",
      m.name,
      "--data-dir",
      m.dir + "/data",
      "--listen-client-urls",
      url(m.client_port),
      "--advertise-client-urls",
      url(m.client_port),
      "--listen-peer-urls",
      url(m.peer_port),
      "--initial-advertise-peer-urls",
      url(m.peer_port),
      "--initial-cluster",
      initial_cluster(),
      "--initial-cluster-state",
      "new",
      "--initial-cluster-token",
      fmt::format("lockstep-{}", ::getpid()),
      "--heartbeat-interval",
      std::to_string(options_.heartbeat_ms),
      "--election-timeout",
      std::to_string(options_.election_timeout_ms),
      "--enable-v2=false",
  };
  m.process = std::make_unique<ChildProcess>(
      SpawnOptions{.path = binary_, .args = args, .output_path = m.dir + "/output.log"});
  m.pid = m.process->pid();
}

// Every member in `which` answers, and every answer names the same live leader.
bool EtcdCluster::wait_ready(const std::vector<int>& which, int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    bool ready = true;
    uint64_t leader = 0;
    for (const int i : which) {
      Member& m = *members_[i];
      if (m.process->exited_now()) return false;
      const Status s = status_of(m.client_port);
      if (s.member_id != 0) m.id = s.member_id;
      if (s.leader_id == 0 || (leader != 0 && s.leader_id != leader)) ready = false;
      leader = s.leader_id;
    }
    if (ready) return true;
    std::this_thread::sleep_for(kPollInterval);  // polling a bounded deadline
  }
  return false;
}

int EtcdCluster::leader() const {
  for (const auto& m : members_) {
    if (m->process == nullptr || m->process->reaped() || m->process->stopped()) continue;
    const Status s = status_of(m->client_port);
    if (s.leader_id == 0) continue;
    for (int i = 0; i < members(); ++i) {
      if (members_[i]->id == s.leader_id) return i;
    }
  }
  return -1;
}

void EtcdCluster::pause(int member) {
  LOCKSTEP_CHECK(running(member), "pause a running member");
  members_.at(member)->process->stop_and_wait();
}

void EtcdCluster::resume(int member) {
  LOCKSTEP_CHECK(running(member), "resume a running member");
  members_.at(member)->process->continue_and_wait();
}

void EtcdCluster::crash(int member) {
  Member& m = *members_.at(member);
  if (m.process != nullptr) m.process->kill_and_reap();
}

void EtcdCluster::crash_leader() {
  const int member = leader();
  if (member < 0) throw std::runtime_error("failover: the etcd cluster has no leader to crash");
  crash(member);
}

void EtcdCluster::restart(int member) {
  Member& m = *members_.at(member);
  LOCKSTEP_CHECK(!m.dir.empty(), "restart a member that was not stopped");
  crash(member);
  start_member(m);
  // Ready when it answers with a leader: alone, a restarted member of 3 may wait for the others.
  if (!wait_ready({member}, options_.start_timeout_ms)) {
    throw ServerStartError(fmt::format("etcd {} did not come back within {} ms:\n{}", m.name,
                                       options_.start_timeout_ms, log_tail(member)));
  }
}

void EtcdCluster::stop() {
  for (auto& m : members_) {
    if (m->process != nullptr && !m->process->reaped())
      m->process->terminate(options_.stop_timeout_ms);
    m->process.reset();
    remove_server_dir(m->dir);
  }
}

}  // namespace lockstep::real
