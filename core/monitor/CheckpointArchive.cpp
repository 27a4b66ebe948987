#include "monitor/CheckpointArchive.h"

#include "util/Error.h"
#include "util/Log.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <string>

namespace dedloc {

namespace fs = std::filesystem;

CheckpointArchive::CheckpointArchive(fs::path directory, int keep)
    : m_directory(std::move(directory)), m_keep(std::max(1, keep))
{
}

fs::path CheckpointArchive::fileName(long epoch)
{
    std::array<char, 48> name{};
    std::snprintf(name.data(), name.size(), "epoch-%08ld.ddlc", epoch);
    return name.data();
}

fs::path CheckpointArchive::add(const fs::path &checkpoint, long epoch)
{
    std::error_code ec;
    fs::create_directories(m_directory, ec);
    if (ec)
        throw Error("cannot create the checkpoint archive " + m_directory.string() + ": " + ec.message());
    auto target = m_directory / fileName(epoch);
    const auto temp = m_directory / (fileName(epoch).string() + ".tmp-" + std::to_string(::getpid()));
    fs::remove(temp, ec);
    fs::create_hard_link(checkpoint, temp, ec);
    if (ec) {
        ec.clear();
        fs::copy_file(checkpoint, temp, fs::copy_options::overwrite_existing, ec);
        if (ec) {
            std::error_code ignored;
            fs::remove(temp, ignored);
            throw Error("cannot archive " + checkpoint.string() + " as " + target.string() + ": " + ec.message());
        }
    }
    fs::rename(temp, target, ec);
    if (ec) {
        std::error_code ignored;
        fs::remove(temp, ignored);
        throw Error("cannot archive " + checkpoint.string() + " as " + target.string() + ": " + ec.message());
    }
    const auto all = list();
    for (std::size_t i = 0; i + static_cast<std::size_t>(m_keep) < all.size(); ++i) {
        fs::remove(all[i].file, ec);
        if (ec)
            log::warning("ckpt",
                         "cannot remove the old archived checkpoint " + all[i].file.string() + ": " + ec.message());
    }
    return target;
}

std::vector<ArchivedCheckpoint> CheckpointArchive::list() const
{
    std::vector<ArchivedCheckpoint> out;
    std::error_code ec;
    for (fs::directory_iterator it(m_directory, ec), end; !ec && it != end; it.increment(ec)) {
        const auto name = it->path().filename().string();
        // Exactly "epoch-" + 8+ digits + ".ddlc": temporary files and anything else are skipped.
        if (name.size() < 19 || name.rfind("epoch-", 0) != 0 || name.substr(name.size() - 5) != ".ddlc")
            continue;
        const auto digits = name.substr(6, name.size() - 11);
        if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        ArchivedCheckpoint a;
        a.epoch = std::stol(digits);
        a.file = it->path();
        std::error_code e2;
        a.bytes = fs::file_size(a.file, e2);
        const auto t = fs::last_write_time(a.file, e2);
        if (!e2)
            a.modified = std::chrono::duration<double>(std::chrono::file_clock::to_sys(t).time_since_epoch()).count();
        out.push_back(std::move(a));
    }
    std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.epoch < b.epoch; });
    return out;
}

} // namespace dedloc
