#include "tools/driver/Driver.h"

#include "ir/TensorIO.h"
#include "ir/Verifier.h"

#include <cmath>
#include <random>

namespace tsl {

static bool parseInt64(const std::string &s, int64_t &out) {
  if (s.empty())
    return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size())
    return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i])))
      return false;
    if (v > (uint64_t(INT64_MAX) - (s[i] - '0')) / 10)
      return false;
    v = v * 10 + (s[i] - '0');
  }
  out = s[0] == '-' ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

bool initTensor(Tensor &t, const std::string &init, uint64_t seed,
                std::string &error) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  bool fl = isFloat(t.dtype());
  for (size_t i = 0; i < t.numel(); ++i) {
    if (init == "zeros") {
      t.setI(i, 0);
    } else if (init == "ones") {
      t.setI(i, 1);
    } else if (init == "arange") {
      t.setI(i, static_cast<int64_t>(i));
    } else if (init == "rand") {
      if (fl)
        t.setF(i, uniform(rng));
      else if (t.dtype() == DType::Bool)
        t.setI(i, uniform(rng) < 0.5);
      else
        t.setI(i, static_cast<int64_t>(uniform(rng) * 10));
    } else if (init == "randn") {
      if (fl)
        t.setF(i, normal(rng));
      else if (t.dtype() == DType::Bool)
        t.setI(i, uniform(rng) < 0.5);
      else
        t.setI(i, static_cast<int64_t>(std::floor(uniform(rng) * 10)) - 5);
    } else {
      error = "unknown initializer '" + init +
              "' (use rand, randn, zeros, ones or arange)";
      return false;
    }
  }
  return true;
}

bool parseArgSpec(const std::string &text, bool withData, ArgSpec &out,
                  std::string &error) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    error = "expected NAME=VALUE, got '" + text + "'";
    return false;
  }
  out.name = text.substr(0, eq);
  std::string value = text.substr(eq + 1);
  if (parseInt64(value, out.intValue)) {
    out.isInt = true;
    return true;
  }
  if (value.size() > 4 && value.compare(value.size() - 4, 4, ".npy") == 0) {
    if (!readNpy(value, out.tensor, error))
      return false;
    out.hasData = true;
    out.dtype = out.tensor.dtype();
    out.shape = out.tensor.shape();
    return true;
  }
  // TYPE[:INIT[:SEED]]
  size_t bracket = value.find('[');
  size_t close = value.find(']');
  if (bracket == std::string::npos || close == std::string::npos ||
      close < bracket) {
    error =
        "argument '" + out.name +
        "': expected an integer, a .npy file or a type like f32[4,8], got '" +
        value + "'";
    return false;
  }
  auto dt = parseDType(value.substr(0, bracket));
  if (!dt) {
    error = "argument '" + out.name + "': unknown element type '" +
            value.substr(0, bracket) + "'";
    return false;
  }
  out.dtype = *dt;
  std::string dims = value.substr(bracket + 1, close - bracket - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    if (comma == std::string::npos)
      comma = dims.size();
    std::string d = dims.substr(pos, comma - pos);
    while (!d.empty() && d.front() == ' ')
      d.erase(d.begin());
    while (!d.empty() && d.back() == ' ')
      d.pop_back();
    int64_t v;
    if (!parseInt64(d, v) || v < 0 || v > (int64_t(1) << 40)) {
      error = "argument '" + out.name + "': bad size '" + d + "' in " + value;
      return false;
    }
    out.shape.push_back(v);
    pos = comma + 1;
  }
  std::string rest = value.substr(close + 1);
  std::string init = "randn";
  uint64_t seed = 0;
  if (!rest.empty()) {
    if (rest[0] != ':') {
      error = "argument '" + out.name + "': unexpected '" + rest +
              "' after the type";
      return false;
    }
    rest = rest.substr(1);
    size_t colon = rest.find(':');
    init = rest.substr(0, colon);
    if (colon != std::string::npos) {
      int64_t s;
      if (!parseInt64(rest.substr(colon + 1), s) || s < 0) {
        error = "argument '" + out.name + "': bad seed '" +
                rest.substr(colon + 1) + "'";
        return false;
      }
      seed = static_cast<uint64_t>(s);
    }
  }
  if (!withData)
    return true;
  out.tensor = Tensor::zeros(out.dtype, out.shape);
  if (!out.tensor.valid()) {
    error = "argument '" + out.name + "': tensor " + value + " is too large";
    return false;
  }
  if (!initTensor(out.tensor, init, seed, error)) {
    error = "argument '" + out.name + "': " + error;
    return false;
  }
  out.hasData = true;
  return true;
}

