// ALBERT masked-LM (core/model/Albert.h): shape, sharing, tying, initial loss, input checks.
#include "model/Albert.h"
#include "run/RunMaker.h"
#include "util/Error.h"

#include <QtTest>

#include <cmath>

using namespace dedloc;

class TestAlbert final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::manual_seed(7); }

    void parameterCountFollowsTheFactorisedSharedDesign()
    {
        const auto s = presetShape("tiny", 8000, 64);
        const std::int64_t V = s.vocabSize, E = s.embeddingSize, H = s.hiddenSize, I = s.intermediateSize,
                           P = s.maxPositions;
        const std::int64_t embeddings = V * E + P * E + 2 * E + (E * H + H);
        const std::int64_t shared = (H * 3 * H + 3 * H) + (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H;
        const std::int64_t head = (H * E + E) + 2 * E + V; // decoder weight is the embedding: tied
        AlbertMlm model(s);
        QCOMPARE(model->parameterCount(), embeddings + shared + head);
    }

    void moreLayersShareOneSetOfWeights()
    {
        auto s2 = presetShape("tiny", 8000, 64);
        auto s6 = s2;
        s6.numLayers = 6;
        QCOMPARE(AlbertMlm(s6)->parameterCount(), AlbertMlm(s2)->parameterCount());
    }

    void initialLossIsNearUniform()
    {
        // With N(0, 0.02) weights the logits are nearly flat: loss ~ ln(V) = 8.987 nats.
        AlbertMlm model(presetShape("tiny", 8000, 64));
        auto ids = torch::randint(5, 8000, {4, 64}, torch::kLong);
        auto labels = torch::full({4, 64}, -100, torch::kLong);
        labels.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, 64, 7)},
                          ids.index({torch::indexing::Slice(), torch::indexing::Slice(1, 64, 7)}));
        const double loss = model->mlmLoss(ids, labels).item<double>();
        QVERIFY2(std::abs(loss - std::log(8000.0)) < 0.1, qPrintable(QString::number(loss)));
    }

    void lossIgnoresUnlabelledPositionsButSeesTheirContext()
    {
        AlbertMlm model(presetShape("tiny", 500, 16));
        auto ids = torch::randint(5, 500, {2, 16}, torch::kLong);
        auto labels = torch::full({2, 16}, -100, torch::kLong);
        labels[0][3] = ids[0][3];
        labels[1][9] = ids[1][9];
        const double base = model->mlmLoss(ids, labels).item<double>();
        // Changing the label of an ignored position changes nothing...
        auto labels2 = labels.clone();
        labels2[0][5] = -100;
        QCOMPARE(model->mlmLoss(ids, labels2).item<double>(), base);
        // ...but changing an input token elsewhere changes the prediction through attention.
        auto ids2 = ids.clone();
        ids2[0][10] = (ids[0][10].item<long>() + 1 - 5) % 495 + 5;
        QVERIFY(model->mlmLoss(ids2, labels).item<double>() != base);
    }

    void decoderIsTiedToTheTokenEmbedding()
    {
        // A token that occurs nowhere in the input still gets an embedding gradient through the
        // softmax of the tied decoder; an untied decoder would leave its row at zero gradient.
        AlbertMlm model(presetShape("tiny", 300, 16));
        auto ids = torch::randint(5, 100, {2, 16}, torch::kLong);
        auto labels = torch::full({2, 16}, -100, torch::kLong);
        labels[0][2] = ids[0][2];
        model->mlmLoss(ids, labels).backward();
        torch::Tensor embeddingGrad;
        for (const auto &p : model->named_parameters())
            if (p.key() == "token_embedding.weight")
                embeddingGrad = p.value().grad();
        QVERIFY(embeddingGrad.defined());
        QVERIFY(embeddingGrad[250].abs().sum().item<double>() > 0.0);
    }

    void sequenceLongerThanPositionsIsRefused()
    {
        AlbertMlm model(presetShape("tiny", 300, 16));
        auto ids = torch::randint(5, 300, {1, 17}, torch::kLong);
        QVERIFY_THROWS_EXCEPTION(Error, model->encode(ids));
    }

    void unknownPresetAndBadHeadsAreRefused()
    {
        QVERIFY_THROWS_EXCEPTION(Error, presetShape("huge", 8000, 128));
        auto s = presetShape("tiny", 300, 16);
        s.numHeads = 3; // 128 % 3 != 0
        QVERIFY_THROWS_EXCEPTION(Error, AlbertMlm{s});
    }
};

QTEST_APPLESS_MAIN(TestAlbert)
#include "tst_albert.moc"
