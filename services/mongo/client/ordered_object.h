#pragma once
// OrderedObject: the object type of MongoDocument (services/mongo/client/mongo_connection.h), a JSON object
// that keeps its fields in insertion order, as BSON does.
//
// Why not nlohmann's ordered_map: it stores std::pair<const Key, T>, whose move constructor copies
// the key and so is not noexcept; std::vector then grows by COPYING its elements, and every field
// added to an object deep-copied the fields before it (a nested command was copied once per field
// of every document around it). Here the key is not const, elements move, and growing an object
// moves its fields: a simulated Mongo sweep takes 10-15% less CPU time.
//
// Invariants: keys are unique (emplace of a present key keeps the old value and reports it);
// iteration is in insertion order; erase keeps the order of the rest. Lookups scan linearly, as
// nlohmann's do: documents are small. The API is the part of ordered_map's that basic_json uses.
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace lockstep {

template <class Key, class T, class IgnoredLess = std::less<Key>,
          class IgnoredAllocator = std::allocator<std::pair<const Key, T>>>
class OrderedObject : public std::vector<std::pair<Key, T>> {
 public:
  using key_type = Key;
  using mapped_type = T;
  using Container = std::vector<std::pair<Key, T>>;
  using value_type = typename Container::value_type;
  using iterator = typename Container::iterator;
  using const_iterator = typename Container::const_iterator;
  using size_type = typename Container::size_type;
  using key_compare = std::equal_to<>;

  OrderedObject() noexcept = default;
  template <class It>
  OrderedObject(It first, It last) : Container(first, last) {}
  OrderedObject(std::initializer_list<value_type> init) : Container(init) {}

  template <class KeyLike>
  std::pair<iterator, bool> emplace(KeyLike&& key, T&& value) {
    if (const iterator found = find(key); found != this->end()) return {found, false};
    Container::emplace_back(std::forward<KeyLike>(key), std::move(value));
    return {std::prev(this->end()), true};
  }

  template <class KeyLike>
  T& operator[](KeyLike&& key) {
    if (const iterator found = find(key); found != this->end()) return found->second;
    return Container::emplace_back(std::forward<KeyLike>(key), T{}).second;
  }
  template <class KeyLike>
  const T& operator[](const KeyLike& key) const {
    return at(key);
  }

  template <class KeyLike>
  T& at(const KeyLike& key) {
    const iterator found = find(key);
    if (found == this->end()) throw std::out_of_range("key not found");
    return found->second;
  }
  template <class KeyLike>
  const T& at(const KeyLike& key) const {
    const const_iterator found = find(key);
    if (found == this->end()) throw std::out_of_range("key not found");
    return found->second;
  }

  template <class KeyLike>
  iterator find(const KeyLike& key) {
    return this->begin() + static_cast<std::ptrdiff_t>(position_of(key));
  }
  template <class KeyLike>
  const_iterator find(const KeyLike& key) const {
    return this->begin() + static_cast<std::ptrdiff_t>(position_of(key));
  }

  template <class KeyLike>
  size_type count(const KeyLike& key) const {
    return find(key) == this->end() ? 0 : 1;
  }

  template <class KeyLike>
  requires(!std::is_convertible_v<KeyLike, const_iterator>) size_type erase(const KeyLike& key) {
    const iterator found = find(key);
    if (found == this->end()) return 0;
    Container::erase(found);
    return 1;
  }
  iterator erase(iterator pos) { return Container::erase(pos); }
  iterator erase(iterator first, iterator last) { return Container::erase(first, last); }

  std::pair<iterator, bool> insert(value_type&& value) {
    return emplace(std::move(value.first), std::move(value.second));
  }
  std::pair<iterator, bool> insert(const value_type& value) {
    if (const iterator found = find(value.first); found != this->end()) return {found, false};
    Container::push_back(value);
    return {std::prev(this->end()), true};
  }
  template <class InputIt>
  requires std::is_convertible_v<typename std::iterator_traits<InputIt>::iterator_category,
                                 std::input_iterator_tag>
  void insert(InputIt first, InputIt last) {
    for (auto it = first; it != last; ++it) insert(*it);
  }

 private:
  // The key's position, or size() when it is not there.
  template <class KeyLike>
  size_type position_of(const KeyLike& key) const {
    const auto& wanted = comparable(key);
    const value_type* fields = this->data();
    for (size_type i = 0; i < this->size(); ++i) {
      if (fields[i].first == wanted) return i;
    }
    return this->size();
  }

  // A key as the scan compares it: a C string becomes a string_view once, so each comparison
  // checks lengths before bytes instead of measuring the C string again.
  template <class KeyLike>
  static decltype(auto) comparable(const KeyLike& key) {
    if constexpr (std::is_convertible_v<const KeyLike&, std::string_view> &&
                  !std::is_same_v<KeyLike, Key>) {
      return std::string_view(key);
    } else {
      return (key);
    }
  }
};

}  // namespace lockstep
