#include "ir/TensorIO.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tsl {

static const char *npyDescr(DType t) {
  switch (t) {
  case DType::Bool:
    return "|b1";
  case DType::I8:
    return "|i1";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "<u2";
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  }
  return "";
}

static std::optional<DType> dtypeOfDescr(const std::string &d) {
  static const std::pair<const char *, DType> table[] = {
      {"|b1", DType::Bool}, {"<b1", DType::Bool}, {"|i1", DType::I8},
      {"<i1", DType::I8},   {"<i4", DType::I32},  {"<i8", DType::I64},
      {"<f2", DType::F16},  {"<u2", DType::BF16}, {"<f4", DType::F32},
      {"<f8", DType::F64}};
  for (auto &[n, t] : table)
    if (d == n)
      return t;
  return std::nullopt;
}

/// Finds `'key': value` in the header dict and returns the raw value text.
static bool headerValue(const std::string &header, const std::string &key,
                        std::string &out) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    return false;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos)
    return false;
  size_t start = colon + 1;
  while (start < header.size() && header[start] == ' ')
    ++start;
  size_t end = start;
  if (start < header.size() && header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos)
      return false;
    ++end;
  } else if (start < header.size() && header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end == std::string::npos)
      return false;
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}')
      ++end;
  }
  out = header.substr(start, end - start);
  return true;
}

bool parseNpy(const std::string &bytes, Tensor &out, std::string &error) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    error = "not a .npy file (bad magic)";
    return false;
  }
  int major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      error = "truncated .npy header";
      return false;
    }
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i]))
                   << (8 * i);
    offset = 12;
  } else {
    error = "unsupported .npy version " + std::to_string(major);
    return false;
  }
  if (bytes.size() < offset + headerLen) {
    error = "truncated .npy header";
    return false;
  }
  std::string header = bytes.substr(offset, headerLen);
  std::string descr, fortran, shape;
  if (!headerValue(header, "descr", descr) ||
      !headerValue(header, "fortran_order", fortran) ||
      !headerValue(header, "shape", shape)) {
    error = "malformed .npy header: " + header;
    return false;
  }
  if (descr.size() >= 2)
    descr = descr.substr(1, descr.size() - 2);
  auto dtype = dtypeOfDescr(descr);
  if (!dtype) {
    error = "not supported: .npy element type '" + descr +
            "' (expected one of |b1 |i1 <i4 <i8 <f2 <u2(bf16) <f4 <f8)";
    return false;
  }
  if (fortran.find("True") != std::string::npos) {
    error =
        "not supported: Fortran-ordered .npy (save with np.ascontiguousarray)";
    return false;
  }
  std::vector<int64_t> dims;
  size_t p = 1;
  while (p < shape.size()) {
    while (p < shape.size() && (shape[p] == ' ' || shape[p] == ','))
      ++p;
    if (p >= shape.size() || shape[p] == ')')
      break;
    int64_t v = 0;
    bool any = false;
    while (p < shape.size() &&
           std::isdigit(static_cast<unsigned char>(shape[p]))) {
      if (v > (int64_t(1) << 40)) {
        error = "malformed .npy shape " + shape;
        return false;
      }
      v = v * 10 + (shape[p] - '0');
      ++p;
      any = true;
    }
    if (!any) {
      error = "malformed .npy shape " + shape;
      return false;
    }
    dims.push_back(v);
    if (p < shape.size() && shape[p] == 'L')
      ++p;
  }
  Tensor t = Tensor::zeros(*dtype, dims);
  if (!t.valid()) {
    error = ".npy tensor of shape " + shape + " is too large";
    return false;
  }
  size_t dataStart = offset + headerLen;
  if (bytes.size() - dataStart < t.byteSize()) {
    error = "truncated .npy data: expected " + std::to_string(t.byteSize()) +
            " bytes, found " + std::to_string(bytes.size() - dataStart);
    return false;
  }
  if (t.byteSize())
    std::memcpy(t.raw(), bytes.data() + dataStart, t.byteSize());
  out = t;
  return true;
}

