#pragma once
/// \file Parsing a TSL source file into the AST (ANTLR stays behind this
/// interface).

#include "frontend/Ast.h"
#include "support/Diagnostics.h"

#include <memory>

namespace tsl {

/// The deepest bracket nesting accepted; deeper input gets a diagnostic
/// instead of risking the parser's stack.
constexpr unsigned kMaxNesting = 100;

/// The deepest expression tree accepted (counting every operator, call,
/// member access and subscript on the path from the root to a leaf). It
/// bounds every recursive walk of the AST (elaboration, printing,
/// destruction); `x` followed by thousands of `[0]` or `.T` gets a
/// diagnostic at the first postfix past the limit.
constexpr unsigned kMaxExprDepth = 256;

/// Parses the file \p file of \p sm. Returns null after reporting
/// diagnostics when the text is malformed. Never throws; any input (binary
/// garbage, NUL bytes, deep nesting) ends in diagnostics or an AST. A file
/// with a byte outside printable ASCII (outside comments and strings) gets
/// one diagnostic at that byte, and its text from there on is hidden from
/// diagnostics (SourceManager::hideTextFrom), so a binary file that is not
/// TSL is never echoed.
/// How parseSource got its result: the fast pass (direct AST building), or
/// the reporting pass (ANTLR's full parse tree, with error recovery) after
/// the fast pass met a syntax error.
enum class ParsePath { Fast, Reporting };

std::unique_ptr<ast::Module> parseSource(SourceManager &sm, uint32_t file,
                                         DiagnosticEngine &diags,
                                         ParsePath *path = nullptr);

/// The reporting pass alone, over the whole file (for tests: its AST must
/// equal the fast pass's wherever both succeed).
std::unique_ptr<ast::Module>
parseSourceReporting(SourceManager &sm, uint32_t file, DiagnosticEngine &diags);

} // namespace tsl
