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

/// Parses the file \p file of \p sm. Returns null after reporting
/// diagnostics when the text is malformed. Never throws; any input (binary
/// garbage, NUL bytes, deep nesting) ends in diagnostics or an AST.
std::unique_ptr<ast::Module> parseSource(const SourceManager &sm, uint32_t file,
                                         DiagnosticEngine &diags);

} // namespace tsl
