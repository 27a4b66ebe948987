#pragma once
// The one interface through which a front end (the Qt window, the headless status printer,
// tests) drives a peer. The real implementation is the swarm peer (core/peer/SwarmPeer.h);
// tests of the UI may implement it with a fake.
//
// Threads: every method may be called from any thread and returns quickly (it never waits for
// a training step, a round or the network), except stop(), which joins the worker and returns
// within the round timeouts. The worker thread runs compute and networking.
#include "face/PeerStatus.h"

#include <string>
#include <vector>

namespace dedloc {

// Resource caps the volunteer sets in Settings (docs/USER_GUIDE.md). 0 means "no cap" / "the manifest's value".
struct ResourceCaps {
    int cpuThreads = 0;                  // torch intra-op threads
    double gpuMemoryFraction = 0.0;      // (0, 1]: share of accelerator memory the trainer may use
    int microBatchSize = 0;              // samples per forward/backward; <= manifest's value
    double uploadBytesPerSecond = 0.0;   // data plane token bucket
    double downloadBytesPerSecond = 0.0;
    // Share of the time a trainer computes, for heat and noise: after a micro-batch of t seconds
    // it rests t * (1 - share) / share (throttleRestSeconds). 1 (or 0): no cap; at least
    // MinComputeShare.
    double computeShare = 1.0;
    // The GPUs the trainer computes on, by index (GpuSample::index: NVML's order, which is the
    // PCI bus order; the trainer has CUDA number devices the same way). Empty: the CPU only.
    // Several: each micro-batch is split evenly among them and their gradients summed on the
    // first. An index CUDA does not see is skipped with a warning; none left, or a build
    // without CUDA: the CPU. A change takes effect at the next micro-batch.
    std::vector<int> gpus = {0};
};

inline constexpr double MinComputeShare = 0.1;

// The rest after a micro-batch of `computeSeconds` that keeps computing at `share` of the time.
[[nodiscard]] inline double throttleRestSeconds(double computeSeconds, double share)
{
    if (!(share > 0.0) || share >= 1.0 || !(computeSeconds > 0.0))
        return 0.0;
    const double s = share < MinComputeShare ? MinComputeShare : share;
    return computeSeconds * (1.0 - s) / s;
}

class PeerControl {
public:
    virtual ~PeerControl() = default;

    // Joins the swarm in the background (Idle -> Connecting -> Syncing/Training).
    virtual void start() = 0;
    // Stops compute within about 2 s (after the current micro-batch), leaves or finishes the
    // current round cleanly, releases accelerator memory and reports itself as paused so the
    // swarm stops counting its samples. `reason` is shown in the snapshot ("paused by you",
    // "a game is using the GPU", ...). Pausing twice keeps the newer reason.
    virtual void pause(const std::string &reason) = 0;
    // Resumes; resynchronises state first when the swarm moved on.
    virtual void resume() = 0;
    // Leaves the swarm and joins the worker thread. Idempotent.
    virtual void stop() = 0;
    virtual void setCaps(const ResourceCaps &caps) = 0;
    [[nodiscard]] virtual PeerSnapshot snapshot() const = 0;
};

} // namespace dedloc
