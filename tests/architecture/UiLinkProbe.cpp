// Links the volunteer window's library and nothing else, so that tst_architecture.sh can read
// what the window pulls in (its DT_NEEDED entries): never ZeroMQ, OpenDHT or libtorch.
#include "Format.h"

#include <cstdio>

int main()
{
    std::printf("%s\n", dedloc::ui::formatCount(1234567).toStdString().c_str());
    return 0;
}
