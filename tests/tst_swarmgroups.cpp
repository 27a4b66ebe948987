// A swarm larger than one averaging group (core/averaging/GroupMerge.h) end to end: four `dedloc`
// processes on loopback train a tiny run whose manifest holds groups to two members. Each step
// averages in two groups at least, whose averages every peer merges: after every step all four
// hold bitwise the same parameters, and the steps report the groups they merged.
#include "SwarmHarness.h"
#include "SwarmTestCase.h"

#include <QTest>

using namespace dedloc;
using namespace dedloc::test;

namespace {

// One line per step: each peer's params_sha (first 8 digits), group size and groups merged.
std::string describeSteps(const std::vector<std::map<long, nlohmann::json>> &peers, long steps)
{
    std::string out;
    for (long step = 1; step <= steps; ++step) {
        out += "step " + std::to_string(step) + ":";
        for (const auto &m : peers) {
            const auto it = m.find(step);
            if (it == m.end()) {
                out += " (none)";
                continue;
            }
            out += " " + it->second.value("params_sha", std::string("?")).substr(0, 8) + "/g" +
                   std::to_string(it->second.value("group_size", 0)) + "/m" +
                   std::to_string(it->second.value("merged_groups", 0));
        }
        out += "\n";
    }
    return out;
}

} // namespace

class TestSwarmGroups : public SwarmTestCase {
    Q_OBJECT

private Q_SLOTS:
    void fourPeersInGroupsOfTwoHoldOneModel()
    {
        const auto d = scratch();
        const auto manifest = writeSignedTinyRun(d, 64, [](RunManifest &m) {
            AveragingSpec a;
            a.groupSize = 2;
            m.averagingField = a;
        });
        SwarmHarness h(m_app, manifest, d / "peers");
        auto &monitor = h.startMonitor();
        const long steps = 6;
        const QStringList args{QStringLiteral("--steps"), QString::number(steps), QStringLiteral("--min-peers"),
                               QStringLiteral("4")};
        auto &p1 = h.startPeer(QStringLiteral("p1"), args);
        auto &p2 = h.startPeer(QStringLiteral("p2"), args);
        auto &p3 = h.startPeer(QStringLiteral("p3"), args);
        auto &p4 = h.startPeer(QStringLiteral("p4"), args);
#define all {&p1, &p2, &p3, &p4, &monitor}
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3, &p4}); }, 240), all);
        std::vector<std::map<long, nlohmann::json>> s;
        for (auto *p : {&p1, &p2, &p3, &p4}) {
            QCOMPARE(p->process->exitCode(), 0);
            s.push_back(byStep(*p));
        }
        // Printed first if a check below fails: which step split, and how each peer averaged it.
        setFailureContext("steps (params_sha/group size/groups merged, p1..p4):\n" + describeSteps(s, steps));
        long merged = 0;
        for (long step = 1; step <= steps; ++step) {
            SWARM_VERIFY(std::all_of(s.begin(), s.end(), [&](const auto &m) { return m.count(step) > 0; }), all);
            const auto sha = s[0].at(step).value("params_sha", std::string());
            QVERIFY(!sha.empty());
            for (const auto &m : s) {
                const auto &e = m.at(step);
                SWARM_VERIFY(e.value("params_sha", std::string()) == sha, all);
                // No group holds more than two, and a step merges at most every peer's group.
                SWARM_VERIFY(e.value("group_size", 0) <= 2, all);
                SWARM_VERIFY(e.value("merged_groups", 0) >= 1 && e.value("merged_peers", 0) <= 5, all);
                if (e.value("merged_groups", 0) >= 2)
                    ++merged;
            }
        }
        // Most steps were taken in several groups and merged (a step whose groups all formed
        // around one peer that was late may differ: it still ends with one model, checked above).
        SWARM_VERIFY(merged >= 4 * (steps - 2), all);
#undef all
    }
};

QTEST_GUILESS_MAIN(TestSwarmGroups)
#include "tst_swarmgroups.moc"
