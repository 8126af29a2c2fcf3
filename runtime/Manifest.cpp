#include "runtime/Manifest.h"
#include "runtime/KernelAbi.h"
#include "runtime/Sha256.h"

#include <sstream>

namespace tsl::rt {

namespace {

/// Strings are written with \t, \n and \\ escaped so one record is one line.
std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string unescape(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      out += c == 't' ? '\t' : c == 'n' ? '\n' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> fields(const std::string &line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == '\t') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool toInt(const std::string &s, int64_t &v) {
  if (s.empty())
    return false;
  char *end = nullptr;
  v = std::strtoll(s.c_str(), &end, 10);
  return end && *end == 0;
}

} // namespace

std::string manifestHeader() {
  return std::string(kManifestVersion) + " slots " +
         std::to_string(TSL_RT_NUM_SLOTS);
}

std::string writeManifest(const std::vector<ManifestVariant> &variants) {
  std::ostringstream os;
  os << manifestHeader() << "\n";
  for (const ManifestVariant &m : variants) {
    const VariantCode &v = m.code;
    os << "variant\t" << escape(m.function) << "\t" << m.kernelSymbol << "\t"
       << m.matchSymbol << "\t" << m.shapesSymbol << "\t" << v.numValues << "\t"
       << v.numSymbols << "\n";
    for (const ParamInfo &p : v.params) {
      os << "param\t" << escape(p.name) << "\t" << p.isInt << "\t" << p.dtype
         << "\t" << p.rank << "\t" << p.value;
      for (const std::string &a : p.axisNames)
        os << "\t" << escape(a);
      os << "\n";
    }
    for (const ResultInfo &r : v.results)
      os << "result\t" << r.dtype << "\t" << r.rank << "\t" << r.value << "\n";
    for (const std::string &c : v.checks)
      os << "check\t" << escape(c) << "\n";
    for (const OpInfoRt &o : v.ops)
      os << "op\t" << escape(o.location) << "\t" << escape(o.what) << "\n";
    for (const auto &[name, value] : v.specialized)
      os << "specialized\t" << escape(name) << "\t" << value << "\n";
    os << "end\n";
  }
  return os.str();
}

bool readManifest(const std::string &text, std::vector<ManifestVariant> &out,
                  std::string &error) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != manifestHeader()) {
    error = "not a TSL module manifest of this version (expected '" +
            manifestHeader() + "', found '" + line.substr(0, 40) +
            "'): rebuild it with this version's 'tslc build'";
    return false;
  }
  ManifestVariant *cur = nullptr;
  int lineNo = 1;
  while (std::getline(in, line)) {
    ++lineNo;
    std::vector<std::string> f = fields(line);
    auto bad = [&]() {
      error = "malformed manifest line " + std::to_string(lineNo);
      return false;
    };
    int64_t a, b, c, d;
    if (f[0] == "variant") {
      if (f.size() != 7 || !toInt(f[5], a) || !toInt(f[6], b) || a < 0 || b < 0)
        return bad();
      out.emplace_back();
      cur = &out.back();
      cur->function = unescape(f[1]);
      cur->kernelSymbol = f[2];
      cur->matchSymbol = f[3];
      cur->shapesSymbol = f[4];
      cur->code.numValues = static_cast<size_t>(a);
      cur->code.numSymbols = static_cast<size_t>(b);
    } else if (!cur) {
      return bad();
    } else if (f[0] == "param") {
      if (f.size() < 6 || !toInt(f[2], a) || !toInt(f[3], b) ||
          !toInt(f[4], c) || !toInt(f[5], d) || b < 0 || b > 7 || c < 0 ||
          c > 64 || d < -1 || d >= static_cast<int64_t>(cur->code.numValues))
        return bad();
      ParamInfo p;
      p.name = unescape(f[1]);
      p.isInt = a != 0;
      p.dtype = static_cast<int32_t>(b);
      p.rank = static_cast<int32_t>(c);
      p.value = static_cast<int32_t>(d);
      for (size_t i = 6; i < f.size(); ++i)
        p.axisNames.push_back(unescape(f[i]));
      cur->code.params.push_back(p);
    } else if (f[0] == "result") {
      if (f.size() != 4 || !toInt(f[1], a) || !toInt(f[2], b) ||
          !toInt(f[3], c) || a < 0 || a > 7 || b < 0 || b > 64 || c < 0 ||
          c >= static_cast<int64_t>(cur->code.numValues))
        return bad();
      cur->code.results.push_back({static_cast<int32_t>(a),
                                   static_cast<int32_t>(b),
                                   static_cast<int32_t>(c)});
    } else if (f[0] == "check" && f.size() == 2) {
      cur->code.checks.push_back(unescape(f[1]));
    } else if (f[0] == "op" && f.size() == 3) {
      cur->code.ops.push_back({unescape(f[1]), unescape(f[2])});
    } else if (f[0] == "specialized" && f.size() == 3 && toInt(f[2], a)) {
      cur->code.specialized[unescape(f[1])] = a;
    } else if (f[0] == "end") {
      cur = nullptr;
    } else {
      return bad();
    }
  }
  if (cur) {
    error = "truncated manifest";
    return false;
  }
  return true;
}

namespace {
constexpr const char *kDigestVersion = "tsl-module-digest 1";
}

std::string writeModuleDigest(const std::string &contents) {
  return std::string(kDigestVersion) + "\nsize " +
         std::to_string(contents.size()) + "\nsha256 " + sha256Hex(contents) +
         "\n";
}

bool checkModuleDigest(const std::string &contents,
                       const std::string &digestText, std::string &problem) {
  std::istringstream in(digestText);
  std::string version, sizeWord, shaWord, sha, rest;
  int64_t size = -1;
  std::getline(in, version);
  if (version != kDigestVersion ||
      !(in >> sizeWord >> size >> shaWord >> sha) || sizeWord != "size" ||
      shaWord != "sha256" || size < 0 || sha.size() != 64 || (in >> rest)) {
    problem = "malformed digest file (expected '" +
              std::string(kDigestVersion) + "', size and sha256 lines)";
    return false;
  }
  if (static_cast<uint64_t>(size) != contents.size()) {
    problem = "the file has " + std::to_string(contents.size()) +
              " bytes, its digest file says " + std::to_string(size) +
              " (truncated or corrupt)";
    return false;
  }
  if (sha256Hex(contents) != sha) {
    problem = "its SHA-256 differs from its digest file's (corrupt)";
    return false;
  }
  return true;
}

} // namespace tsl::rt
