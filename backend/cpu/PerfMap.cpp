// The perf map writer (backend/cpu/PerfMap.h): a JITLink plugin whose
// post-fixup pass sees each linked function's final address and size.
#include "backend/cpu/PerfMap.h"
#include "backend/common/KernelOrigins.h"

#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

namespace tsl {

namespace {

/// Appends lines to /tmp/perf-PID.map; sessions link on several threads.
class PerfMapFile {
public:
  static PerfMapFile &get() {
    static PerfMapFile file;
    return file;
  }
  void write(uint64_t start, uint64_t size, llvm::StringRef name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!file_)
      return;
    std::fprintf(file_, "%llx %llx %.*s\n",
                 static_cast<unsigned long long>(start),
                 static_cast<unsigned long long>(size),
                 static_cast<int>(name.size()), name.data());
    std::fflush(file_);
  }

private:
  PerfMapFile() {
    std::string path = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
    file_ = std::fopen(path.c_str(), "a");
  }
  std::mutex mutex_;
  std::FILE *file_ = nullptr;
};

class PerfMapPlugin : public llvm::orc::ObjectLinkingLayer::Plugin {
public:
  void modifyPassConfig(llvm::orc::MaterializationResponsibility &,
                        llvm::jitlink::LinkGraph &,
                        llvm::jitlink::PassConfiguration &config) override {
    config.PostFixupPasses.push_back(
        [](llvm::jitlink::LinkGraph &g) -> llvm::Error {
          // A function's extent runs to the next named function of its
          // block: local functions the object names no symbol for (a
          // parallel loop's chunk body) count to the kernel before them.
          std::map<llvm::jitlink::Block *, std::vector<llvm::jitlink::Symbol *>>
              byBlock;
          for (llvm::jitlink::Symbol *sym : g.defined_symbols())
            if (sym->hasName() && sym->isCallable())
              byBlock[&sym->getBlock()].push_back(sym);
          for (auto &[block, syms] : byBlock) {
            std::sort(syms.begin(), syms.end(), [](auto *a, auto *b) {
              return a->getOffset() < b->getOffset();
            });
            for (size_t i = 0; i < syms.size(); ++i) {
              uint64_t end = i + 1 < syms.size() ? syms[i + 1]->getOffset()
                                                 : block->getSize();
              std::string name = syms[i]->getName().str();
              if (std::string origin = kernelOrigin(name); !origin.empty())
                name += " [" + origin + "]";
              PerfMapFile::get().write(syms[i]->getAddress().getValue(),
                                       end - syms[i]->getOffset(), name);
            }
          }
          return llvm::Error::success();
        });
  }
  llvm::Error
  notifyFailed(llvm::orc::MaterializationResponsibility &) override {
    return llvm::Error::success();
  }
  llvm::Error notifyRemovingResources(llvm::orc::JITDylib &,
                                      llvm::orc::ResourceKey) override {
    return llvm::Error::success();
  }
  void notifyTransferringResources(llvm::orc::JITDylib &,
                                   llvm::orc::ResourceKey,
                                   llvm::orc::ResourceKey) override {}
};

} // namespace

void writePerfMap(llvm::orc::LLJITBuilder &builder) {
  builder.setObjectLinkingLayerCreator(
      [](llvm::orc::ExecutionSession &session, const llvm::Triple &)
          -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
        auto layer = std::make_unique<llvm::orc::ObjectLinkingLayer>(session);
        layer->addPlugin(std::make_unique<PerfMapPlugin>());
        return std::move(layer);
      });
}

} // namespace tsl
