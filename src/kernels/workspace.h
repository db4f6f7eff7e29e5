// The kernels' scratch memory, owned by whoever runs them (a session's ForwardScratch, a
// benchmark, a test) and passed in: KernelContext::ws for attention, a Workspace& argument for
// the linear layers. Grow-only, so that steady-state calls (every layer of every step)
// allocate nothing; owned per caller, so that no kernel keeps thread_local state and callers
// on different threads (server slots) never share a buffer.
//
// A part is any default-constructible type a kernel defines for itself (its .cpp keeps the
// type private), one per type: caller<T>() for the calling thread's, worker<T>(i) for worker i
// of a parallel region, after workers(n) from the calling thread.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace lazyllm::kernels {

class Workspace {
public:
    Workspace() = default;
    Workspace(const Workspace&) = delete;
    Workspace& operator=(const Workspace&) = delete;
    Workspace(Workspace&&) noexcept = default;
    Workspace& operator=(Workspace&&) noexcept = default;

    template <typename T>
    T& caller() {
        return parts_.get<T>();
    }
    // Makes room for n workers' parts; call before the parallel region, from the caller.
    void workers(int n) {
        if (static_cast<int>(workers_.size()) < n) workers_.resize(static_cast<size_t>(n));
    }
    // Worker i's part (i < the last workers(n)); only worker i may call this for its i.
    template <typename T>
    T& worker(int i) {
        return workers_[static_cast<size_t>(i)].get<T>();
    }

private:
    // One object per type, found by a per-type key (few types: a linear search).
    class Parts {
    public:
        template <typename T>
        T& get() {
            const void* key = key_of<T>();
            for (auto& [k, p] : parts_) {
                if (k == key) return *static_cast<T*>(p.get());
            }
            parts_.emplace_back(key, Owned(new T, [](void* p) { delete static_cast<T*>(p); }));
            return *static_cast<T*>(parts_.back().second.get());
        }

    private:
        using Owned = std::unique_ptr<void, void (*)(void*)>;
        // A writable static per type: never merged with another type's (read-only constants
        // may be, under identical-data folding).
        template <typename T>
        static const void* key_of() {
            static char key;
            return &key;
        }
        std::vector<std::pair<const void*, Owned>> parts_;
    };

    Parts parts_;
    std::vector<Parts> workers_;
};

}  // namespace lazyllm::kernels
