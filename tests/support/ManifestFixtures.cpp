#include "ManifestFixtures.h"

#include "TestSupport.h"

#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"

#include <nlohmann/json.hpp>

namespace dedloc::test {

using nlohmann::json;

const char *const kValidManifest = R"({
  "format_version": 1,
  "run_id": "bn-albert-demo",
  "name": "Bengali ALBERT demo",
  "lead": "Test Lead",
  "description": "A test run.",
  "model": {"preset": "tiny", "vocab_size": 8000, "embedding_size": 96, "hidden_size": 256, "num_layers": 4,
            "num_heads": 4, "intermediate_size": 1024, "max_positions": 128},
  "tokenizer": {"path": "tokenizer.model", "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
  "corpus": {"files": [{"path": "corpus/a.txt", "sha256": "0000000000000000000000000000000000000000000000000000000000000001"},
                       {"path": "corpus/b.txt", "sha256": "00000000000000000000000000000000000000000000000000000000000000b2"}],
             "validation_fraction": 0.05},
  "training": {"sequence_length": 64, "target_batch_size": 256, "micro_batch_size": 16, "mask_probability": 0.2,
               "max_grad_norm": 2.5, "validation_every_n_steps": 7, "validation_samples": 32,
               "checkpoint_every_n_steps": 11},
  "optimizer": {"name": "lamb", "learning_rate": 0.00176, "beta1": 0.85, "beta2": 0.995, "epsilon": 1e-7,
                "weight_decay": 0.02, "clamp_value": 8.0, "debias": false},
  "schedule": {"warmup_steps": 50, "total_steps": 2000},
  "compression": "blockwise8bit",
  "bootstrap_peers": ["192.168.1.10:31337", "peer.example.org:31338"]
})";

std::string edited(const QString &op, const QString &pointer, const QString &value)
{
    json doc = json::parse(kValidManifest);
    const json::json_pointer ptr(pointer.toStdString());
    if (op == QLatin1String("remove"))
        doc.at(ptr.parent_pointer()).erase(ptr.back());
    else
        doc[ptr] = json::parse(value.toStdString());
    return doc.dump();
}

std::optional<QString> parseError(const std::string &text)
{
    try {
        (void)dedloc::parseRunManifest(text, {});
    } catch (const dedloc::Error &e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception &e) {
        return QStringLiteral("NOT A dedloc::Error: ") + QString::fromStdString(e.what());
    }
    return std::nullopt;
}

RunManifest writeVerifiableRun(const std::filesystem::path &root)
{
    std::filesystem::create_directories(root / "corpus");
    dedloc::writeFileAtomically(root / "tokenizer.model", kAbc);
    writeCorpusSample(root / "corpus" / "a.txt", 4096);
    writeCorpusSample(root / "corpus" / "b.txt", 64 * 1024);

    json doc = json::parse(kValidManifest);
    doc["corpus"]["files"][0]["sha256"] = dedloc::sha256File(root / "corpus" / "a.txt");
    doc["corpus"]["files"][1]["sha256"] = dedloc::sha256File(root / "corpus" / "b.txt");
    return dedloc::parseRunManifest(doc.dump(), root);
}

void flipOneByte(const std::filesystem::path &file)
{
    std::string bytes = dedloc::readWholeFile(file);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x01);
    dedloc::writeFileAtomically(file, bytes);
}

EnvGuard::EnvGuard(const char *name, const std::optional<QByteArray> &value)
    : m_name(name), m_hadValue(qEnvironmentVariableIsSet(name)), m_old(qgetenv(name))
{
    if (value)
        qputenv(name, *value);
    else
        qunsetenv(name);
}

EnvGuard::~EnvGuard()
{
    if (m_hadValue)
        qputenv(m_name, m_old);
    else
        qunsetenv(m_name);
}

} // namespace dedloc::test
