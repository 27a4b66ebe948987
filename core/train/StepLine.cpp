#include "train/StepLine.h"

#include <cmath>

namespace dedloc {

namespace {

std::string format(const char *fmt, double value)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, fmt, value);
    return buffer;
}

std::string prefix(const std::string &name, long step)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "step %6ld", step);
    return (name.empty() ? std::string() : "[" + name + "] ") + buffer;
}

} // namespace

std::string stepLine(const StepLineFields &f)
{
    std::string line = prefix(f.name, f.step);
    line += " | loss " + (f.loss ? format("%.4f", *f.loss) : std::string("  none"));
    line += " | " + format("%6.1f", f.samplesPerSecond) + " samples/s";
    if (f.peers)
        line += " | peers " + std::to_string(*f.peers);
    if (f.learningRate)
        line += " | lr " + format("%.2e", *f.learningRate);
    if (f.gradNorm)
        line += " | grad norm " + format("%.3f", *f.gradNorm);
    if (!f.status.empty())
        line += " | " + f.status;
    if (!f.applied)
        line += " | SKIPPED (non-finite)";
    return line;
}

std::string validationLine(const std::string &name, long step, double loss)
{
    return prefix(name, step) + " | validation loss " + format("%.4f", loss);
}

void printLine(std::FILE *out, const std::string &line)
{
    if (!out)
        return;
    std::fprintf(out, "%s\n", line.c_str());
    std::fflush(out);
}

} // namespace dedloc
