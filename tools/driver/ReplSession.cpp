#include "tools/driver/ReplSession.h"

#include "backend/cpu/CpuKernel.h"
#include "frontend/Elaborator.h"
#include "frontend/Parser.h"
#include "ir/IrText.h"
#include "ir/TensorIO.h"
#include "shapes/SymCond.h"
#include "tools/driver/Driver.h"
#include "tools/driver/JitCompiler.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <regex>
#include <sstream>

namespace tsl {

namespace {

const char *kHelp =
    R"(Enter TSL: module items (dim, fn, import), declarations, statements or expressions.
  dim S: dynamic in 1..64;       declare a dim (any module item works: fn, import)
  let x: f32[B, S, 64];          a symbolic value with no data
  let y = reshape(x, [B*S, 64]); bind a value and print its type
  check(S % 2 == 0);             add a fact
  x @ w                          print an expression's type (and value when it has data)
Commands:
  :help                          this text
  :type EXPR                     the type of an expression
  :simplify DIMEXPR              a size expression in canonical form
  :prove COND                    true, false (with a counterexample) or unknown
  :facts                         symbols, kinds, ranges and facts
  :guards FN ARG=TYPE...         a variant's guards (as tslc guards)
  :ir FN                         the IR of a function (symbolic)
  :load FILE                     add a file's items to the session
  :run FN ARG=VALUE...           run a function (as tslc run)
  :reset                         forget everything
  :quit                          leave
)";

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos)
    return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string stripSemicolon(std::string s) {
  s = trim(s);
  while (!s.empty() && s.back() == ';')
    s = trim(s.substr(0, s.size() - 1));
  return s;
}

using Piece = ReplSession::Piece;

/// A synthetic module: glue text plus spans of user text.
struct Synthetic {
  struct Span {
    size_t begin, end;
    unsigned entry;
    size_t entryOffset;
  };
  std::string text;
  std::vector<Span> spans;
  void glue(const std::string &s) { text += s; }
  void piece(const Piece &p) {
    spans.push_back(
        {text.size(), text.size() + p.text.size(), p.entry, p.entryOffset});
    text += p.text;
  }
};

/// Re-renders diagnostics of the synthetic module so they point into the
/// entries as typed (`<input>` for the current one, `<input N>` before).
void reportMapped(const std::vector<Diagnostic> &all, const SourceManager &sm,
                  uint32_t synFile, const Synthetic &syn,
                  const std::vector<std::string> &entries,
                  const std::vector<std::string> &entryNames, unsigned current,
                  std::ostream &err) {
  SourceManager mapped;
  std::map<unsigned, uint32_t> buffers;
  auto bufferFor = [&](unsigned entry) {
    auto it = buffers.find(entry);
    if (it != buffers.end())
      return it->second;
    std::string name = entry < entryNames.size() && !entryNames[entry].empty()
                           ? entryNames[entry]
                       : entry == current
                           ? "<input>"
                           : "<input " + std::to_string(entry) + ">";
    uint32_t id =
        mapped.addBuffer(name, entry < entries.size() ? entries[entry] : "");
    buffers[entry] = id;
    return id;
  };
  auto mapRange = [&](SourceRange r) {
    if (!r.isValid() || r.begin.file != synFile)
      return SourceRange();
    for (const auto &span : syn.spans)
      if (r.begin.offset >= span.begin && r.begin.offset <= span.end) {
        uint32_t id = bufferFor(span.entry);
        size_t b = span.entryOffset + (r.begin.offset - span.begin);
        size_t e = span.entryOffset +
                   (std::min<size_t>(std::max(r.end.offset, r.begin.offset),
                                     span.end) -
                    span.begin);
        return SourceRange(mapped.locAt(id, b), mapped.locAt(id, e));
      }
    return SourceRange();
  };
  std::ostringstream text;
  DiagnosticEngine original(sm, text);
  DiagnosticEngine remapped(mapped, text);
  for (Diagnostic d : all) {
    if (!d.range.isValid() || d.range.begin.file != synFile) {
      original.report(d);
      continue;
    }
    d.range = mapRange(d.range);
    for (DiagNote &n : d.notes) {
      if (n.range.isValid() && n.range.begin.file == synFile) {
        n.range = mapRange(n.range);
      } else if (n.range.isValid()) {
        n.message = sm.describe(n.range.begin) + ": " + n.message;
        n.range = SourceRange();
      }
    }
    remapped.report(d);
  }
  err << text.str();
}

