#pragma once
// SHA-1 of a byte string as 40 lowercase hex digits: how Redis names a script for EVALSHA.
// Not for security; only to agree with the server on script identities.
#include <string>
#include <string_view>

namespace lockstep {

std::string sha1_hex(std::string_view data);

}  // namespace lockstep
