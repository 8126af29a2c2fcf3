// The bump arena the AST comes from, and readUpTo's buffer (issue 31: the
// memory `tslc check` takes per op of a large function).
#include "support/Arena.h"
#include "support/FileRead.h"

#include <cstdio>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>

namespace tsl {
namespace {

TEST(BumpArena, AlignsAndKeepsBlocksApart) {
  BumpArena arena;
  char *a = static_cast<char *>(arena.allocate(3, 1));
  void *b = arena.allocate(8, 8);
  void *c = arena.allocate(24, 16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 16, 0u);
  EXPECT_GE(static_cast<char *>(b), a + 3);
  EXPECT_GE(static_cast<char *>(c), static_cast<char *>(b) + 8);
  // A block larger than a chunk gets its own, writable end to end.
  char *big = static_cast<char *>(arena.allocate(1 << 22, 8));
  big[0] = 1;
  big[(1 << 22) - 1] = 2;
  EXPECT_GE(arena.capacity(), size_t(1) << 22);
  // Small blocks after it still come from the shared chunk.
  char *d = static_cast<char *>(arena.allocate(8, 8));
  EXPECT_TRUE(d < big || d >= big + (1 << 22));
}

TEST(BumpArena, ScopeSetsAndRestoresTheCurrentArena) {
  EXPECT_EQ(currentAstArena(), nullptr);
  BumpArena outer, inner;
  {
    AstArenaScope a(&outer);
    EXPECT_EQ(currentAstArena(), &outer);
    {
      AstArenaScope b(&inner);
      EXPECT_EQ(currentAstArena(), &inner);
    }
    EXPECT_EQ(currentAstArena(), &outer);
  }
  EXPECT_EQ(currentAstArena(), nullptr);
}

// A file of exactly the hinted size is read into a buffer of about that
// size: reading one byte past it doubled the buffer (a 3.3 MB source held
// 6.5 MB for the whole compilation).
TEST(ReadUpTo, ExactHintDoesNotDoubleTheBuffer) {
  char path[] = "/tmp/tsl-readupto-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string data(100000, 'x');
  ASSERT_EQ(write(fd, data.data(), data.size()),
            static_cast<ssize_t>(data.size()));
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  std::string out;
  EXPECT_EQ(readUpTo(fd, 1 << 20, out, data.size()), FileReadStatus::Ok);
  close(fd);
  unlink(path);
  EXPECT_EQ(out, data);
  EXPECT_LT(out.capacity(), data.size() + 4096);
}

} // namespace
} // namespace tsl
