// The bump allocator and the per-thread AST arena (Arena.h).
#include "support/Arena.h"

#include <new>

namespace tsl {

namespace {
/// The first chunk; each later one doubles, up to kMaxChunk.
constexpr size_t kFirstChunk = 16 * 1024;
constexpr size_t kMaxChunk = 1024 * 1024;
thread_local BumpArena *tCurrent = nullptr;
} // namespace

BumpArena::~BumpArena() {
  for (void *chunk : chunks_)
    ::operator delete(chunk, std::align_val_t(16));
}

void *BumpArena::allocate(size_t size, size_t align) {
  uintptr_t at = (reinterpret_cast<uintptr_t>(cur_) + align - 1) & ~(align - 1);
  if (cur_ && at + size <= reinterpret_cast<uintptr_t>(end_)) {
    cur_ = reinterpret_cast<char *>(at + size);
    return reinterpret_cast<void *>(at);
  }
  size_t chunk = capacity_ < kFirstChunk ? kFirstChunk
                 : capacity_ < kMaxChunk ? capacity_
                                         : kMaxChunk;
  if (size + align > chunk / 4) {
    // A large block gets a chunk of its own; the current one stays.
    void *own = ::operator new(size, std::align_val_t(16));
    chunks_.push_back(own);
    capacity_ += size;
    return own;
  }
  chunks_.push_back(::operator new(chunk, std::align_val_t(16)));
  capacity_ += chunk;
  cur_ = static_cast<char *>(chunks_.back());
  end_ = cur_ + chunk;
  void *out = cur_; // 16-aligned
  cur_ += size;
  return out;
}

BumpArena *currentAstArena() { return tCurrent; }

AstArenaScope::AstArenaScope(BumpArena *arena) : previous_(tCurrent) {
  tCurrent = arena;
}

AstArenaScope::~AstArenaScope() { tCurrent = previous_; }

} // namespace tsl
