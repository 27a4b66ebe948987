// A service socket's messages (averaging/SwarmMessages.h): the CBOR header, then the reader of
// its type, as the peer service (requests) and the matchmaker or a state download (replies) read it.
#include "FuzzFixtures.h"
#include "FuzzTargets.h"

#include "averaging/SwarmMessages.h"

#include <nlohmann/json.hpp>

namespace dedloc::fuzz {

namespace {

// The replies' free-text and number fields, read as the clients read them.
void readLooseFields(const nlohmann::json &m)
{
    (void)textOr(m, "why", "?");
    (void)textOr(m, "at", "");
    (void)numberOr(m, "d", 0.0);
    (void)integerOr(m, "k", -1);
}

void readTyped(const nlohmann::json &m, const std::string &type)
{
    if (type == "join")
        (void)joinFromJson(m);
    else if (type == "begin")
        (void)groupFromJson(m);
    else if (type == "reach?")
        (void)reachRequestFromJson(m);
    else if (type == "state")
        (void)stateInfoFromJson(m, ModelElements);
    else if (type == "disband" && m.contains("l"))
        (void)suggestedLeaderFromJson(m.at("l"), UpdateEpoch, "schema");
}

} // namespace

int fuzzServiceMessage(const std::uint8_t *data, std::size_t size)
{
    try {
        const auto m = parseServiceMessage({data, size});
        readLooseFields(m);
        readTyped(m, m.at("t").get<std::string>());
    } catch (const ProtocolError &) {
        // A refused message: a strike against its sender.
    }
    return 0;
}

} // namespace dedloc::fuzz