void reportRunError(const RunError &error, SourceManager &sm,
                    DiagnosticEngine &diags) {
  Diagnostic d;
  d.message = error.message;
  if (error.loc.isValid()) {
    uint32_t file = sm.findFile(error.loc.file);
    if (file) {
      std::string_view text = sm.text(file);
      size_t offset = 0;
      unsigned line = 1;
      while (line < error.loc.line && offset < text.size()) {
        if (text[offset] == '\n')
          ++line;
        ++offset;
      }
      offset += error.loc.col - 1;
      d.range = SourceRange(sm.locAt(file, offset),
                            sm.locAt(file, offset + error.loc.length));
    } else {
      d.message = error.loc.str() + ": " + d.message;
    }
  }
  for (const std::string &n : error.notes)
    d.notes.push_back({SourceRange(), n});
  diags.report(std::move(d));
}

bool compileForArgs(ModuleLoader &loader, const std::string &path,
                    const std::string &fnName, const std::vector<ArgSpec> &args,
                    DiagnosticEngine &diags, Function &out, bool allDynamic,
                    const PipelineOptions &pipeline,
                    const std::set<std::string> &donated) {
  const LoadedModule *module = loader.load(path);
  if (!module)
    return false;
  ElaborateOptions options;
  options.allDynamic = allDynamic;
  options.donated = donated;
  options.pipeline = pipeline;
  options.examples.emplace();
  for (const ArgSpec &a : args) {
    ExampleArg ex;
    ex.isInt = a.isInt;
    ex.intValue = a.intValue;
    ex.dtype = a.dtype;
    ex.shape = a.shape;
    if (!options.examples->emplace(a.name, ex).second) {
      diags.error(SourceRange(), "argument '" + a.name + "' is given twice");
      return false;
    }
  }
  if (!elaborateFunction(*module, fnName, options, diags, out))
    return false;
  if (Expected<void> verified = verifyFunction(out); !verified) {
    diags.error(ErrorKind::Internal, SourceRange(),
                "internal error: the IR of '" + fnName +
                    "' does not verify: " + verified.error().message);
    return false;
  }
  return true;
}

bool orderArgs(const Function &fn, const std::vector<ArgSpec> &args,
               std::vector<ArgValue> &out, std::string &error) {
  out.clear();
  for (const Param &p : fn.params) {
    const ArgSpec *spec = nullptr;
    for (const ArgSpec &a : args)
      if (a.name == p.name)
        spec = &a;
    if (!spec) {
      error = "missing argument '" + p.name + "'";
      return false;
    }
    ArgValue v;
    v.isInt = spec->isInt;
    v.intValue = spec->intValue;
    v.tensor = spec->tensor;
    out.push_back(v);
  }
  return true;
}

std::string formatGuardReport(const Function &fn, bool json) {
  std::vector<Check> assertions;
  for (const Operation &op : fn.ops)
    if (op.code == OpCode::Assert)
      assertions.push_back(
          {op.condAttr("cond"), op.loc, "check", op.strAttr("message")});
  auto quoted = [](const std::string &s) {
    return "\"" + jsonEscape(s) + "\"";
  };
  std::string out;
  if (json) {
    auto list = [&](const std::vector<Check> &checks) {
      std::string s = "[";
      for (size_t i = 0; i < checks.size(); ++i)
        s += std::string(i ? ", " : "") +
             "{\"expr\": " + quoted(checks[i].cond.str()) +
             ", \"origin\": " + quoted(checks[i].loc.str()) +
             ", \"reason\": " + quoted(checks[i].reason) + "}";
      return s + "]";
    };
    std::string results = "[";
    for (size_t i = 0; i < fn.results.size(); ++i)
      results +=
          std::string(i ? ", " : "") + quoted(fn.type(fn.results[i]).str());
    results += "]";
    return "{\"function\": " + quoted(fn.name) +
           ", \"guards\": " + list(fn.guards) +
           ", \"assertions\": " + list(assertions) +
           ", \"results\": " + results + "}\n";
  }
  out += "function " + fn.name + "\n";
  out += std::string("guards:") + (fn.guards.empty() ? " none" : "") + "\n";
  for (const Check &g : fn.guards)
    out +=
        "  " + g.cond.str() + "    (" + g.loc.str() + ", " + g.reason + ")\n";
  out +=
      std::string("assertions:") + (assertions.empty() ? " none" : "") + "\n";
  for (const Check &a : assertions)
    out += "  " + a.cond.str() + "    (" + a.loc.str() +
           (a.reason.empty() ? "" : ", " + a.reason) + ")\n";
  out += "results:";
  for (size_t i = 0; i < fn.results.size(); ++i)
    out += (i ? ", " : " ") + fn.type(fn.results[i]).str();
  return out + "\n";
}

std::string formatResults(const std::vector<Tensor> &outputs) {
  std::string out;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs.size() > 1)
      out += "result " + std::to_string(i) + ": ";
    out += outputs[i].typeString() + "\n" + formatTensor(outputs[i]) + "\n";
  }
  return out;
}

} // namespace tsl
