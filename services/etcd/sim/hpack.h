#pragma once
// HPACK (RFC 7541), the header compression of HTTP/2, for the simulated etcd server's gRPC front:
// a decoder for the header blocks a client (Node's grpc-js over nghttp2) sends, which keeps that
// direction's dynamic table and reads Huffman-coded strings, and a stateless encoder for the
// server's own response headers and trailers.
//
// Decoder: every representation of section 6 (indexed, literal with incremental indexing, without
// indexing, never indexed, dynamic table size update at the start of a block), the static table of
// Appendix A, eviction per section 4.4, and Huffman strings per section 5.2 and Appendix B. A block
// that breaks any rule is a COMPRESSION_ERROR: decode() answers nullopt, error() says why, and the
// decoder answers nullopt from then on (its table may be half-updated, as the connection is dead).
// Every input is bounded: a block's bytes (kHpackBlockBytesMax), its headers (kHpackHeadersMax), an
// integer's continuation bytes, so decoding a block takes time linear in its bytes.
//
// Encoder: no dynamic table and no Huffman coding, so its output depends on the header list alone.
//
// Invariants: the decoder's table_size() never exceeds the size the last update set, which never
// exceeds the size this end advertised; blocks are decoded in the order they were sent.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lockstep::sim::h2 {

inline constexpr size_t kHpackBlockBytesMax = 64 * 1024;
inline constexpr size_t kHpackHeadersMax = 1000;
inline constexpr size_t kHpackTableSizeDefault = 4096;  // SETTINGS_HEADER_TABLE_SIZE's default

using Header = std::pair<std::string, std::string>;  // name, value (names lowercase as sent)

class HpackBlockReader;  // hpack.cc: a cursor over one block

// Decodes header blocks of one direction of one HTTP/2 connection: it holds that direction's
// dynamic table, so blocks must be given in the order they were sent.
class HpackDecoder {
 public:
  // max_table_size: SETTINGS_HEADER_TABLE_SIZE this end advertised (4096 by default). The
  // dynamic table starts at that size; the peer may shrink it (and grow it back up to it) with
  // size updates.
  explicit HpackDecoder(size_t max_table_size = kHpackTableSizeDefault);
  // One complete header block (a HEADERS frame's fragment plus its CONTINUATIONs, joined, padding
  // and priority already stripped). nullopt on a malformed block (an HTTP/2 COMPRESSION_ERROR):
  // error() says why, in one line. After an error the decoder must not be used again (it answers
  // nullopt with the same error).
  std::optional<std::vector<Header>> decode(std::string_view block);
  const std::string& error() const { return error_; }
  // The current dynamic table size per RFC 7541 4.1: the sum of its entries' name + value + 32.
  size_t table_size() const { return table_size_; }

 private:
  std::optional<std::vector<Header>> fail(std::string why);
  bool update_size(HpackBlockReader& in);                  // 6.3
  std::optional<Header> read_field(HpackBlockReader& in);  // 6.1, 6.2
  // The entry at an HPACK index (1-61 static, then the dynamic table newest first), if any.
  std::optional<Header> entry_at(uint64_t index) const;
  std::string index_error(uint64_t index) const;
  void add_entry(Header entry);
  void evict_to(size_t size_max);

  size_t table_size_limit_;  // what this end advertised: the ceiling of size updates
  size_t table_size_max_;    // what the last size update set (the limit until one comes)
  size_t table_size_ = 0;
  std::deque<Header> table_;  // the dynamic table, newest entry first
  std::string error_;
};

// Encodes a header list with no dynamic-table state (so no decoder state to keep in step with):
// each header as "indexed" where the static table has the exact name and value, else "literal
// without indexing" with the name indexed when the static table has the name, else a literal
// name; strings never Huffman-coded (H bit 0). Deterministic.
std::string hpack_encode(const std::vector<Header>& headers);

}  // namespace lockstep::sim::h2
