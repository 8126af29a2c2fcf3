#include "support/DeepStack.h"

#include <pthread.h>

namespace tsl {

namespace {
void *runWork(void *arg) {
  (*static_cast<const std::function<void()> *>(arg))();
  return nullptr;
}
} // namespace

void runOnDeepStack(const std::function<void()> &work) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) {
    work();
    return;
  }
  pthread_t thread;
  bool started =
      pthread_attr_setstacksize(&attr, kDeepStackBytes) == 0 &&
      pthread_create(&thread, &attr, runWork,
                     const_cast<std::function<void()> *>(&work)) == 0;
  pthread_attr_destroy(&attr);
  if (!started) {
    work();
    return;
  }
  pthread_join(thread, nullptr);
}

} // namespace tsl
