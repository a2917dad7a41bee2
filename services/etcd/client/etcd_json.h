#pragma once
// The spelling of etcd's JSON gateway, shared by the adapters, the simulated members and the
// tests: base64 keys and values, 64-bit integers as JSON strings, key ranges for a prefix.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "services/etcd/client/etcd_connection.h"

namespace lockstep::etcd {

// The error etcd answers for a lease it does not hold (expired, revoked or never granted).
inline constexpr const char* kLeaseNotFound = "etcdserver: requested lease not found";

// Standard base64 with padding (RFC 4648 section 4), as Go's encoding/json writes []byte.
std::string base64_encode(std::string_view bytes);
// nullopt for text that is not padded standard base64.
std::optional<std::string> base64_decode(std::string_view text);

// A 64-bit integer field as the gateway writes it (a JSON string) or a client may send it (a
// number or a string); `fallback` when absent; nullopt when present but not an integer.
std::optional<int64_t> int_field(const EtcdJson& object, std::string_view name,
                                 int64_t fallback = 0);
// The same for an unsigned 64-bit field (member and cluster IDs use all 64 bits).
std::optional<uint64_t> uint_field(const EtcdJson& object, std::string_view name,
                                   uint64_t fallback = 0);
// A bytes field (base64), decoded; "" when absent; nullopt when not base64.
std::optional<std::string> bytes_field(const EtcdJson& object, std::string_view name);
// How the gateway writes an int64: as a string.
inline EtcdJson int_json(int64_t value) { return EtcdJson(std::to_string(value)); }

// The end of the range of every key that starts with prefix (etcd's clientv3.GetPrefixRangeEnd):
// the prefix with its last byte below 0xff incremented and what follows dropped; "\0" (every key
// from prefix on) when every byte is 0xff.
std::string prefix_range_end(std::string_view prefix);

// The lock key of one owner under a name, as etcd's concurrency.Mutex and Lock RPC spell it:
// name + "/" + the lease ID in lowercase hex without leading zeros.
std::string lock_key(std::string_view name, int64_t lease_id);

}  // namespace lockstep::etcd
