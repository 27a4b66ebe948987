#include "train/Checkpoint.h"

#include "train/CheckpointFormat.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/JsonReader.h"
#include "util/Log.h"

#include <cstring>
#include <ctime>
#include <fstream>

namespace dedloc {

void writeCheckpointFile(const std::filesystem::path &file, const Checkpoint &checkpoint)
{
    nlohmann::json header;
    header["meta"] = checkpoint.meta;
    header["tensors"] = nlohmann::json::array();
    std::vector<torch::Tensor> contiguous;
    std::uint64_t offset = 0;
    for (const auto &t : checkpoint.tensors) {
        auto c = t.tensor.detach().to(torch::kCPU, torch::kFloat).contiguous();
        const std::uint64_t bytes = static_cast<std::uint64_t>(c.numel()) * sizeof(float);
        header["tensors"].push_back({{"name", t.name}, {"shape", c.sizes().vec()}, {"offset", offset}, {"bytes", bytes}});
        offset += bytes;
        contiguous.push_back(std::move(c));
    }
    const std::string prefix = checkpointPrefix(header.dump());

    AtomicFileWriter writer(file);
    Sha256 hash;
    writer.write(prefix.data(), prefix.size());
    hash.update(prefix.data(), prefix.size());
    for (const auto &c : contiguous) {
        const auto bytes = static_cast<std::size_t>(c.numel()) * sizeof(float);
        writer.write(c.data_ptr<float>(), bytes);
        hash.update(c.data_ptr<float>(), bytes);
    }
    const std::string trailer = hash.finalHex();
    writer.write(trailer.data(), trailer.size());
    writer.commit();
}

Checkpoint readCheckpointFile(const std::filesystem::path &file)
{
    const std::string where = "checkpoint " + file.string();
    if (!std::filesystem::exists(file))
        throw Error(where + " does not exist");
    const std::string data = readWholeFile(file);
    auto layout = parseCheckpoint(data, where);
    Checkpoint out{std::move(layout.meta), {}};
    for (auto &e : layout.tensors) {
        auto tensor = torch::empty(e.shape, torch::kFloat);
        std::memcpy(tensor.data_ptr<float>(), data.data() + e.offset, e.bytes);
        out.tensors.push_back({std::move(e.name), std::move(tensor)});
    }
    return out;
}

CheckpointStore::CheckpointStore(std::filesystem::path directory) : m_directory(std::move(directory)) {}

std::filesystem::path CheckpointStore::newestPath() const { return m_directory / "checkpoint.ddlc"; }
std::filesystem::path CheckpointStore::previousPath() const { return m_directory / "checkpoint.prev.ddlc"; }

void CheckpointStore::save(const Checkpoint &checkpoint)
{
    std::error_code ec;
    std::filesystem::create_directories(m_directory, ec);
    if (ec)
        throw Error("cannot create checkpoint directory " + m_directory.string() + ": " + ec.message());
    // Write and verify the new file completely before touching the existing ones.
    const auto staged = m_directory / "checkpoint.new.ddlc";
    writeCheckpointFile(staged, checkpoint);
    if (std::filesystem::exists(newestPath())) {
        std::filesystem::rename(newestPath(), previousPath(), ec);
        if (ec)
            throw Error("cannot keep the previous checkpoint " + previousPath().string() + ": " + ec.message());
    }
    std::filesystem::rename(staged, newestPath(), ec);
    if (ec)
        throw Error("cannot move the new checkpoint into place: " + ec.message());
}

std::optional<Checkpoint>
CheckpointStore::loadNewestGood(const std::function<void(const Checkpoint &)> &accept)
{
    std::string refused;
    for (const auto &path : {newestPath(), previousPath()}) {
        if (!std::filesystem::exists(path))
            continue;
        try {
            auto checkpoint = readCheckpointFile(path);
            if (accept)
                accept(checkpoint);
            if (!refused.empty())
                log::warning("ckpt", "using the previous good checkpoint " + path.string() + " instead");
            return checkpoint;
        } catch (const Error &e) {
            refused = e.what();
            // Move it aside so that the next save's rotation cannot push the good previous
            // checkpoint out in favour of a corrupt one; keep it for inspection.
            auto aside = path;
            aside += ".refused-" + std::to_string(std::time(nullptr));
            std::error_code ec;
            std::filesystem::rename(path, aside, ec);
            log::warning("ckpt", std::string("refused ") + e.what() + (ec ? std::string() : "; moved aside to " + aside.string()));
        }
    }
    return std::nullopt;
}

} // namespace dedloc
