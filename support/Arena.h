#pragma once
/// \file A bump allocator for data that dies all at once (a parsed file's
/// AST), and the per-thread arena the AST's nodes and lists come from while
/// a file is parsed. A node from the heap costs malloc's 8-byte header and
/// its rounding to 16 bytes; a 120,000-line function has ~360,000
/// expressions and ~480,000 short lists.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tsl {

/// Hands out memory that lives until the arena is destroyed. Nothing is
/// freed one by one; nothing is constructed or destroyed by it.
class BumpArena {
public:
  BumpArena() = default;
  BumpArena(const BumpArena &) = delete;
  BumpArena &operator=(const BumpArena &) = delete;
  ~BumpArena();

  /// \p size bytes aligned to \p align (a power of two, at most 16).
  void *allocate(size_t size, size_t align);
  /// Bytes of the chunks taken from the heap.
  size_t capacity() const { return capacity_; }

private:
  char *cur_ = nullptr;
  char *end_ = nullptr;
  std::vector<void *> chunks_;
  size_t capacity_ = 0;
};

/// The arena this thread's AST allocations come from, or null (the heap).
BumpArena *currentAstArena();

/// Makes \p arena the current AST arena of this thread for its lifetime
/// (restoring the one before). Everything allocated from it must be freed
/// (destroyed) before the arena is.
class AstArenaScope {
public:
  explicit AstArenaScope(BumpArena *arena);
  ~AstArenaScope();
  AstArenaScope(const AstArenaScope &) = delete;
  AstArenaScope &operator=(const AstArenaScope &) = delete;

private:
  BumpArena *previous_;
};

} // namespace tsl
