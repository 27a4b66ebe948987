#pragma once
// Fetching averaged updates from a state donor for replay (averaging/UpdateArchive.h has the
// messages; docs/PROTOCOL.md "State sharing"). One UpdateFetcher keeps one connection to one
// donor, so that a peer replaying several epochs asks each in turn over it: update? for the
// layout (checked before anything is allocated), then upart? chunk by chunk.
//
// Security: the connection is a CURVE client to the key that signed the donor's advert.
// Threads: one thread at a time; fetch() returns within about `timeout` of any request that got
// no answer to it (answers to other requests do not extend that), or within 100 ms of `stop`
// becoming true.
#include "averaging/AveragedUpdate.h"
#include "averaging/ServiceClient.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>

namespace dedloc {

class DataPlaneSecurity;

class UpdateFetcher final {
  public:
    // `expectedElements`: the model's parameter count. `security` null: plaintext (unit tests).
    UpdateFetcher(const DonorAdvert &donor, std::string runId, std::uint64_t expectedElements, double timeout,
                  const std::atomic<bool> &stop, const std::shared_ptr<const DataPlaneSecurity> &security = nullptr);

    // The update of `epoch` (decodeUpdate() still checks its values), or nothing with why(): the
    // donor keeps none for that epoch, is silent, or answered something invalid (invalid()).
    // `groupId` given: that round's own group average (UpdateArchive::addGroupUpdate), not the
    // donor's chain.
    std::optional<AveragedUpdate> fetch(long epoch, const std::string &groupId = {});
    [[nodiscard]] const std::string &why() const { return m_why; }
    // The donor's own answer broke the protocol (a strike against it, not a slow link).
    [[nodiscard]] bool invalid() const { return m_invalid; }
    // The last fetch() was answered that the donor keeps no such update (yet: the update of an
    // epoch whose round still runs comes when it ends).
    [[nodiscard]] bool refused() const { return m_refused; }

  private:
    std::optional<ServiceReply> await(const char *type, std::size_t maxData, long epoch, long chunk);

    ServiceClient m_client;
    std::string m_runId;
    std::uint64_t m_elements;
    double m_timeout;
    const std::atomic<bool> &m_stop;
    std::string m_why;
    bool m_invalid = false;
    bool m_refused = false;
};

} // namespace dedloc
