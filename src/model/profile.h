// Time per op kind, accumulated over a run (`--profile`). Filled only when a Profile is passed.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "base/timer.h"

namespace lazyllm {

enum class OpKind {
    kEmbed, kRmsNorm, kQkv, kRope, kKvWrite, kAttention, kAttnOut, kGateUp, kSwiglu, kDown,
    kScore, kLmHead, kPrune, kCount
};

inline std::string_view op_kind_name(OpKind k) {
    constexpr std::array<std::string_view, static_cast<size_t>(OpKind::kCount)> names = {
        "embed", "rms_norm", "qkv_gemm", "rope", "kv_write", "attention", "attn_out_gemm",
        "gate_up_gemm", "swiglu", "down_gemm", "prune_score", "lm_head", "prune_select"};
    return names[static_cast<size_t>(k)];
}

struct Profile {
    std::array<int64_t, static_cast<size_t>(OpKind::kCount)> ns{};
    std::array<double, static_cast<size_t>(OpKind::kCount)> flops{};
    std::array<int64_t, static_cast<size_t>(OpKind::kCount)> calls{};  // timed sections
    void add(OpKind k, int64_t dt_ns, double fl = 0.0) {
        ns[static_cast<size_t>(k)] += dt_ns;
        flops[static_cast<size_t>(k)] += fl;
        ++calls[static_cast<size_t>(k)];
    }
    void merge(const Profile& o) {
        for (size_t i = 0; i < ns.size(); ++i) {
            ns[i] += o.ns[i];
            flops[i] += o.flops[i];
            calls[i] += o.calls[i];
        }
    }
};

// Times a scope into a Profile when one is given.
class OpTimer {
public:
    OpTimer(Profile* prof, OpKind kind, double flops = 0.0)
        : prof_(prof), kind_(kind), flops_(flops), t0_(prof ? now_ns() : 0) {}
    ~OpTimer() {
        if (prof_) prof_->add(kind_, now_ns() - t0_, flops_);
    }

private:
    Profile* prof_;
    OpKind kind_;
    double flops_;
    int64_t t0_;
};

}  // namespace lazyllm
