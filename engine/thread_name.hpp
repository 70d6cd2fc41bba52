// Names the calling thread, so profiles (perf), /proc/PID/task/*/comm and
// debuggers tell the engine's threads apart. Linux keeps at most 15
// characters; a longer name is cut to fit.
#pragma once

#include <pthread.h>

#include <string>
#include <thread>

namespace reprise::engine {

inline void name_this_thread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

// From the thread that started `thread`: the name is set before this returns.
inline void name_thread(std::thread& thread, const std::string& name) {
  pthread_setname_np(thread.native_handle(), name.substr(0, 15).c_str());
}

}  // namespace reprise::engine
