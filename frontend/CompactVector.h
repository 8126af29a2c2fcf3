#pragma once
/// \file A vector one pointer wide, for the AST: most of an expression's
/// lists (operands, operators, arguments, subscripts) are empty or short,
/// and a node holds several, so std::vector's three words each made a node
/// 200 bytes. Size and capacity live in the heap block, before the elements.
/// While a file is parsed the blocks come from its AST arena
/// (support/Arena.h): a block remembers where it came from.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>

#include "support/Arena.h"
#include <utility>

namespace tsl {

/// A move-only vector of T in one allocation (none while empty), with the
/// subset of std::vector's interface the AST uses.
template <typename T> class CompactVector {
public:
  CompactVector() = default;
  CompactVector(const CompactVector &) = delete;
  CompactVector &operator=(const CompactVector &) = delete;
  CompactVector(CompactVector &&o) noexcept : h(o.h) { o.h = nullptr; }
  CompactVector &operator=(CompactVector &&o) noexcept {
    if (this != &o) {
      destroy();
      h = o.h;
      o.h = nullptr;
    }
    return *this;
  }
  ~CompactVector() { destroy(); }

  size_t size() const { return h ? h->size : 0; }
  bool empty() const { return size() == 0; }
  T *begin() { return data(); }
  T *end() { return data() + size(); }
  const T *begin() const { return data(); }
  const T *end() const { return data() + size(); }
  T &operator[](size_t i) { return data()[i]; }
  const T &operator[](size_t i) const { return data()[i]; }
  T &front() { return data()[0]; }
  const T &front() const { return data()[0]; }
  T &back() { return data()[size() - 1]; }
  const T &back() const { return data()[size() - 1]; }

  void push_back(T &&v) { emplace_back(std::move(v)); }
  void push_back(const T &v) { emplace_back(v); }
  template <typename... A> T &emplace_back(A &&...args) {
    if (size() == capacity())
      grow(capacity() ? 2 * capacity() : firstCapacity());
    T *slot = data() + h->size;
    new (slot) T(std::forward<A>(args)...);
    ++h->size;
    return *slot;
  }
  /// Exactly \p n slots (at least size()).
  void reserve(size_t n) {
    if (n > capacity())
      grow(n);
  }
  void clear() { destroy(); }

private:
  struct Header {
    uint32_t size;
    uint32_t capacity; ///< kInArena set for a block of an arena
  };
  static constexpr uint32_t kInArena = 1u << 31;
  static_assert(alignof(T) <= alignof(Header) * 2,
                "CompactVector: over-aligned element");
  static constexpr size_t kOffset = sizeof(Header); // aligned for T
  /// As many as fit a 32-byte block (malloc's smallest), at least one.
  static constexpr size_t firstCapacity() {
    return sizeof(T) + kOffset <= 24 ? (24 - kOffset) / sizeof(T) : 1;
  }

  size_t capacity() const { return h ? h->capacity & ~kInArena : 0; }
  T *data() const {
    return h ? reinterpret_cast<T *>(reinterpret_cast<char *>(h) + kOffset)
             : nullptr;
  }
  void grow(size_t n) {
    BumpArena *arena = currentAstArena();
    void *raw = arena ? arena->allocate(kOffset + n * sizeof(T), 8)
                      : ::operator new(kOffset + n * sizeof(T));
    Header *nh = static_cast<Header *>(raw);
    nh->size = 0;
    nh->capacity = static_cast<uint32_t>(n) | (arena ? kInArena : 0);
    T *to = reinterpret_cast<T *>(static_cast<char *>(raw) + kOffset);
    for (size_t i = 0; i < size(); ++i) {
      new (to + i) T(std::move(data()[i]));
      ++nh->size;
    }
    destroy();
    h = nh;
  }
  void destroy() {
    if (!h)
      return;
    T *d = data();
    for (size_t i = h->size; i-- > 0;)
      d[i].~T();
    if (!(h->capacity & kInArena)) // an arena's block goes with the arena
      ::operator delete(h);
    h = nullptr;
  }

  Header *h = nullptr;
};

} // namespace tsl
