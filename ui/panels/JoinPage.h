#pragma once
// First-start page: the run this app will join (name, lead, model, data, signature status) and
// one Join button; a checkbox sets auto-rejoin for the next start.
#include "RunInfo.h"

#include <QWidget>

class QCheckBox;
class QPushButton;

namespace dedloc::ui {

class Settings;

class JoinPage final : public QWidget {
    Q_OBJECT

  public:
    JoinPage(const RunInfo &run, Settings &settings, QWidget *parent = nullptr);
    [[nodiscard]] QPushButton *joinButton() const { return m_join; }

  Q_SIGNALS:
    void joinClicked();

  private:
    QPushButton *m_join;
    QCheckBox *m_rejoin;
};

} // namespace dedloc::ui