/// What elaborating the session's synthetic function gave.
struct Outcome {
  bool ok = false;
  bool closed = false; ///< no symbolic inputs, so values can be computed
  ProbeResult result;
  Function fn;
  std::string answer; ///< set by the inspector
};

using Inspector =
    std::function<void(const ShapeEnv &, const ProbeResult &, Outcome &)>;

std::string describe(const ProbeResult &r) {
  switch (r.kind) {
  case ProbeResult::Kind::Tensor:
    return r.type.str();
  case ProbeResult::Kind::Int:
    return "int = " + r.intValue.str();
  case ProbeResult::Kind::Cond:
    return "condition " + r.cond.str();
  case ProbeResult::Kind::Tuple: {
    std::string s = "(";
    for (size_t i = 0; i < r.elements.size(); ++i)
      s += (i ? ", " : "") + describe(r.elements[i]);
    return s + ")";
  }
  case ProbeResult::Kind::Other:
    return r.description;
  }
  return r.description;
}

std::string assignment(const std::map<std::string, int64_t> &values) {
  std::string s;
  for (const auto &[n, v] : values)
    s += (s.empty() ? "" : ", ") + n + " = " + std::to_string(v);
  return s;
}

/// The ops that compute \p fn's results, as a function without
/// parameters; false when they depend on a parameter or a symbol.
bool closedSlice(const Function &fn, Function &out) {
  std::vector<bool> needed(fn.values.size(), false);
  for (ValueId r : fn.results)
    needed[r] = true;
  std::vector<bool> keep(fn.ops.size(), false);
  for (size_t i = fn.ops.size(); i-- > 0;) {
    const Operation &op = fn.ops[i];
    bool used = false;
    for (ValueId r : op.results)
      used |= needed[r];
    if (!used)
      continue;
    keep[i] = true;
    for (ValueId v : op.operands)
      needed[v] = true;
  }
  for (const Param &p : fn.params)
    if (!p.isInt && needed[p.value])
      return false;
  out = Function();
  out.name = fn.name;
  out.values = fn.values;
  out.callees = fn.callees; // call ops name them by index
  for (size_t i = 0; i < fn.ops.size(); ++i)
    if (keep[i])
      out.ops.push_back(fn.ops[i]);
  out.results = fn.results;
  for (ValueId v = 0; v < fn.values.size(); ++v)
    if (needed[v])
      for (const SymExpr &d : fn.values[v].type.dims)
        if (!d.isConst())
          return false;
  for (const Operation &op : out.ops)
    for (const auto &[name, attr] : op.attrs) {
      if (const SymExpr *e = std::get_if<SymExpr>(&attr); e && !e->isConst())
        return false;
      if (const auto *es = std::get_if<std::vector<SymExpr>>(&attr))
        for (const SymExpr &e : *es)
          if (!e.isConst())
            return false;
    }
  return true;
}

/// \p text without blanks (how two declarations are compared).
std::string withoutBlanks(std::string_view text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)))
      s += c;
  return s;
}

/// \p text with each dim declaration that repeats one in \p known (the
/// same name and the same text but for blanks: same kind, range and value)
/// blanked out, keeping every offset; the others are added to \p known. A
/// different declaration of a known name stays, and elaboration reports it
/// ("declared twice"). Text that does not parse is returned as it is.
std::string dropRepeatedDims(const std::string &text,
                             std::map<std::string, std::string> &known) {
  SourceManager sm;
  std::ostringstream ignored;
  DiagnosticEngine diags(sm, ignored);
  uint32_t file = sm.addBuffer("<items>", text);
  std::unique_ptr<ast::Module> m = parseSource(sm, file, diags);
  if (!m)
    return text;
  std::string out = text;
  for (const ast::DimDecl &d : m->dims) {
    size_t begin = d.range.begin.offset, end = d.range.end.offset;
    if (end < out.size() && out[end] == ';')
      ++end;
    std::string decl = withoutBlanks(text.substr(begin, end - begin));
    auto [it, fresh] = known.emplace(d.name, decl);
    if (!fresh && it->second == decl)
      for (size_t i = begin; i < end; ++i)
        if (out[i] != '\n')
          out[i] = ' ';
  }
  return out;
}

} // namespace

