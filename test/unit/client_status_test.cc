#include "src/xds/client_status.h"

#include "absl/strings/match.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb.h"
#include "gtest/gtest.h"
#include "src/snapshot/redact.h"
#include "src/xds/delta_session.h"
#include "src/xds/sotw_session.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using envoy::admin::v3::ClientResourceStatus;
using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::status::v3::ClientConfig;
using envoy::service::status::v3::ClientStatusRequest;
using envoy::service::status::v3::ClientStatusResponse;
using envoy::service::status::v3::ConfigStatus;
using testing::Build;
using testing::EdsCluster;
using testing::Endpoints;

DiscoveryRequest Sotw(absl::string_view type, std::vector<std::string> names = {},
                      std::string nonce = "", std::string version = "", std::string error = "") {
  DiscoveryRequest request;
  request.set_type_url(std::string(type));
  for (auto& n : names) request.add_resource_names(n);
  request.set_response_nonce(nonce);
  request.set_version_info(version);
  if (!error.empty()) request.mutable_error_detail()->set_message(error);
  return request;
}

envoy::config::core::v3::Node NodeOf(const std::string& id, const std::string& zone = "") {
  envoy::config::core::v3::Node node;
  node.set_id(id);
  if (!zone.empty()) {
    (*node.mutable_metadata()->mutable_fields())["zone"].set_string_value(zone);
  }
  node.add_extensions()->set_name("envoy.filters.http.router");  // not kept
  return node;
}

const ClientConfig::GenericXdsConfig* Find(const ClientConfig& config, const std::string& name) {
  for (const auto& entry : config.generic_xds_configs()) {
    if (entry.name() == name) return &entry;
  }
  return nullptr;
}

ClientStatusResponse Answer(const std::vector<ProxyView>& proxies,
                            const ClientStatusRequest& request = {}) {
  absl::StatusOr<ClientStatusResponse> answer = AnswerClientStatus(request, proxies);
  EXPECT_TRUE(answer.ok()) << answer.status();
  return answer.ok() ? *answer : ClientStatusResponse();
}

class ClientStatusTest : public ::testing::Test {
 protected:
  SimulatedClock clock_;
  MetricsRegistry metrics_;
  XdsStats stats_{&metrics_};
  ViewCache views_;
};

