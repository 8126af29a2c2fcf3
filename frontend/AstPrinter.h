#pragma once
/// \file A readable dump of the AST (`tslc emit --emit=ast`), one node per
/// line with its source position.

#include "frontend/Ast.h"

#include <string>

namespace tsl {

std::string printAst(const ast::Module &module, const SourceManager &sm);

} // namespace tsl