ReplSession::ReplSession(std::ostream &out, std::ostream &err)
    : out_(out), err_(err) {
  const char *env = std::getenv("TSL_STDLIB_PATH");
#ifdef TSL_DEFAULT_STDLIB_DIR
  stdlibDir_ = env && *env ? env : TSL_DEFAULT_STDLIB_DIR;
#else
  stdlibDir_ = env && *env ? env : "stdlib";
#endif
}

bool ReplSession::needsMore(const std::string &text) {
  int depth = 0;
  bool inString = false, inBlockComment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inBlockComment) {
      if (c == '*' && i + 1 < text.size() && text[i + 1] == '/') {
        inBlockComment = false;
        ++i;
      }
      continue;
    }
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"' || c == '\n')
        inString = false;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n')
        ++i;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      inBlockComment = true;
      ++i;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == ')' || c == ']' || c == '}')
      --depth;
  }
  return depth > 0 || inBlockComment;
}

std::vector<std::string>
ReplSession::completions(const std::string &prefix) const {
  static const char *fixed[] = {
      ":help",    ":type",  ":simplify",   ":prove", ":facts", ":guards",
      ":ir",      ":load",  ":run",        ":reset", ":quit",  "dim",
      "fn",       "import", "let",         "var",    "for",    "in",
      "check",    "if",     "else",        "return", "static", "dynamic",
      "unbacked", "auto",   "multiple_of", "int",    "bool",   "i8",
      "i32",      "i64",    "f16",         "bf16",   "f32",    "f64"};
  std::vector<std::string> names(std::begin(fixed), std::end(fixed));
  // Builtins from the table elaboration uses (frontend/Builtins.cpp).
  names.insert(names.end(), builtinNames().begin(), builtinNames().end());
  static const std::regex ident("(dim|fn)\\s+([A-Za-z_][A-Za-z_0-9]*)");
  for (const Piece &p : items_)
    for (auto it = std::sregex_iterator(p.text.begin(), p.text.end(), ident);
         it != std::sregex_iterator(); ++it)
      names.push_back((*it)[2]);
  for (const auto &d : decls_)
    names.push_back(d.first);
  for (const std::string &n : boundNames_)
    names.push_back(n);
  std::vector<std::string> out;
  for (const std::string &n : names)
    if (n.rfind(prefix, 0) == 0)
      out.push_back(n);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string ReplSession::itemsText() const {
  std::string s;
  for (const Piece &p : items_)
    s += p.text + "\n";
  return s;
}

void ReplSession::locateInEntries(Function &fn) const {
  // Where each line of itemsText() starts, and where each item does.
  std::string text = itemsText();
  std::vector<size_t> lineStarts{0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n')
      lineStarts.push_back(i + 1);
  auto relocate = [&](Location &loc) {
    if (loc.file != kSessionName || loc.line == 0 ||
        loc.line > lineStarts.size())
      return;
    size_t offset = lineStarts[loc.line - 1] + (loc.col ? loc.col - 1 : 0);
    size_t start = 0;
    for (const Piece &p : items_) {
      if (offset >= start && offset <= start + p.text.size()) {
        const std::string &entry = entries_[p.entry];
        size_t at = std::min(entry.size(), p.entryOffset + (offset - start));
        loc.file = !entryNames_[p.entry].empty()
                       ? entryNames_[p.entry]
                       : "<input " + std::to_string(p.entry) + ">";
        loc.line = 1 + static_cast<unsigned>(
                           std::count(entry.begin(), entry.begin() + at, '\n'));
        size_t lineStart = entry.rfind('\n', at ? at - 1 : 0);
        lineStart =
            lineStart == std::string::npos || at == 0 ? 0 : lineStart + 1;
        loc.col = static_cast<unsigned>(at - lineStart) + 1;
        return;
      }
      start += p.text.size() + 1;
    }
  };
  for (Operation &op : fn.ops)
    relocate(op.loc);
}

namespace {

/// The session's parts, for building the synthetic function.
struct Parts {
  const std::vector<Piece> &items;
  const std::vector<std::pair<std::string, Piece>> &decls;
  const std::vector<Piece> &stmts;
  const std::vector<std::string> &entries;
  const std::vector<std::string> &entryNames; ///< a loaded file's path, or ""
  const std::string &stdlib;
  unsigned current;
};

Outcome elaborateSession(const Parts &parts, const Piece *extraStmt,
                         const Piece *probe, const Inspector &inspect,
                         std::ostream &err) {
  Outcome outcome;
  // The dims declared without a value become symbols through a dummy
  // parameter, so every declared dim is in scope.
  std::vector<std::string> dims;
  {
    SourceManager sm;
    std::ostringstream sink;
    DiagnosticEngine diags(sm, sink);
    ModuleLoader loader(sm, diags);
    loader.setStdlibDir(parts.stdlib);
    std::string text;
    for (const Piece &p : parts.items)
      text += p.text + "\n";
    if (const LoadedModule *m = loader.loadText("<items>", text))
      for (const ast::DimDecl &d : m->ast->dims)
        if (!d.value)
          dims.push_back(d.name);
  }
  Synthetic syn;
  for (const Piece &p : parts.items) {
    syn.piece(p);
    syn.glue("\n");
  }
  syn.glue("fn __repl(");
  bool first = true;
  if (!dims.empty()) {
    syn.glue("__dims: f32[");
    for (size_t i = 0; i < dims.size(); ++i)
      syn.glue((i ? ", " : "") + dims[i]);
    syn.glue("]");
    first = false;
  }
  for (const auto &[name, type] : parts.decls) {
    syn.glue(std::string(first ? "" : ", ") + name + ": ");
    syn.piece(type);
    first = false;
  }
  syn.glue(") {\n");
  for (const Piece &p : parts.stmts) {
    syn.piece(p);
    syn.glue("\n");
  }
  if (extraStmt) {
    syn.piece(*extraStmt);
    syn.glue("\n");
  }
  if (probe) {
    syn.glue("return (");
    syn.piece(*probe);
    syn.glue(");\n}\n");
  } else {
    syn.glue("return 0;\n}\n");
  }
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  ModuleLoader loader(sm, diags);
  loader.setStdlibDir(parts.stdlib);
  const LoadedModule *m = loader.loadText("<repl>", syn.text);
  uint32_t file = sm.findFile("<repl>");
  outcome.closed = dims.empty() && parts.decls.empty();
  ElaborateOptions options;
  if (outcome.closed)
    options.examples.emplace();
  options.probe = [&](const ShapeEnv &env, const ProbeResult &r) {
    outcome.result = r;
    if (inspect)
      inspect(env, r, outcome);
  };
  bool ok = m && elaborateFunction(*m, "__repl", options, diags, outcome.fn);
  if (!diags.diagnostics().empty())
    reportMapped(diags.diagnostics(), sm, file, syn, parts.entries,
                 parts.entryNames, parts.current, err);
  outcome.ok = ok;
  return outcome;
}

} // namespace

bool ReplSession::execute(const std::string &entryText) {
  std::string entry = trim(entryText);
  if (entry.empty() || entry.rfind("//", 0) == 0)
    return true;
  entry_ = static_cast<unsigned>(entries_.size());
  entries_.push_back(entry);
  entryNames_.push_back("");
  if (entry[0] == ':')
    return command(entry);
  static const std::regex item("^(dim|fn|import)\\b");
  if (std::regex_search(entry, item))
    return addItems(entry);
  static const std::regex decl(
      "^let\\s+([A-Za-z_][A-Za-z_0-9]*)\\s*:\\s*([^=;]+?)\\s*;?\\s*$");
  std::smatch m;
  if (std::regex_match(entry, m, decl))
    return declare(m[1], m[2]);
  static const std::regex let("^let\\s+(\\(([^)]*)\\)|[A-Za-z_][A-Za-z_0-9]*)");
  if (std::regex_search(entry, m, let)) {
    std::vector<std::string> names;
    std::string target = m[2].matched ? std::string(m[2]) : std::string(m[1]);
    std::stringstream ss(target);
    std::string n;
    while (std::getline(ss, n, ','))
      if (!trim(n).empty())
        names.push_back(trim(n));
    return statement(entry.back() == ';' ? entry : entry + ";", names);
  }
  if (entry.rfind("check", 0) == 0)
    return statement(entry.back() == ';' ? entry : entry + ";", {});
  return expression(stripSemicolon(entry), false);
}

bool ReplSession::addItems(const std::string &typed) {
  // `dim N: dynamic` and `import nn` may omit the final ';' at the prompt.
  std::string text = typed;
  if (entryNames_[entry_].empty() &&
      (text.rfind("dim", 0) == 0 || text.rfind("import", 0) == 0) &&
      text.back() != ';' && text.back() != '}')
    text += ";";
  std::map<std::string, std::string> dims = dimTexts_;
  Piece p{dropRepeatedDims(text, dims), entry_, 0};
  items_.push_back(p);
  Parts parts{items_,      decls_,     stmts_, entries_,
              entryNames_, stdlibDir_, entry_};
  Outcome o = elaborateSession(parts, nullptr, nullptr, nullptr, err_);
  if (!o.ok) {
    items_.pop_back();
    return false;
  }
  dimTexts_ = std::move(dims);
  return true;
}

bool ReplSession::declare(const std::string &name, const std::string &type) {
  for (const auto &d : decls_)
    if (d.first == name) {
      err_ << "<input>: error: '" << name << "' is already declared\n";
      return false;
    }
  size_t offset = entries_[entry_].find(type, entries_[entry_].find(':'));
  decls_.push_back({name, Piece{type, entry_, offset}});
  Parts parts{items_,      decls_,     stmts_, entries_,
              entryNames_, stdlibDir_, entry_};
  Piece probe{name, entry_, entries_[entry_].find(name)};
  Outcome o = elaborateSession(parts, nullptr, &probe, nullptr, err_);
  if (!o.ok) {
    decls_.pop_back();
    return false;
  }
  out_ << name << ": " << describe(o.result) << "\n";
  return true;
}

bool ReplSession::statement(const std::string &text,
                            const std::vector<std::string> &names) {
  Piece stmt{text, entry_, 0};
  Parts parts{items_,      decls_,     stmts_, entries_,
              entryNames_, stdlibDir_, entry_};
  std::string probeText;
  for (size_t i = 0; i < names.size(); ++i)
    probeText += (i ? ", " : "") + names[i];
  if (names.size() > 1)
    probeText = "(" + probeText + ")";
  // The probe's text is synthetic; errors in it cannot happen for bound names.
  Piece probe{probeText, entry_, 0};
  Outcome o = elaborateSession(parts, &stmt, names.empty() ? nullptr : &probe,
                               nullptr, err_);
  if (!o.ok)
    return false;
  stmts_.push_back(stmt);
  for (const std::string &n : names)
    boundNames_.push_back(n);
  if (names.size() == 1) {
    out_ << names[0] << ": " << describe(o.result) << "\n";
  } else {
    for (size_t i = 0; i < names.size() && i < o.result.elements.size(); ++i)
      out_ << names[i] << ": " << describe(o.result.elements[i]) << "\n";
  }
  return true;
}

bool ReplSession::expression(const std::string &text, bool typeOnly) {
  size_t offset = entries_[entry_].find(text);
  Piece probe{text, entry_, offset == std::string::npos ? 0 : offset};
  Parts parts{items_,      decls_,     stmts_, entries_,
              entryNames_, stdlibDir_, entry_};
  Outcome o = elaborateSession(parts, nullptr, &probe, nullptr, err_);
  if (!o.ok)
    return false;
  out_ << describe(o.result) << "\n";
  if (typeOnly || o.fn.results.empty())
    return true;
  // Print the value when it needs no symbolic input: the slice of the IR
  // that computes it uses no parameter and has constant shapes.
  Function slice;
  if (!closedSlice(o.fn, slice))
    return true;
  std::vector<Tensor> outputs;
  RunError error;
  if (!interpret(slice, {}, outputs, error)) {
    err_ << "<input>: error: " << error.message << "\n";
    return false;
  }
  for (const Tensor &t : outputs)
    out_ << formatTensor(t) << "\n";
  return true;
}

bool ReplSession::simplify(const std::string &text) {
  size_t offset = entries_[entry_].find(text);
  Piece probe{text, entry_, offset == std::string::npos ? 0 : offset};
  Parts parts{items_,      decls_,     stmts_, entries_,
              entryNames_, stdlibDir_, entry_};
  std::ostringstream errors;
  Outcome o = elaborateSession(parts, nullptr, &probe, nullptr, errors);
  if (!o.ok) {
    // Names the session does not know are plain symbols here.
    SymExpr e;
    std::string parseError;
    if (parseSymExpr(text, e, parseError)) {
      out_ << e.str() << "\n";
      return true;
    }
    err_ << errors.str();
    return false;
  }
  if (o.result.kind != ProbeResult::Kind::Int) {
    err_ << "<input>: error: :simplify needs a size expression, got "
         << describe(o.result) << "\n";
    return false;
  }
  out_ << o.result.intValue.str() << "\n";
  return true;
}

bool ReplSession::prove(const std::string &text) {
  size_t offset = entries_[entry_].find(text);
  Piece probe{text, entry_, offset == std::string::npos ? 0 : offset};
  Parts parts{items_,      decls_,     stmts_, entries_,
              entryNames_, stdlibDir_, entry_};
  Inspector inspect = [](const ShapeEnv &env, const ProbeResult &r,
                         Outcome &o) {
    if (r.kind != ProbeResult::Kind::Cond)
      return;
    Truth t = env.prove(r.cond);
    if (t == Truth::True) {
      o.answer = "true";
      return;
    }
    std::string counter = assignment(env.counterexample(r.cond));
    if (t == Truth::False || !counter.empty())
      o.answer =
          counter.empty() ? "false" : "false (counterexample: " + counter + ")";
    else
      o.answer = "unknown";
  };
  Outcome o = elaborateSession(parts, nullptr, &probe, inspect, err_);
  if (!o.ok)
    return false;
  if (o.result.kind != ProbeResult::Kind::Cond) {
    err_ << "<input>: error: :prove needs a condition on sizes, got "
         << describe(o.result) << "\n";
    return false;
  }
  out_ << o.answer << "\n";
  return true;
}

bool ReplSession::facts() {
  Parts parts{items_,      decls_,     stmts_, entries_,
              entryNames_, stdlibDir_, entry_};
  Inspector inspect = [](const ShapeEnv &env, const ProbeResult &, Outcome &o) {
    std::string s =
        "symbols:" + std::string(env.symbols().empty() ? " none" : "") + "\n";
    for (const SymbolInfo &sym : env.symbols()) {
      s += "  " + sym.name + ": " + dimKindName(sym.kind) +
           (sym.isInt ? " int" : "");
      if (sym.lo != 0 || sym.hi)
        s += " in " +
             (sym.lo == INT64_MIN ? std::string() : std::to_string(sym.lo)) +
             ".." + (sym.hi ? std::to_string(*sym.hi) : "");
      if (sym.multipleOf != 1)
        s += ", multiple_of " + std::to_string(sym.multipleOf);
      if (!sym.description.empty())
        s += "  (" + sym.description + ")";
      s += "\n";
    }
    s += "facts:" + std::string(env.facts().empty() ? " none" : "") + "\n";
    for (const SymCond &f : env.facts())
      s += "  " + f.str() + "\n";
    o.answer = s;
  };
  Outcome o = elaborateSession(parts, nullptr, nullptr, inspect, err_);
  if (!o.ok)
    return false;
  out_ << o.answer;
  return true;
}

bool ReplSession::compileCall(const std::string &argsText, bool withData,
                              SourceManager &sm, DiagnosticEngine &diags,
                              std::vector<ArgSpec> &args, Function &fn) {
  std::stringstream ss(argsText);
  std::string fnName, word;
  ss >> fnName;
  while (ss >> word) {
    ArgSpec spec;
    std::string error;
    if (!parseArgSpec(word, withData, spec, error)) {
      err_ << "<input>: error: " << error << "\n";
      return false;
    }
    args.push_back(std::move(spec));
  }
  ModuleLoader loader(sm, diags);
  loader.setStdlibDir(stdlibDir_);
  const LoadedModule *m = loader.loadText(kSessionName, itemsText());
  if (!m)
    return false;
  ElaborateOptions options;
  options.examples.emplace();
  for (const ArgSpec &a : args)
    (*options.examples)[a.name] =
        ExampleArg{a.isInt, a.intValue, a.dtype, a.shape};
  if (!elaborateFunction(*m, fnName, options, diags, fn))
    return false;
  locateInEntries(fn);
  return true;
}

bool ReplSession::guards(const std::string &argsText) {
  SourceManager sm;
  DiagnosticEngine diags(sm, err_);
  std::vector<ArgSpec> args;
  Function fn;
  if (!compileCall(argsText, false, sm, diags, args, fn))
    return false;
  out_ << formatGuardReport(fn, false);
  return true;
}

bool ReplSession::ir(const std::string &fnName) {
  SourceManager sm;
  DiagnosticEngine diags(sm, err_);
  ModuleLoader loader(sm, diags);
  loader.setStdlibDir(stdlibDir_);
  const LoadedModule *m = loader.loadText(kSessionName, itemsText());
  Function fn;
  if (!m || !elaborateFunction(*m, trim(fnName), ElaborateOptions{}, diags, fn))
    return false;
  locateInEntries(fn);
  out_ << printFunction(fn);
  return true;
}

bool ReplSession::load(const std::string &path) {
  // The reader of source files and imports: a regular file only (not a
  // directory, a device such as /dev/zero or a FIFO, which would hang),
  // within the size limit.
  SourceManager files;
  std::string error;
  uint32_t file = files.addFile(trim(path), error);
  if (!file) {
    err_ << "<input>: error: " << error << "\n";
    return false;
  }
  std::string text(files.text(file));
  // The file's text becomes this entry's text, and its path the entry's
  // name, so errors and IR locations point into the file.
  entries_[entry_] = text;
  entryNames_[entry_] = trim(path);
  return addItems(text);
}

bool ReplSession::run(const std::string &argsText) {
  SourceManager sm;
  DiagnosticEngine diags(sm, err_);
  std::vector<ArgSpec> args;
  Function fn;
  if (!compileCall(argsText, true, sm, diags, args, fn))
    return false;
  std::vector<ArgValue> values;
  std::string error;
  if (!orderArgs(fn, args, values, error)) {
    err_ << "<input>: error: " << error << "\n";
    return false;
  }
  // The CPU backend runs the call (the interpreter stays the oracle).
  std::unique_ptr<KernelObjectCache> cache = JitCompiler::openKernelCache();
  Expected<std::unique_ptr<CpuKernel>> kernel =
      CpuKernel::compile(fn, kOutlineOpsAbove, cache.get());
  if (!kernel) {
    err_ << "<input>: error: " << kernel.error().message << "\n";
    return false;
  }
  std::vector<Tensor> outputs;
  RunError runError;
  if (!(*kernel)->run(values, outputs, runError)) {
    reportRunError(runError, sm, diags);
    return false;
  }
  out_ << formatResults(outputs);
  return true;
}

void ReplSession::help() { out_ << kHelp; }

bool ReplSession::command(const std::string &line) {
  size_t space = line.find_first_of(" \t");
  std::string name = line.substr(0, space);
  std::string rest =
      space == std::string::npos ? "" : trim(line.substr(space + 1));
  if (name == ":help")
    return help(), true;
  if (name == ":quit" || name == ":q")
    return quit_ = true, true;
  if (name == ":reset") {
    items_.clear();
    dimTexts_.clear();
    decls_.clear();
    stmts_.clear();
    boundNames_.clear();
    return true;
  }
  if (name == ":facts")
    return facts();
  static const char *withArgument[] = {
      ":type", ":simplify", ":prove", ":guards", ":ir", ":load", ":run"};
  if (std::find_if(std::begin(withArgument), std::end(withArgument),
                   [&](const char *c) { return name == c; }) ==
      std::end(withArgument)) {
    err_ << "<input>: error: unknown command '" << name << "' (see :help)\n";
    return false;
  }
  if (rest.empty()) {
    err_ << "<input>: error: " << name << " needs an argument (see :help)\n";
    return false;
  }
  if (name == ":type")
    return expression(stripSemicolon(rest), true);
  if (name == ":simplify")
    return simplify(stripSemicolon(rest));
  if (name == ":prove")
    return prove(stripSemicolon(rest));
  if (name == ":guards")
    return guards(rest);
  if (name == ":ir")
    return ir(rest);
  if (name == ":load")
    return load(rest);
  if (name == ":run")
    return run(rest);
  err_ << "<input>: error: unknown command '" << name << "' (see :help)\n";
  return false;
}

} // namespace tsl