TEST_F(ClientStatusTest, SotwResourcesGoFromRequestedToAckedAndANackKeepsWhatTheProxyHolds) {
  ProxyState proxy(1, "ads-sotw", "peer", absl::UnixEpoch());
  proxy.SetNode(NodeOf("envoy-1"), "default");
  SotwSession session("", clock_, &proxy, &stats_, &views_);
  session.OnSnapshot(
      Build({EdsCluster("a"), Endpoints("a", 80), EdsCluster("b"), Endpoints("b", 80)}));
  ASSERT_TRUE(session.OnRequest(Sotw(type_url::kCluster)).ok());
  auto first = session.NextResponse();
  ASSERT_TRUE(first.has_value());

  ClientStatusResponse sent = Answer({proxy.View()});
  ASSERT_EQ(sent.config_size(), 1);
  EXPECT_EQ(sent.config(0).node().id(), "envoy-1");
  EXPECT_EQ(sent.config(0).node().extensions_size(), 0) << "Envoy's extension list is dropped";
  ASSERT_EQ(sent.config(0).generic_xds_configs_size(), 2);
  const auto* a = Find(sent.config(0), "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->client_status(), ClientResourceStatus::REQUESTED);
  EXPECT_EQ(a->config_status(), ConfigStatus::STALE);
  EXPECT_EQ(a->type_url(), type_url::kCluster);
  EXPECT_EQ(a->xds_config().type_url(), type_url::kCluster);

  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(session.OnRequest(Sotw(type_url::kCluster, {}, first->nonce, first->version)).ok());
  ClientStatusResponse acked = Answer({proxy.View()});
  a = Find(acked.config(0), "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->client_status(), ClientResourceStatus::ACKED);
  EXPECT_EQ(a->config_status(), ConfigStatus::SYNCED);
  const std::string a_version = a->version_info();
  EXPECT_FALSE(a_version.empty());
  EXPECT_EQ(a->last_updated().seconds(), absl::ToUnixSeconds(clock_.Now()));

  // "a" changes, "b" goes; the proxy rejects the update.
  session.OnSnapshot(Build({EdsCluster("a", 7), Endpoints("a", 80)}));
  auto second = session.NextResponse();
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(session
                  .OnRequest(Sotw(type_url::kCluster, {}, second->nonce, first->version,
                                  "cluster a: bad timeout"))
                  .ok());
  ClientStatusResponse nacked = Answer({proxy.View()});
  a = Find(nacked.config(0), "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->client_status(), ClientResourceStatus::NACKED);
  EXPECT_EQ(a->config_status(), ConfigStatus::ERROR);
  EXPECT_EQ(a->version_info(), a_version) << "the version the proxy still holds";
  EXPECT_EQ(a->error_state().details(), "cluster a: bad timeout");
  EXPECT_EQ(a->error_state().version_info(), second->version);
  EXPECT_EQ(a->error_state().failed_configuration().type_url(), type_url::kCluster);
  const auto* b = Find(nacked.config(0), "b");
  ASSERT_NE(b, nullptr) << "the proxy keeps b: it rejected the update that removed it";
  EXPECT_EQ(b->client_status(), ClientResourceStatus::ACKED);
}

TEST_F(ClientStatusTest, ANameTheSnapshotLacksDoesNotExist) {
  ProxyState proxy(1, "eds-sotw", "peer", absl::UnixEpoch());
  proxy.SetNode(NodeOf("grpc-1"), "default");
  SotwSession session(std::string(type_url::kClusterLoadAssignment), clock_, &proxy, &stats_,
                      &views_);
  session.OnSnapshot(Build({EdsCluster("a"), Endpoints("a", 80)}));
  ASSERT_TRUE(session.OnRequest(Sotw(type_url::kClusterLoadAssignment, {"a", "gone"})).ok());
  auto response = session.NextResponse();
  ASSERT_TRUE(response.has_value());
  ASSERT_TRUE(session
                  .OnRequest(Sotw(type_url::kClusterLoadAssignment, {"a", "gone"}, response->nonce,
                                  response->version))
                  .ok());
  ClientStatusResponse answer = Answer({proxy.View()});
  const auto* gone = Find(answer.config(0), "gone");
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->client_status(), ClientResourceStatus::DOES_NOT_EXIST);
  EXPECT_FALSE(gone->has_xds_config());
  EXPECT_EQ(Find(answer.config(0), "a")->client_status(), ClientResourceStatus::ACKED);
}

TEST_F(ClientStatusTest, DeltaStreamsReportWhatTheirAcksCovered) {
  ProxyState proxy(1, "ads-delta", "peer", absl::UnixEpoch());
  proxy.SetNode(NodeOf("envoy-d"), "default");
  DeltaSession session("", clock_, &proxy, &stats_, &views_);
  session.OnSnapshot(Build({EdsCluster("a"), Endpoints("a", 80)}));
  DeltaDiscoveryRequest request;
  request.set_type_url(std::string(type_url::kCluster));
  ASSERT_TRUE(session.OnRequest(request).ok());
  auto first = session.NextResponse();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(Find(Answer({proxy.View()}).config(0), "a")->client_status(),
            ClientResourceStatus::REQUESTED);
  request.set_response_nonce(first->nonce);
  ASSERT_TRUE(session.OnRequest(request).ok());
  EXPECT_EQ(Find(Answer({proxy.View()}).config(0), "a")->client_status(),
            ClientResourceStatus::ACKED);
}

TEST_F(ClientStatusTest, SecretsAreRedactedAndContentsCanBeLeftOut) {
  envoy::extensions::transport_sockets::tls::v3::Secret secret;
  secret.set_name("gateway-cert");
  auto* tls = secret.mutable_tls_certificate();
  tls->mutable_certificate_chain()->set_inline_string("-----BEGIN CERTIFICATE-----");
  tls->mutable_private_key()->set_inline_string("-----BEGIN PRIVATE KEY----- secret");
  ProxyState proxy(1, "ads-sotw", "peer", absl::UnixEpoch());
  proxy.SetNode(NodeOf("envoy-1"), "default");
  SotwSession session("", clock_, &proxy, &stats_, &views_);
  session.OnSnapshot(Build({Resource::FromMessage("gateway-cert", secret)}));
  ASSERT_TRUE(session.OnRequest(Sotw(type_url::kSecret, {"gateway-cert"})).ok());
  ASSERT_TRUE(session.NextResponse().has_value());

  const ClientStatusResponse full = Answer({proxy.View()});
  const auto* shown = Find(full.config(0), "gateway-cert");
  ASSERT_NE(shown, nullptr);
  envoy::extensions::transport_sockets::tls::v3::Secret read;
  ASSERT_TRUE(shown->xds_config().UnpackTo(&read));
  EXPECT_EQ(read.tls_certificate().private_key().inline_string(), kRedacted);
  EXPECT_EQ(read.tls_certificate().certificate_chain().inline_string(),
            "-----BEGIN CERTIFICATE-----");

  ClientStatusRequest bare;
  bare.set_exclude_resource_contents(true);
  const ClientStatusResponse without = Answer({proxy.View()}, bare);
  shown = Find(without.config(0), "gateway-cert");
  ASSERT_NE(shown, nullptr);
  EXPECT_FALSE(shown->has_xds_config());
  EXPECT_FALSE(shown->version_info().empty());
}

TEST_F(ClientStatusTest, NodeMatchersSelectByIdAndMetadataAndStreamsOfANodeAreOneConfig) {
  std::vector<ProxyView> proxies;
  for (auto [stream, id, zone] : std::vector<std::tuple<uint64_t, std::string, std::string>>{
           {1, "shop-1", "a"}, {2, "shop-1", "a"}, {3, "shop-2", "b"}, {4, "billing-1", "a"}}) {
    ProxyState proxy(stream, "cds-sotw", "peer", absl::UnixEpoch());
    proxy.SetNode(NodeOf(id, zone), "default");
    proxies.push_back(proxy.View());
  }
  EXPECT_EQ(Answer(proxies).config_size(), 3) << "shop-1's two streams are one node";

  ClientStatusRequest by_id;
  by_id.add_node_matchers()->mutable_node_id()->set_prefix("shop-");
  ClientStatusResponse shops = Answer(proxies, by_id);
  ASSERT_EQ(shops.config_size(), 2);
  EXPECT_EQ(shops.config(0).node().id(), "shop-1");
  EXPECT_EQ(shops.config(1).node().id(), "shop-2");

  ClientStatusRequest by_zone = by_id;
  auto* zone = by_zone.mutable_node_matchers(0)->add_node_metadatas();
  zone->add_path()->set_key("zone");
  zone->mutable_value()->mutable_string_match()->set_exact("b");
  ClientStatusResponse in_b = Answer(proxies, by_zone);
  ASSERT_EQ(in_b.config_size(), 1);
  EXPECT_EQ(in_b.config(0).node().id(), "shop-2");

  ClientStatusRequest either = by_zone;  // OR across matchers
  either.add_node_matchers()->mutable_node_id()->set_exact("billing-1");
  EXPECT_EQ(Answer(proxies, either).config_size(), 2);

  ClientStatusRequest bad;
  bad.add_node_matchers()->mutable_node_id()->mutable_safe_regex()->set_regex("(shop");
  absl::StatusOr<ClientStatusResponse> refused = AnswerClientStatus(bad, proxies);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "node_matchers[0].node_id.safe_regex"))
      << refused.status();
}

TEST_F(ClientStatusTest, AnAnswerTooLargeIsRefusedWithAWayOut) {
  ProxyState proxy(1, "ads-sotw", "peer", absl::UnixEpoch());
  proxy.SetNode(NodeOf("envoy-1"), "default");
  SotwSession session("", clock_, &proxy, &stats_, &views_);
  session.OnSnapshot(
      Build({EdsCluster("a"), Endpoints("a", 80), EdsCluster("b"), Endpoints("b", 80)}));
  ASSERT_TRUE(session.OnRequest(Sotw(type_url::kCluster)).ok());
  ASSERT_TRUE(session.NextResponse().has_value());
  std::vector<ProxyView> fleet(50, proxy.View());
  for (size_t i = 0; i < fleet.size(); ++i) fleet[i].node_id = "envoy-" + std::to_string(i);
  absl::StatusOr<ClientStatusResponse> big = AnswerClientStatus({}, fleet, /*max_bytes=*/2000);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(big.status().message(), "node_matchers")) << big.status();
  EXPECT_TRUE(AnswerClientStatus({}, fleet).ok()) << "within the default bound";
}

}  // namespace
}  // namespace holdfast
