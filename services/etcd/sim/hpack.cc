#include "services/etcd/sim/hpack.h"

#include <fmt/format.h>

#include <array>

#include "base/check.h"

namespace lockstep::sim::h2 {

namespace {

// Appendix A: index 1 is kStaticTable[0].
constexpr std::array<std::pair<std::string_view, std::string_view>, 61> kStaticTable = {{
    {":authority", ""},
    {":method", "GET"},
    {":method", "POST"},
    {":path", "/"},
    {":path", "/index.html"},
    {":scheme", "http"},
    {":scheme", "https"},
    {":status", "200"},
    {":status", "204"},
    {":status", "206"},
    {":status", "304"},
    {":status", "400"},
    {":status", "404"},
    {":status", "500"},
    {"accept-charset", ""},
    {"accept-encoding", "gzip, deflate"},
    {"accept-language", ""},
    {"accept-ranges", ""},
    {"accept", ""},
    {"access-control-allow-origin", ""},
    {"age", ""},
    {"allow", ""},
    {"authorization", ""},
    {"cache-control", ""},
    {"content-disposition", ""},
    {"content-encoding", ""},
    {"content-language", ""},
    {"content-length", ""},
    {"content-location", ""},
    {"content-range", ""},
    {"content-type", ""},
    {"cookie", ""},
    {"date", ""},
    {"etag", ""},
    {"expect", ""},
    {"expires", ""},
    {"from", ""},
    {"host", ""},
    {"if-match", ""},
    {"if-modified-since", ""},
    {"if-none-match", ""},
    {"if-range", ""},
    {"if-unmodified-since", ""},
    {"last-modified", ""},
    {"link", ""},
    {"location", ""},
    {"max-forwards", ""},
    {"proxy-authenticate", ""},
    {"proxy-authorization", ""},
    {"range", ""},
    {"referer", ""},
    {"refresh", ""},
    {"retry-after", ""},
    {"server", ""},
    {"set-cookie", ""},
    {"strict-transport-security", ""},
    {"transfer-encoding", ""},
    {"user-agent", ""},
    {"vary", ""},
    {"via", ""},
    {"www-authenticate", ""},
}};

// Appendix B: symbol i's code, right-aligned in `code`, `bits` long. Symbol 256 is EOS. The
// lengths are those of Go's x/net/http2/hpack; the codes are the canonical ones they give, which
// build_huffman_tree() checks form a complete prefix-free code.
struct HuffmanCode {
  uint32_t code;
  uint8_t bits;
};
constexpr std::array<HuffmanCode, 257> kHuffmanCodes = {{
    {0x1ff8, 13},     {0x7fffd8, 23},   {0xfffffe2, 28},  {0xfffffe3, 28},  // 0
    {0xfffffe4, 28},  {0xfffffe5, 28},  {0xfffffe6, 28},  {0xfffffe7, 28},  // 4
    {0xfffffe8, 28},  {0xffffea, 24},   {0x3ffffffc, 30}, {0xfffffe9, 28},  // 8
    {0xfffffea, 28},  {0x3ffffffd, 30}, {0xfffffeb, 28},  {0xfffffec, 28},  // 12
    {0xfffffed, 28},  {0xfffffee, 28},  {0xfffffef, 28},  {0xffffff0, 28},  // 16
    {0xffffff1, 28},  {0xffffff2, 28},  {0x3ffffffe, 30}, {0xffffff3, 28},  // 20
    {0xffffff4, 28},  {0xffffff5, 28},  {0xffffff6, 28},  {0xffffff7, 28},  // 24
    {0xffffff8, 28},  {0xffffff9, 28},  {0xffffffa, 28},  {0xffffffb, 28},  // 28
    {0x14, 6},        {0x3f8, 10},      {0x3f9, 10},      {0xffa, 12},      // 32
    {0x1ff9, 13},     {0x15, 6},        {0xf8, 8},        {0x7fa, 11},      // 36
    {0x3fa, 10},      {0x3fb, 10},      {0xf9, 8},        {0x7fb, 11},      // 40
    {0xfa, 8},        {0x16, 6},        {0x17, 6},        {0x18, 6},        // 44
    {0x0, 5},         {0x1, 5},         {0x2, 5},         {0x19, 6},        // 48
    {0x1a, 6},        {0x1b, 6},        {0x1c, 6},        {0x1d, 6},        // 52
    {0x1e, 6},        {0x1f, 6},        {0x5c, 7},        {0xfb, 8},        // 56
    {0x7ffc, 15},     {0x20, 6},        {0xffb, 12},      {0x3fc, 10},      // 60
    {0x1ffa, 13},     {0x21, 6},        {0x5d, 7},        {0x5e, 7},        // 64
    {0x5f, 7},        {0x60, 7},        {0x61, 7},        {0x62, 7},        // 68
    {0x63, 7},        {0x64, 7},        {0x65, 7},        {0x66, 7},        // 72
    {0x67, 7},        {0x68, 7},        {0x69, 7},        {0x6a, 7},        // 76
    {0x6b, 7},        {0x6c, 7},        {0x6d, 7},        {0x6e, 7},        // 80
    {0x6f, 7},        {0x70, 7},        {0x71, 7},        {0x72, 7},        // 84
    {0xfc, 8},        {0x73, 7},        {0xfd, 8},        {0x1ffb, 13},     // 88
    {0x7fff0, 19},    {0x1ffc, 13},     {0x3ffc, 14},     {0x22, 6},        // 92
    {0x7ffd, 15},     {0x3, 5},         {0x23, 6},        {0x4, 5},         // 96
    {0x24, 6},        {0x5, 5},         {0x25, 6},        {0x26, 6},        // 100
    {0x27, 6},        {0x6, 5},         {0x74, 7},        {0x75, 7},        // 104
    {0x28, 6},        {0x29, 6},        {0x2a, 6},        {0x7, 5},         // 108
    {0x2b, 6},        {0x76, 7},        {0x2c, 6},        {0x8, 5},         // 112
    {0x9, 5},         {0x2d, 6},        {0x77, 7},        {0x78, 7},        // 116
    {0x79, 7},        {0x7a, 7},        {0x7b, 7},        {0x7ffe, 15},     // 120
    {0x7fc, 11},      {0x3ffd, 14},     {0x1ffd, 13},     {0xffffffc, 28},  // 124
    {0xfffe6, 20},    {0x3fffd2, 22},   {0xfffe7, 20},    {0xfffe8, 20},    // 128
    {0x3fffd3, 22},   {0x3fffd4, 22},   {0x3fffd5, 22},   {0x7fffd9, 23},   // 132
    {0x3fffd6, 22},   {0x7fffda, 23},   {0x7fffdb, 23},   {0x7fffdc, 23},   // 136
    {0x7fffdd, 23},   {0x7fffde, 23},   {0xffffeb, 24},   {0x7fffdf, 23},   // 140
    {0xffffec, 24},   {0xffffed, 24},   {0x3fffd7, 22},   {0x7fffe0, 23},   // 144
    {0xffffee, 24},   {0x7fffe1, 23},   {0x7fffe2, 23},   {0x7fffe3, 23},   // 148
    {0x7fffe4, 23},   {0x1fffdc, 21},   {0x3fffd8, 22},   {0x7fffe5, 23},   // 152
    {0x3fffd9, 22},   {0x7fffe6, 23},   {0x7fffe7, 23},   {0xffffef, 24},   // 156
    {0x3fffda, 22},   {0x1fffdd, 21},   {0xfffe9, 20},    {0x3fffdb, 22},   // 160
    {0x3fffdc, 22},   {0x7fffe8, 23},   {0x7fffe9, 23},   {0x1fffde, 21},   // 164
    {0x7fffea, 23},   {0x3fffdd, 22},   {0x3fffde, 22},   {0xfffff0, 24},   // 168
    {0x1fffdf, 21},   {0x3fffdf, 22},   {0x7fffeb, 23},   {0x7fffec, 23},   // 172
    {0x1fffe0, 21},   {0x1fffe1, 21},   {0x3fffe0, 22},   {0x1fffe2, 21},   // 176
    {0x7fffed, 23},   {0x3fffe1, 22},   {0x7fffee, 23},   {0x7fffef, 23},   // 180
    {0xfffea, 20},    {0x3fffe2, 22},   {0x3fffe3, 22},   {0x3fffe4, 22},   // 184
    {0x7ffff0, 23},   {0x3fffe5, 22},   {0x3fffe6, 22},   {0x7ffff1, 23},   // 188
    {0x3ffffe0, 26},  {0x3ffffe1, 26},  {0xfffeb, 20},    {0x7fff1, 19},    // 192
    {0x3fffe7, 22},   {0x7ffff2, 23},   {0x3fffe8, 22},   {0x1ffffec, 25},  // 196
    {0x3ffffe2, 26},  {0x3ffffe3, 26},  {0x3ffffe4, 26},  {0x7ffffde, 27},  // 200
    {0x7ffffdf, 27},  {0x3ffffe5, 26},  {0xfffff1, 24},   {0x1ffffed, 25},  // 204
    {0x7fff2, 19},    {0x1fffe3, 21},   {0x3ffffe6, 26},  {0x7ffffe0, 27},  // 208
    {0x7ffffe1, 27},  {0x3ffffe7, 26},  {0x7ffffe2, 27},  {0xfffff2, 24},   // 212
    {0x1fffe4, 21},   {0x1fffe5, 21},   {0x3ffffe8, 26},  {0x3ffffe9, 26},  // 216
    {0xffffffd, 28},  {0x7ffffe3, 27},  {0x7ffffe4, 27},  {0x7ffffe5, 27},  // 220
    {0xfffec, 20},    {0xfffff3, 24},   {0xfffed, 20},    {0x1fffe6, 21},   // 224
    {0x3fffe9, 22},   {0x1fffe7, 21},   {0x1fffe8, 21},   {0x7ffff3, 23},   // 228
    {0x3fffea, 22},   {0x3fffeb, 22},   {0x1ffffee, 25},  {0x1ffffef, 25},  // 232
    {0xfffff4, 24},   {0xfffff5, 24},   {0x3ffffea, 26},  {0x7ffff4, 23},   // 236
    {0x3ffffeb, 26},  {0x7ffffe6, 27},  {0x3ffffec, 26},  {0x3ffffed, 26},  // 240
    {0x7ffffe7, 27},  {0x7ffffe8, 27},  {0x7ffffe9, 27},  {0x7ffffea, 27},  // 244
    {0x7ffffeb, 27},  {0xffffffe, 28},  {0x7ffffec, 27},  {0x7ffffed, 27},  // 248
    {0x7ffffee, 27},  {0x7ffffef, 27},  {0x7fffff0, 27},  {0x3ffffee, 26},  // 252
    {0x3fffffff, 30},                                                       // 256
}};
constexpr int kEos = 256;

// The Huffman code as a binary tree, walked a bit at a time. Node 0 is the root.
struct HuffmanNode {
  std::array<uint16_t, 2> child = {0, 0};  // by the next bit; 0 (the root) for none
  int symbol = -1;                         // a leaf's symbol, else -1
};

std::vector<HuffmanNode> build_huffman_tree() {
  std::vector<HuffmanNode> nodes(1);
  for (size_t symbol = 0; symbol < kHuffmanCodes.size(); ++symbol) {
    const HuffmanCode& code = kHuffmanCodes[symbol];
    size_t node = 0;
    for (int bit = code.bits - 1; bit >= 0; --bit) {
      LOCKSTEP_CHECK(nodes[node].symbol < 0, "Huffman codes are prefix-free");
      const size_t branch = (code.code >> bit) & 1u;
      if (nodes[node].child[branch] == 0) {
        nodes[node].child[branch] = static_cast<uint16_t>(nodes.size());
        nodes.emplace_back();
      }
      node = nodes[node].child[branch];
    }
    LOCKSTEP_CHECK(nodes[node].symbol < 0 && nodes[node].child == (std::array<uint16_t, 2>{0, 0}),
                   "Huffman codes are prefix-free");
    nodes[node].symbol = static_cast<int>(symbol);
  }
  // A complete code (every inner node has both children) has one inner node fewer than leaves,
  // so a walk never falls off the tree.
  for (const HuffmanNode& node : nodes) {
    LOCKSTEP_CHECK(node.symbol >= 0 || (node.child[0] != 0 && node.child[1] != 0),
                   "the Huffman code is complete");
  }
  LOCKSTEP_CHECK(nodes.size() == 2 * kHuffmanCodes.size() - 1, "the Huffman code is complete");
  return nodes;
}

const std::vector<HuffmanNode>& huffman_tree() {
  static const std::vector<HuffmanNode> tree = build_huffman_tree();
  return tree;
}

size_t entry_size(const Header& entry) { return entry.first.size() + entry.second.size() + 32; }

// The integer representation (5.1) below a prefix: at most this many continuation bytes, so an
// integer is below 2^28 plus the prefix's maximum. No valid length or index in a block of
// kHpackBlockBytesMax comes near it.
constexpr size_t kIntegerContinuationBytesMax = 4;

void put_integer(std::string& out, uint8_t flags, unsigned prefix_bits, uint64_t value) {
  const uint64_t prefix_max = (uint64_t{1} << prefix_bits) - 1;
  if (value < prefix_max) {
    out += static_cast<char>(flags | value);
    return;
  }
  out += static_cast<char>(flags | prefix_max);
  value -= prefix_max;
  for (; value >= 0x80; value >>= 7) out += static_cast<char>(0x80 | (value & 0x7f));
  out += static_cast<char>(value);
}

void put_string(std::string& out, std::string_view text) {
  put_integer(out, 0x00, 7, text.size());  // H bit 0: the octets as they are
  out += text;
}

}  // namespace

// A cursor over one header block: reads the primitives of section 5, and on failure keeps why.
class HpackBlockReader {
 public:
  explicit HpackBlockReader(std::string_view block) : block_(block) {}
  bool done() const { return at_ == block_.size(); }
  uint8_t peek() const { return static_cast<uint8_t>(block_[at_]); }
  const std::string& error() const { return error_; }

