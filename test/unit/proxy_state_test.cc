#include "src/xds/proxy_state.h"

#include "gtest/gtest.h"

namespace holdfast {
namespace {

constexpr char kClusters[] = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
constexpr char kListeners[] = "type.googleapis.com/envoy.config.listener.v3.Listener";

TEST(ProxySyncTest, ANackOutweighsAPendingTypeAndALaterAckClearsIt) {
  ProxyState proxy(1, "ads-sotw", "peer", absl::UnixEpoch());
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kSynced) << "nothing sent, nothing owed";

  proxy.RecordSent(kClusters, "v1", {}, absl::UnixEpoch());
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kPending);
  proxy.RecordAck(kClusters, "v1", {}, absl::UnixEpoch());
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kSynced);

  proxy.RecordSent(kListeners, "v1", {}, absl::UnixEpoch());
  proxy.RecordSent(kClusters, "v2", {}, absl::UnixEpoch());
  proxy.RecordNack(kClusters, NackRecord{.version = "v2", .error = "bad cluster"});
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kNacking) << "listeners pending, clusters NACKed";
  EXPECT_EQ(ProxySyncName(SyncOf(proxy.View())), "nacking");

  proxy.RecordSent(kClusters, "v3", {}, absl::UnixEpoch());
  proxy.RecordAck(kClusters, "v3", {}, absl::UnixEpoch());
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kPending) << "the ACK clears the NACK";
  proxy.RecordAck(kListeners, "v1", {}, absl::UnixEpoch());
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kSynced);
}

TEST(ProxySyncTest, TheRegistryCountsProxiesByWhereTheyStand) {
  ProxyRegistry registry;
  auto synced = std::make_shared<ProxyState>(1, "ads-sotw", "a", absl::UnixEpoch());
  auto pending = std::make_shared<ProxyState>(2, "ads-sotw", "b", absl::UnixEpoch());
  pending->RecordSent(kClusters, "v1", {}, absl::UnixEpoch());
  registry.Add(synced, 1);
  registry.Add(pending, 2);
  std::map<ProxySync, size_t> counts = registry.CountBySync();
  EXPECT_EQ(counts[ProxySync::kSynced], 1u);
  EXPECT_EQ(counts[ProxySync::kPending], 1u);
  EXPECT_EQ(counts[ProxySync::kNacking], 0u);
  EXPECT_EQ(pending->Sync(), SyncOf(pending->View()));
}

}  // namespace
}  // namespace holdfast
