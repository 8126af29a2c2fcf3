#pragma once
/// \file How many times a function body's statements spell each name, so
/// that the elaborator can drop a binding once the last statement that
/// reads it has run: a 120,000-line function kept all its 120,000 bindings
/// (232 bytes each) until its end.

#include "frontend/Ast.h"

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace tsl {

/// Counts of the names a block's statements spell: identifiers, member
/// names and the names in type annotations, nested blocks included.
/// Counting more than the reads only keeps bindings longer; the counts of
/// one statement are taken and given back by the same walk, so they stay
/// exact for what it counts.
class NameUses {
public:
  /// Counts the names of every statement of \p body.
  explicit NameUses(const ast::Block &body);
  /// Counts down the names \p st spells (a statement of the body, after it
  /// ran) and returns those that no later statement spells.
  std::vector<std::string_view> finished(const ast::Stmt &st);

  /// Bodies shorter than this are not counted: their bindings are few.
  static constexpr size_t kMinStatements = 64;

private:
  std::vector<std::pair<std::string_view, uint32_t>> counts_; ///< sorted
};

} // namespace tsl