  std::nullopt_t fail(std::string why) {
    error_ = std::move(why);
    return std::nullopt;
  }

  // An integer whose first byte's low `prefix_bits` begin it (5.1).
  std::optional<uint64_t> integer(unsigned prefix_bits) {
    if (done()) return fail("truncated integer");
    const uint64_t prefix_max = (uint64_t{1} << prefix_bits) - 1;
    uint64_t value = next() & prefix_max;
    if (value < prefix_max) return value;
    for (size_t i = 0; i < kIntegerContinuationBytesMax; ++i) {
      if (done()) return fail("truncated integer");
      const uint8_t byte = next();
      value += uint64_t{byte & 0x7fu} << (7 * i);
      if ((byte & 0x80) == 0) return value;
    }
    return fail(
        fmt::format("integer longer than {} continuation bytes", kIntegerContinuationBytesMax));
  }

  // A string literal (5.2): H bit, length, octets, Huffman-decoded when H is set.
  std::optional<std::string> string() {
    if (done()) return fail("truncated string length");
    const bool huffman = (peek() & 0x80) != 0;
    const std::optional<uint64_t> length = integer(7);
    if (!length) return std::nullopt;
    if (*length > block_.size() - at_) {
      return fail(fmt::format("truncated string: {} bytes with {} left in the block", *length,
                              block_.size() - at_));
    }
    const std::string_view octets = block_.substr(at_, static_cast<size_t>(*length));
    at_ += octets.size();
    if (!huffman) return std::string(octets);
    return huffman_decode(octets);
  }

