#pragma once
/// \file The LLVM types of the runtime functions generated code calls,
/// derived from their C declarations (runtime/KernelEntryPoints.def, declared
/// by runtime/KernelAbi.h), so no call site spells a signature: a call reads
///   b.CreateCall(runtime(TSL_RT_FN(tsl_rt_conv2d)), {args...});
/// For the backend's .cpp files that call the runtime (it includes LLVM);
/// Emitter.h and Codegen.h do not include it.

#include "backend/common/Target.h"
#include "runtime/KernelAbi.h"

#include <llvm/IR/DerivedTypes.h>

#include <cstdint>
#include <vector>

namespace tsl::backend::rtcalls {

template <typename T> inline constexpr bool kNoLlvmType = false;

/// The LLVM type of C type \p T as a runtime function's parameter or
/// result: int32_t i32, int64_t i64, float, double, void, and any pointer
/// (data, const, function) `ptr`. Any other type does not compile: add it
/// here, with the type the C ABI passes it as.
template <typename T> struct LlvmTypeOf {
  static_assert(kNoLlvmType<T>,
                "a runtime function's C type with no LLVM type: add one");
};
template <> struct LlvmTypeOf<void> {
  static llvm::Type *get(llvm::LLVMContext &c) {
    return llvm::Type::getVoidTy(c);
  }
};
template <> struct LlvmTypeOf<int32_t> {
  static llvm::Type *get(llvm::LLVMContext &c) {
    return llvm::Type::getInt32Ty(c);
  }
};
template <> struct LlvmTypeOf<int64_t> {
  static llvm::Type *get(llvm::LLVMContext &c) {
    return llvm::Type::getInt64Ty(c);
  }
};
template <> struct LlvmTypeOf<float> {
  static llvm::Type *get(llvm::LLVMContext &c) {
    return llvm::Type::getFloatTy(c);
  }
};
template <> struct LlvmTypeOf<double> {
  static llvm::Type *get(llvm::LLVMContext &c) {
    return llvm::Type::getDoubleTy(c);
  }
};
template <typename T> struct LlvmTypeOf<T *> {
  static llvm::Type *get(llvm::LLVMContext &c) {
    return llvm::PointerType::getUnqual(c);
  }
};

/// The LLVM function type of C function type \p F (not variadic).
template <typename F> struct FunctionTypeOf {
  static_assert(kNoLlvmType<F>, "not a function type");
};
template <typename R, typename... Args> struct FunctionTypeOf<R(Args...)> {
  static llvm::FunctionType *get(llvm::LLVMContext &c) {
    std::vector<llvm::Type *> params{LlvmTypeOf<Args>::get(c)...};
    return llvm::FunctionType::get(LlvmTypeOf<R>::get(c), params, false);
  }
};

} // namespace tsl::backend::rtcalls

/// The runtime function \p Name (declared in runtime/KernelAbi.h) as a
/// tsl::RuntimeFn: its name and LLVM type both from its declaration.
#define TSL_RT_FN(Name)                                                        \
  (::tsl::RuntimeFn{                                                           \
      #Name, &::tsl::backend::rtcalls::FunctionTypeOf<decltype(::Name)>::get})
