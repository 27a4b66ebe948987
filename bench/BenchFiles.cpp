#include "BenchFiles.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace dedloc::bench {

void writeFile(const fs::path &p, const std::string &text)
{
    const auto tmp = p.string() + ".tmp";
    std::ofstream(tmp) << text;
    fs::rename(tmp, p);
}

std::string readFile(const fs::path &p)
{
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

bool waitForFile(const fs::path &p, double timeoutSeconds)
{
    const auto start = std::chrono::steady_clock::now();
    while (!fs::exists(p)) {
        if (timeoutSeconds >= 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeoutSeconds)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

void barrier(const fs::path &dir, const std::string &name, int rank, int n, const std::string &content)
{
    writeFile(dir / (name + "." + std::to_string(rank)), content);
    for (int r = 0; r < n; ++r)
        waitForFile(dir / (name + "." + std::to_string(r)));
}

} // namespace dedloc::bench
