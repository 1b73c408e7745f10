#include "src/xds/proxy_state.h"

#include "gtest/gtest.h"

namespace holdfast {
namespace {

constexpr char kClusters[] = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
constexpr char kListeners[] = "type.googleapis.com/envoy.config.listener.v3.Listener";

TEST(ProxySyncTest, ANackOutweighsAPendingTypeAndALaterAckClearsIt) {
  ProxyState proxy(1, "ads-sotw", "peer", absl::UnixEpoch());
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kSynced) << "nothing sent, nothing owed";

  proxy.RecordSent(kClusters, "v1");
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kPending);
  proxy.RecordAck(kClusters, "v1", absl::UnixEpoch());
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kSynced);

  proxy.RecordSent(kListeners, "v1");
  proxy.RecordSent(kClusters, "v2");
  proxy.RecordNack(kClusters, NackRecord{.version = "v2", .error = "bad cluster"});
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kNacking) << "listeners pending, clusters NACKed";
  EXPECT_EQ(ProxySyncName(SyncOf(proxy.View())), "nacking");

  proxy.RecordSent(kClusters, "v3");
  proxy.RecordAck(kClusters, "v3", absl::UnixEpoch());
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kPending) << "the ACK clears the NACK";
  proxy.RecordAck(kListeners, "v1", absl::UnixEpoch());
  EXPECT_EQ(SyncOf(proxy.View()), ProxySync::kSynced);
}

}  // namespace
}  // namespace holdfast
