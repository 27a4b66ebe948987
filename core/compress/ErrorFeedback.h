#pragma once
// Error feedback for a lossy sparse codec (Seide et al. 2014, "1-bit SGD"; Stich et al. 2018,
// "Sparsified SGD with memory"; SparseLoCo, arXiv 2508.15706 section 3): what the codec did not
// send of this peer's contribution is kept here and added to the next one, so that nothing is
// lost, only delayed. Per averaging round, with e the residual (zeros at first):
//     u = x + e;   c = decode(encode(u));   e <- u - c;   x <- c
// and the round averages c. u - c is exact in fp32 for TopK4Bit (a kept element's code lies within
// a factor 2 of it, Sterbenz's lemma; a dropped one gives u itself), so c + e == u bit for bit:
// the residual conserves the contribution.
//
// Only codecs whose whole-vector encoding equals the concatenation of their parts' (the round
// lays parts out on codecAlignment() boundaries, and encoding decoded values changes nothing):
// TopK4Bit. Threads: one round at a time (the caller's). Errors: dedloc::Error for another codec,
// a vector of another size than the residual's, or a non-finite value (nothing changes then).
#include "compress/Compression.h"

#include <span>
#include <vector>

namespace dedloc {

class ErrorFeedback final {
  public:
    // Whether `codec` can be used with error feedback (TopK4Bit).
    [[nodiscard]] static bool supports(Compression codec);

    // Replaces `values` by what `codec` sends of values + residual, and keeps the rest as the new
    // residual. The first call fixes the vector's size.
    void compress(Compression codec, std::span<float> values);
    // The residual (empty before the first compress()).
    [[nodiscard]] std::span<const float> residual() const { return m_residual; }
    // Forgets the residual (the peer's state was replaced: the old contribution no longer applies).
    void reset() { m_residual.clear(); }
    // Takes a residual kept from before (a checkpoint's): the next compress() adds it. Throws
    // dedloc::Error for a non-finite value (nothing changes then); an empty one is reset().
    void restore(std::vector<float> residual);

  private:
    std::vector<float> m_residual;
    std::vector<float> m_sent; // scratch: decode(encode(u))
};

} // namespace dedloc
