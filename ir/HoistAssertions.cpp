#include "ir/HoistAssertions.h"
#include "ir/LoopHoisting.h"

#include <optional>

namespace tsl {

size_t hoistLoopInvariantAssertions(Function &fn, const ShapeEnv *env) {
  return hoistOutOfLoops(fn, [env](const Function &f) -> HoistRule {
    return [&f, env, first = firstMentions(f)](
               size_t i, size_t loopAt) -> std::optional<Operation> {
      const Operation &op = f.ops[i];
      if (op.code != OpCode::Assert ||
          !knownBefore(op.condAttr("cond").symbols(), loopAt, first))
        return std::nullopt;
      const Operation &loop = f.ops[loopAt];
      SymCond runs = SymCond::lt(loop.exprAttr("lo"), loop.exprAttr("hi"));
      Operation hoisted = op;
      if (!env || env->prove(runs) != Truth::True)
        hoisted.attrs["cond"] =
            SymCond::disj(SymCond::negate(runs), op.condAttr("cond"));
      return hoisted;
    };
  });
}

} // namespace tsl
