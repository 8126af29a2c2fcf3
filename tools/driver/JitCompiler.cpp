#include "tools/driver/JitCompiler.h"

#include "backend/cpu/CpuKernel.h"
#include "frontend/Elaborator.h"
#include "ir/Verifier.h"

namespace tsl {

JitCompiler::JitCompiler(std::string path)
    : path_(std::move(path)), diags_(sm_, diagnosticText_), loader_(sm_, diags_) {}

bool JitCompiler::ensureLoaded(std::string &error) {
  if (!module_)
    module_ = loader_.load(path_);
  if (!module_) {
    error = diagnosticText_.str();
    return false;
  }
  return true;
}

bool JitCompiler::check(std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ensureLoaded(error))
    return false;
  if (!checkModule(*module_, diags_)) {
    error = diagnosticText_.str();
    return false;
  }
  return true;
}

std::vector<std::string> JitCompiler::parameterNames(const std::string &function) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string error;
  std::vector<std::string> names;
  if (!ensureLoaded(error))
    return names;
  auto it = module_->fns.find(function);
  if (it != module_->fns.end())
    for (const ast::Param &p : it->second->params)
      names.push_back(p.name);
  return names;
}

bool JitCompiler::compile(const std::string &function, const std::vector<rt::CallArg> &args,
                          const std::set<std::string> &dynamicDims, bool allDynamic,
                          rt::VariantCode &out, std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ensureLoaded(error))
    return false;
  auto it = module_->fns.find(function);
  if (it == module_->fns.end()) {
    error = "no function named '" + function + "' in " + path_;
    return false;
  }
  const ast::FnDecl &decl = *it->second;
  if (args.size() != decl.params.size()) {
    error = "'" + function + "' takes " + std::to_string(decl.params.size()) + " arguments, got " +
            std::to_string(args.size());
    return false;
  }
  ElaborateOptions options;
  options.examples.emplace();
  for (size_t i = 0; i < args.size(); ++i) {
    ExampleArg ex;
    ex.isInt = args[i].isInt;
    ex.intValue = args[i].intValue;
    ex.dtype = static_cast<DType>(args[i].dtype);
    ex.shape = args[i].shape;
    (*options.examples)[decl.params[i].name] = ex;
  }
  options.forceDynamic = dynamicDims;
  options.allDynamic = allDynamic;
  diagnosticText_.str("");
  Function fn;
  if (!elaborateFunction(*module_, function, options, diags_, fn)) {
    error = diagnosticText_.str();
    while (!error.empty() && error.back() == '\n')
      error.pop_back();
    return false;
  }
  if (!verifyFunction(fn, error)) {
    error = "internal error: " + error;
    return false;
  }
  return CpuKernel::compileVariant(fn, out, error);
}

} // namespace tsl
