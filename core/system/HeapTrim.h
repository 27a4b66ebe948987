#pragma once
// Gives the free memory the C library's allocator holds back to the kernel (glibc's malloc_trim;
// elsewhere nothing happens).
//
// Why: a peer allocates and frees buffers of megabytes at every step on several threads (torch's
// activations and gradients, a round's parts and results, state snapshots, averaged updates).
// glibc keeps freed blocks in its arenas for reuse and returns only the free space at the top of
// the main arena; free space between live blocks stays resident. Over a long run the process's
// RSS climbs in jumps although what it uses does not (docs/DECISIONS.md "Long runs"). Mapping
// large blocks instead (a fixed M_MMAP_THRESHOLD) returns them at once, but torch would then map
// and fault its activations at every step; trimming now and then keeps the allocator's reuse and
// releases what it holds beyond that.
//
// Units: seconds (HeapTrimmer), bytes (MemoryUsage). Threads: any (glibc locks each arena in
// turn while it walks it: a trim takes time in proportion to the free memory held). Errors: none.

namespace dedloc {

// Returns to the kernel every whole free page the allocator holds, in every arena. True where it
// released something (glibc), false otherwise.
bool releaseFreeHeap();

// What the process holds, in bytes; -1 where the platform does not say.
struct MemoryUsage {
    // The kernel's resident set (/proc/self/statm: what `top` shows as RES), free blocks the
    // allocator keeps included.
    long long residentBytes = -1;
    // Allocated and not yet freed, in every arena and in mapped blocks (glibc's mallinfo2:
    // uordblks + hblkhd): without the free blocks that make RSS swing by 100-200 MB between
    // trims, but with whatever the peer holds for a while (state snapshots pinned for
    // downloaders, a round's buffers), which swings about as much in a kill soak.
    long long heapInUseBytes = -1;
};

// Reads both now. Walks the allocator's free lists with each arena locked in turn (about a
// millisecond for a trainer's heap): for now and then (a step), not for a hot loop.
MemoryUsage memoryUsage();

// Calls releaseFreeHeap() at most once per `periodSeconds` of the caller's clock (seconds, any
// origin; a steady one, or a clock set back stops the trims until it catches up): a peer's control
// loop calls due() at each turn. Threads: one caller at a time.
class HeapTrimmer final {
public:
    explicit HeapTrimmer(double periodSeconds = 30.0) : m_period(periodSeconds) {}
    // Trims when `now` is at least one period after the last trim (the first call trims); returns
    // whether it did.
    bool due(double now);

private:
    double m_period;
    double m_last = 0.0;
    bool m_trimmed = false;
};

} // namespace dedloc
