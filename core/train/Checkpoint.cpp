#include "train/Checkpoint.h"

#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/JsonReader.h"
#include "util/Log.h"

#include <cstring>
#include <ctime>
#include <fstream>

namespace dedloc {

namespace {

constexpr char Magic[8] = {'D', 'D', 'L', 'C', 'K', 'P', 'T', '1'};
constexpr std::size_t TrailerBytes = 64;

void putU64(std::string &out, std::uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::uint64_t getU64(const char *p)
{
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    return v;
}

} // namespace

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
    const std::string headerText = header.dump();
    std::string prefix(Magic, sizeof Magic);
    putU64(prefix, headerText.size());
    prefix += headerText;

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
    if (data.size() < sizeof Magic + 8 + TrailerBytes || std::memcmp(data.data(), Magic, sizeof Magic) != 0)
        throw Error(where + " is truncated or not a DeDLOC checkpoint");
    const std::size_t body = data.size() - TrailerBytes;
    if (sha256Hex(data.data(), body) != std::string_view(data).substr(body))
        throw Error(where + " is corrupt (SHA-256 of its contents does not match its trailer)");
    const std::uint64_t headerBytes = getU64(data.data() + sizeof Magic);
    const std::size_t dataStart = sizeof Magic + 8 + headerBytes;
    if (headerBytes > body || dataStart > body)
        throw Error(where + " has a header larger than the file");

    Checkpoint out;
    try {
        const auto header = parseJsonText(std::string_view(data).substr(sizeof Magic + 8, headerBytes));
        if (header.is_discarded())
            throw Error("its header is not JSON, or nests deeper than 64 levels");
        out.meta = header.at("meta");
        for (const auto &t : header.at("tensors")) {
            const auto shape = t.at("shape").get<std::vector<std::int64_t>>();
            const auto offset = t.at("offset").get<std::uint64_t>();
            const auto bytes = t.at("bytes").get<std::uint64_t>();
            std::uint64_t numel = 1;
            for (auto d : shape) {
                if (d < 0 || (d > 0 && numel > (std::uint64_t{1} << 40) / static_cast<std::uint64_t>(d)))
                    throw Error("bad shape");
                numel *= static_cast<std::uint64_t>(d);
            }
            if (bytes != numel * sizeof(float) || offset > body - dataStart || bytes > body - dataStart - offset)
                throw Error("tensor " + t.at("name").get<std::string>() + " lies outside the file");
            auto tensor = torch::empty(shape, torch::kFloat);
            std::memcpy(tensor.data_ptr<float>(), data.data() + dataStart + offset, bytes);
            out.tensors.push_back({t.at("name").get<std::string>(), std::move(tensor)});
        }
    } catch (const nlohmann::json::exception &e) {
        throw Error(where + " has a malformed header: " + e.what());
    } catch (const Error &e) {
        throw Error(where + " is malformed: " + e.what());
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