 private:
  uint8_t next() { return static_cast<uint8_t>(block_[at_++]); }

  std::optional<std::string> huffman_decode(std::string_view octets) {
    const std::vector<HuffmanNode>& tree = huffman_tree();
    std::string text;
    size_t node = 0;
    size_t pending_bits = 0;   // bits read since the last symbol ended
    bool pending_ones = true;  // and whether they are all ones
    for (const char ch : octets) {
      const auto byte = static_cast<uint8_t>(ch);
      for (int bit = 7; bit >= 0; --bit) {
        const unsigned branch = (byte >> bit) & 1u;
        node = tree[node].child[branch];
        ++pending_bits;
        pending_ones = pending_ones && branch == 1;
        const int symbol = tree[node].symbol;
        if (symbol < 0) continue;
        if (symbol == kEos) return fail("Huffman-coded string contains EOS");
        text += static_cast<char>(symbol);
        node = 0;
        pending_bits = 0;
        pending_ones = true;
      }
    }
    // The padding is a prefix of EOS's code (all ones) shorter than a byte.
    if (pending_bits > 7) return fail("Huffman padding longer than 7 bits");
    if (!pending_ones) return fail("Huffman padding is not all ones");
    return text;
  }

  std::string_view block_;
  size_t at_ = 0;
  std::string error_;
};

HpackDecoder::HpackDecoder(size_t max_table_size)
    : table_size_limit_(max_table_size), table_size_max_(max_table_size) {}

std::optional<std::vector<Header>> HpackDecoder::fail(std::string why) {
  error_ = std::move(why);
  return std::nullopt;
}

std::optional<std::vector<Header>> HpackDecoder::decode(std::string_view block) {
  if (!error_.empty()) return std::nullopt;
  if (block.size() > kHpackBlockBytesMax) {
    return fail(fmt::format("header block of {} bytes, above the limit of {}", block.size(),
                            kHpackBlockBytesMax));
  }
  HpackBlockReader in(block);
  std::vector<Header> headers;
  // Every representation consumes at least a byte, so this ends within block.size() turns.
  while (!in.done()) {
    if ((in.peek() & 0xe0) == 0x20) {  // 001xxxxx
      if (!headers.empty()) return fail("dynamic table size update after a header field");
      if (!update_size(in)) return fail(in.error());
      continue;
    }
    if (headers.size() == kHpackHeadersMax) {
      return fail(fmt::format("header block of more than {} headers", kHpackHeadersMax));
    }
    std::optional<Header> header = read_field(in);
    if (!header) return fail(in.error());
    headers.push_back(std::move(*header));
  }
  return headers;
}

bool HpackDecoder::update_size(HpackBlockReader& in) {
  const std::optional<uint64_t> size = in.integer(5);
  if (!size) return false;
  if (*size > table_size_limit_) {
    in.fail(fmt::format("dynamic table size update to {}, above the maximum of {}", *size,
                        table_size_limit_));
    return false;
  }
  table_size_max_ = static_cast<size_t>(*size);
  evict_to(table_size_max_);
  return true;
}

std::optional<Header> HpackDecoder::read_field(HpackBlockReader& in) {
  const uint8_t first = in.peek();
  if ((first & 0x80) != 0) {  // 1xxxxxxx: indexed (6.1)
    const std::optional<uint64_t> index = in.integer(7);
    if (!index) return std::nullopt;
    std::optional<Header> entry = entry_at(*index);
    if (!entry) return in.fail(index_error(*index));
    return entry;
  }
  // 01xxxxxx: with incremental indexing (6.2.1); 0000xxxx without (6.2.2); 0001xxxx never indexed
  // (6.2.3), which only matters to an intermediary re-encoding the field.
  const bool indexing = (first & 0xc0) == 0x40;
  const std::optional<uint64_t> name_index = in.integer(indexing ? 6 : 4);
  if (!name_index) return std::nullopt;
  Header header;
  if (*name_index == 0) {
    std::optional<std::string> name = in.string();
    if (!name) return std::nullopt;
    header.first = std::move(*name);
  } else {
    std::optional<Header> entry = entry_at(*name_index);
    if (!entry) return in.fail(index_error(*name_index));
    header.first = std::move(entry->first);
  }
  std::optional<std::string> value = in.string();
  if (!value) return std::nullopt;
  header.second = std::move(*value);
  if (indexing) add_entry(header);
  return header;
}

std::optional<Header> HpackDecoder::entry_at(uint64_t index) const {
  if (index == 0) return std::nullopt;
  if (index <= kStaticTable.size()) {
    const auto& [name, value] = kStaticTable[static_cast<size_t>(index - 1)];
    return Header(name, value);
  }
  const uint64_t dynamic_index = index - kStaticTable.size() - 1;
  if (dynamic_index >= table_.size()) return std::nullopt;
  return table_[static_cast<size_t>(dynamic_index)];
}

std::string HpackDecoder::index_error(uint64_t index) const {
  if (index == 0) return "index 0";
  return fmt::format("index {} beyond the static table's {} and the dynamic table's {} entries",
                     index, kStaticTable.size(), table_.size());
}

void HpackDecoder::add_entry(Header entry) {
  const size_t size = entry_size(entry);
  if (size > table_size_max_) {  // 4.4: an entry larger than the table empties it
    evict_to(0);
    return;
  }
  evict_to(table_size_max_ - size);
  table_size_ += size;
  table_.push_front(std::move(entry));
}

void HpackDecoder::evict_to(size_t size_max) {
  // Each turn removes an entry, so this ends within table_.size() turns.
  while (table_size_ > size_max) {
    LOCKSTEP_CHECK(!table_.empty(), "the table's size is the sum of its entries' sizes");
    table_size_ -= entry_size(table_.back());
    table_.pop_back();
  }
}

std::string hpack_encode(const std::vector<Header>& headers) {
  std::string out;
  for (const auto& [name, value] : headers) {
    size_t name_index = 0;  // 1-based; 0: not in the static table
    size_t exact_index = 0;
    for (size_t i = 0; i < kStaticTable.size() && exact_index == 0; ++i) {
      if (kStaticTable[i].first != name) continue;
      if (name_index == 0) name_index = i + 1;
      if (kStaticTable[i].second == value) exact_index = i + 1;
    }
    if (exact_index != 0) {
      put_integer(out, 0x80, 7, exact_index);  // indexed (6.1)
      continue;
    }
    put_integer(out, 0x00, 4, name_index);  // without indexing (6.2.2); 0: a literal name follows
    if (name_index == 0) put_string(out, name);
    put_string(out, value);
  }
  return out;
}

}  // namespace lockstep::sim::h2
