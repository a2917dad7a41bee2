#pragma once
// The rules of the ext protocol a driver keeps (services/ext/PROTOCOL.md, "Rules a driver keeps"),
// by name. A driver that breaks one is reported as breaking that rule, by name and in words, with
// what it did and the tail of its stderr: the run ends as an error and nothing in it is judged
// (harness/scenario_world.h, ClientProtocolBroken), since a broken driver's answers say nothing
// about its lock.
#include <string>
#include <string_view>

namespace lockstep::ext {

struct ProtocolRule {
  const char* name;  // as PROTOCOL.md lists it
  const char* says;  // the rule in a few words
};

inline constexpr ProtocolRule kRuleLines{
    "lines", "every line is one JSON object of at most 64 KiB, ended by a newline"};
inline constexpr ProtocolRule kRuleFields{
    "fields",
    "every line is a ready line, a response or an event (with --sim also connect, send, close or "
    "idle) with each field it needs, of its type"};
inline constexpr ProtocolRule kRuleReady{
    "ready-first",
    "the first line is `ready`, written once, with protocol 1 (2 with --sim) and, in protocol 1, "
    "now_ns read from CLOCK_MONOTONIC"};
inline constexpr ProtocolRule kRuleOneAnswer{
    "one-answer",
    "each request gets exactly one response, carrying its id; nothing else is answered"};
inline constexpr ProtocolRule kRuleInTime{
    "in-time",
    "a response comes within the request deadline, and with --sim every exchange ends with its "
    "idle line within the real-time deadline"};
inline constexpr ProtocolRule kRuleStayUp{
    "stay-up", "the driver keeps its stdin and stdout open and runs until it answers shutdown"};
inline constexpr ProtocolRule kRuleExchange{
    "exchange",
    "with --sim a driver writes only inside an exchange, nothing after its idle line, and answers "
    "reset with a bare idle line"};
inline constexpr ProtocolRule kRuleConnections{
    "connections",
    "with --sim a driver sends and closes only connections it opened, to a server it was given"};
inline constexpr ProtocolRule kRuleRequests{
    "requests",
    "a driver takes every request the protocol defines (an operation it does not offer is "
    "`unsupported`, never `bad_request`)"};
inline constexpr ProtocolRule kRuleTokens{
    "tokens",
    "a driver's ready line names the tokens the run declares (monotonic, or none or random) and a "
    "driver that promises monotonic tokens sends decimal integers"};

// "broke rule `in-time` of the ext protocol (a response comes ...; services/ext/PROTOCOL.md, "Rules
// a driver keeps"): WHAT", to follow the driver's name
std::string broke(const ProtocolRule& rule, std::string_view what);

// The rule a line decode_line() refused breaks: `lines` when it is not a JSON object (or too long),
// else `fields`.
const ProtocolRule& rule_of_decode_error(std::string_view message);

}  // namespace lockstep::ext