bool readNpy(const std::string &path, Tensor &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (!parseNpy(buf.str(), out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

bool writeNpy(const std::string &path, const Tensor &t, std::string &error) {
  std::string header = "{'descr': '";
  header += npyDescr(t.dtype());
  header += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.rank(); ++i)
    header += std::to_string(t.shape()[i]) +
              (t.rank() == 1 || i + 1 < t.rank() ? "," : "") +
              (i + 1 < t.rank() ? " " : "");
  header += "), }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream outFile(path, std::ios::binary);
  if (!outFile) {
    error = "cannot write '" + path + "'";
    return false;
  }
  outFile.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(header.size() & 0xff),
                 static_cast<char>(header.size() >> 8)};
  outFile.write(len, 2);
  outFile.write(header.data(), header.size());
  if (t.byteSize())
    outFile.write(reinterpret_cast<const char *>(t.raw()), t.byteSize());
  if (!outFile) {
    error = "failed writing '" + path + "'";
    return false;
  }
  return true;
}

namespace {

struct Formatter {
  const Tensor &t;
  bool summarize;
  std::vector<std::string> cells; // formatted elements by flat index
  size_t width = 0;

  explicit Formatter(const Tensor &t) : t(t), summarize(t.numel() > 1000) {}

  bool shown(size_t flat) const {
    if (!summarize)
      return true;
    size_t rem = flat;
    for (size_t a = t.rank(); a-- > 0;) {
      size_t n = static_cast<size_t>(t.shape()[a]);
      size_t i = rem % n;
      rem /= n;
      if (n > 6 && i >= 3 && i < n - 3)
        return false;
    }
    return true;
  }

  void formatAll() {
    cells.assign(t.numel(), "");
    DType d = t.dtype();
    if (d == DType::Bool) {
      for (size_t i = 0; i < t.numel(); ++i)
        if (shown(i))
          cells[i] = t.getI(i) ? "True" : "False";
      width = 5;
      return;
    }
    if (!isFloat(d)) {
      for (size_t i = 0; i < t.numel(); ++i)
        if (shown(i)) {
          cells[i] = std::to_string(t.getI(i));
          width = std::max(width, cells[i].size());
        }
      return;
    }
    double maxAbs = 0, minAbs = INFINITY;
    for (size_t i = 0; i < t.numel(); ++i) {
      if (!shown(i))
        continue;
      double v = std::fabs(t.getF(i));
      if (std::isfinite(v) && v != 0) {
        maxAbs = std::max(maxAbs, v);
        minAbs = std::min(minAbs, v);
      }
    }
    // NumPy's rule for switching to scientific notation.
    bool sci = minAbs != INFINITY &&
               (maxAbs >= 1e8 || minAbs < 1e-4 || maxAbs / minAbs > 1e3);
    int precision = d == DType::F64 ? 8 : 8;
    std::vector<std::string> intPart(t.numel()), fracPart(t.numel());
    size_t wi = 0, wf = 0;
    char buf[64];
    for (size_t i = 0; i < t.numel(); ++i) {
      if (!shown(i))
        continue;
      double v = t.getF(i);
      if (std::isnan(v)) {
        intPart[i] = "nan";
      } else if (std::isinf(v)) {
        intPart[i] = v > 0 ? "inf" : "-inf";
      } else if (sci) {
        std::snprintf(buf, sizeof buf, "%.*e", precision, v);
        std::string s = buf;
        size_t e = s.find('e');
        std::string mant = s.substr(0, e), ex = s.substr(e);
        while (mant.size() > 1 && mant.back() == '0')
          mant.pop_back();
        size_t dot = mant.find('.');
        intPart[i] = mant.substr(0, dot);
        fracPart[i] = mant.substr(dot + 1) + ex;
      } else {
        std::snprintf(buf, sizeof buf, "%.*f", precision, v);
        std::string s = buf;
        while (!s.empty() && s.back() == '0')
          s.pop_back();
        size_t dot = s.find('.');
        intPart[i] = s.substr(0, dot);
        fracPart[i] = s.substr(dot + 1);
        if (intPart[i] == "-0" && fracPart[i].empty())
          intPart[i] = "-0";
      }
      wi = std::max(wi, intPart[i].size());
      wf = std::max(wf, fracPart[i].size());
    }
    for (size_t i = 0; i < t.numel(); ++i) {
      if (!shown(i))
        continue;
      std::string s =
          std::string(wi - std::min(wi, intPart[i].size()), ' ') + intPart[i];
      bool special =
          intPart[i] == "nan" || intPart[i] == "inf" || intPart[i] == "-inf";
      if (special)
        s += std::string(wf + 1, ' ');
      else
        s += "." + fracPart[i] + std::string(wf - fracPart[i].size(), ' ');
      cells[i] = s;
      width = std::max(width, s.size());
    }
  }

  /// Length of the current (last) line of \p out.
  static size_t column(const std::string &out) {
    size_t nl = out.rfind('\n');
    return nl == std::string::npos ? out.size() : out.size() - nl - 1;
  }

  void emit(std::string &out, size_t axis, size_t base, size_t indent) {
    out += "[";
    size_t n = static_cast<size_t>(t.shape()[axis]);
    size_t stride = 1;
    for (size_t a = axis + 1; a < t.rank(); ++a)
      stride *= static_cast<size_t>(t.shape()[a]);
    bool last = axis + 1 == t.rank();
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
      if (summarize && n > 6 && i == 3) {
        out += last ? " ..." : "\n" + std::string(indent + 1, ' ') + "...";
        i = n - 4;
        continue;
      }
      if (!first) {
        if (last && column(out) + 1 + width + 1 > 75)
          out += "\n" + std::string(indent + 1, ' ');
        else if (last)
          out += " ";
        else
          out += std::string(t.rank() - axis - 1, '\n') +
                 std::string(indent + 1, ' ');
      }
      first = false;
      if (last) {
        const std::string &c = cells[base + i];
        out += std::string(width - std::min(width, c.size()), ' ') + c;
      } else {
        emit(out, axis + 1, base + i * stride, indent + 1);
      }
    }
    out += "]";
  }
};

} // namespace

std::string formatTensor(const Tensor &t) {
  Formatter f(t);
  f.formatAll();
  if (t.rank() == 0)
    return f.cells.empty()
               ? ""
               : f.cells[0].substr(f.cells[0].find_first_not_of(' '));
  std::string out;
  f.emit(out, 0, 0, 0);
  return out;
}

} // namespace tsl
