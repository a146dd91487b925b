#pragma once

#include <atomic>
#include <memory>
#include <utility>

namespace avatar_bridge {

// A shared_ptr that one thread can replace while others read it, without a mutex the game thread could
// wait on. C++20 has std::atomic<std::shared_ptr>; C++17 only the free std::atomic_load/store functions,
// which C++20 deprecates (MSVC warns when Unreal builds as C++20), so pick whichever the library has.
template <typename T>
class AtomicSharedPtr {
public:
    std::shared_ptr<T> load() const {
#if defined(__cpp_lib_atomic_shared_ptr)
        return ptr_.load();
#else
        return std::atomic_load(&ptr_);
#endif
    }

    void store(std::shared_ptr<T> next) {
#if defined(__cpp_lib_atomic_shared_ptr)
        ptr_.store(std::move(next));
#else
        std::atomic_store(&ptr_, std::move(next));
#endif
    }

private:
#if defined(__cpp_lib_atomic_shared_ptr)
    std::atomic<std::shared_ptr<T>> ptr_;
#else
    std::shared_ptr<T> ptr_;
#endif
};

}  // namespace avatar_bridge
