#pragma once
// The common ground of the multi-process swarm suites: one scratch directory for the whole suite
// (removed at the end unless DEDLOC_KEEP_TEST_DIR is set, to look at the peers' logs) and the
// dedloc executable under test (DEDLOC_APP, which the app tests' CMake defines). A suite derives
// from it and declares its own test slots.
#include <QObject>
#include <QTemporaryDir>

#include <filesystem>

#ifndef DEDLOC_APP
#error "SwarmTestCase.h is for the app tests (dedloc_add_app_test defines DEDLOC_APP)"
#endif

namespace dedloc::test {

class SwarmTestCase : public QObject {
protected:
    SwarmTestCase() { m_tmp.setAutoRemove(qEnvironmentVariableIsEmpty("DEDLOC_KEEP_TEST_DIR")); }

    // The scratch directory, as a path.
    [[nodiscard]] std::filesystem::path scratch() const { return m_tmp.path().toStdString(); }

    QTemporaryDir m_tmp;
    std::filesystem::path m_app = DEDLOC_APP;
};

} // namespace dedloc::test
