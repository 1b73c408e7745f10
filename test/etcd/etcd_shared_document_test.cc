// EtcdSharedDocument on the in-memory store and on a real etcd.
#include "src/etcd/etcd_shared_document.h"

#include "gtest/gtest.h"
#include "src/etcd/fake_key_value_store.h"
#include "test/common/shared_document_conformance.h"
#include "test/etcd/etcd_test_server.h"

namespace holdfast::testing {
namespace {

constexpr char kKey[] = "/hf/rollout";

struct FakeStore {
  FakeKeyValueStore store;
  EtcdSharedDocument a{&store, kKey};
  EtcdSharedDocument b{&store, kKey};
};

struct RealStore {
  EtcdTestServer server;
  std::unique_ptr<EtcdClient> client_a = server.Client();
  std::unique_ptr<EtcdClient> client_b = server.Client();
  EtcdSharedDocument a{client_a.get(), kKey};
  EtcdSharedDocument b{client_b.get(), kKey};
};

template <typename Store>
SharedDocumentHandles Make() {
  auto store = std::make_shared<Store>();
  return SharedDocumentHandles{store, &store->a, &store->b};
}

INSTANTIATE_TEST_SUITE_P(Etcd, SharedDocumentConformance,
                         ::testing::Values(SharedDocumentCase{"FakeStore", Make<FakeStore>},
                                           SharedDocumentCase{"RealEtcd", Make<RealStore>}),
                         CaseName);

TEST(EtcdSharedDocument, AKeyWithTheDocumentsNameAsPrefixIsAnotherDocument) {
  FakeKeyValueStore store;
  store.Put(std::string(kKey) + "-other", "not it");
  EtcdSharedDocument doc(&store, kKey);
  absl::StatusOr<DocumentVersion> read = doc.Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->revision, "");
}

TEST(EtcdSharedDocument, AnUnreachableStoreIsUnavailable) {
  FakeKeyValueStore store;
  EtcdSharedDocument doc(&store, kKey);
  store.SetUnavailable(true);
  EXPECT_TRUE(absl::IsUnavailable(doc.Read().status()));
  EXPECT_TRUE(absl::IsUnavailable(doc.Replace("x", "").status()));
}

}  // namespace
}  // namespace holdfast::testing
