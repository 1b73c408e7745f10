// KubeConfigSource on the in-memory API: what the decoder reads, nothing
// published before every kind is listed, invalid objects Rejected with
// their API location while the last good version is served.
#include "src/source/kube_config_source.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "src/kube/fake_kube_api.h"

namespace holdfast {
namespace {

const KubeResource kUpstreamsCrd{"holdfast.dev", "v1", "upstreams", "Upstream"};
const KubeResource kVirtualServices{"holdfast.dev", "v1", "virtualservices", "VirtualService"};

nlohmann::json Upstream(int port) {
  return {{"metadata", {{"namespace", "shop"}, {"name", "api"}}},
          {"spec", {{"hosts", {{{"address", "10.0.0.1"}, {"port", port}}}}}}};
}

nlohmann::json Service(const std::string& regex) {
  return {{"metadata", {{"namespace", "shop"}, {"name", "store"}}},
          {"spec",
           {{"domains", {"store.example.com"}},
            {"routes", {{{"match", {{"regex", regex}}}, {"upstream", "api"}}}}}}};
}

TEST(KubeDecoderTextTest, KeepsIdentityAndSpecOnly) {
  nlohmann::json object = {{"apiVersion", "holdfast.dev/v1"},
                           {"kind", "Upstream"},
                           {"metadata",
                            {{"name", "api"},
                             {"namespace", "shop"},
                             {"labels", {{"tier", "web"}}},
                             {"uid", "u"},
                             {"resourceVersion", "12"},
                             {"generation", 3},
                             {"managedFields", nlohmann::json::array()},
                             {"annotations", {{"a", "b"}}}}},
                           {"spec", {{"hosts", nlohmann::json::array()}}},
                           {"status", {{"state", "Accepted"}}}};
  nlohmann::json text = nlohmann::json::parse(KubeConfigSource::DecoderText(object));
  EXPECT_EQ(
      text,
      (nlohmann::json{
          {"apiVersion", "holdfast.dev/v1"},
          {"kind", "Upstream"},
          {"metadata", {{"name", "api"}, {"namespace", "shop"}, {"labels", {{"tier", "web"}}}}},
          {"spec", {{"hosts", nlohmann::json::array()}}}}));
}

class KubeSourceTest : public ::testing::Test {
 protected:
  void SetUp() override { api_.set_linger(absl::Milliseconds(200)); }
  void TearDown() override {
    if (source_) source_->Stop();
  }
  void Start() {
    KubeConfigSource::Options options;
    options.apply_interval = absl::Milliseconds(20);
    options.min_backoff = absl::Milliseconds(10);
    source_ = std::make_unique<KubeConfigSource>(options, &api_, Clock::Real(), Random::Real(),
                                                 &metrics_, [this](SnapshotPtr s) {
                                                   absl::MutexLock lock(&mu_);
                                                   latest_ = std::move(s);
                                                   ++published_;
                                                 });
    source_->Start();
  }
  // Waits up to 20 s for `condition`; the condition is the assertion.
  bool Eventually(const std::function<bool()>& condition) {
    for (int i = 0; i < 2000; ++i) {
      if (condition()) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }
  std::string LatestDebug() {
    absl::MutexLock lock(&mu_);
    std::string out;
    if (latest_ == nullptr) return out;
    for (const auto& [name, r] :
         latest_->Resources("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment")) {
      out += name + ": " + r->message()->ShortDebugString() + "\n";
    }
    return out;
  }
  int published() {
    absl::MutexLock lock(&mu_);
    return published_;
  }
  bool Serves(const std::string& text) {
    absl::MutexLock lock(&mu_);
    if (latest_ == nullptr) return false;
    const auto& endpoints =
        latest_->Resources("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment");
    auto it = endpoints.find("shop/api");
    return it != endpoints.end() && it->second->message() != nullptr &&
           absl::StrContains(it->second->message()->ShortDebugString(), text);
  }

  FakeKubeApi api_;
  MetricsRegistry metrics_;
  std::unique_ptr<KubeConfigSource> source_;
  absl::Mutex mu_;
  SnapshotPtr latest_ ABSL_GUARDED_BY(mu_);
  int published_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST_F(KubeSourceTest, NothingIsPublishedUntilEveryKindIsListed) {
  api_.Put(kUpstreamsCrd, Upstream(8080));
  // The first listings fail, whichever kinds they are for.
  api_.FailNext(FakeKubeApi::Call::kList, absl::UnavailableError("down"));
  api_.FailNext(FakeKubeApi::Call::kList, absl::UnavailableError("down"));
  Start();
  ASSERT_TRUE(Eventually([&] { return Serves("port_value: 8080"); }));
  EXPECT_EQ(published(), 1) << "one complete set, never a partial one first";
  EXPECT_TRUE(source_->health().synced_once);
  EXPECT_TRUE(source_->health().connected);
  EXPECT_GE(api_.calls(FakeKubeApi::Call::kList), 6);
}

TEST_F(KubeSourceTest, InvalidObjectIsRejectedWithItsLocationAndLastGoodKept) {
  api_.Put(kUpstreamsCrd, Upstream(8080));
  api_.Put(kVirtualServices, Service("/a.*"));
  Start();
  const ObjectKey key{"VirtualService", "shop", "store"};
  ASSERT_TRUE(Eventually([&] {
    StatusMap statuses = source_->statuses();
    return statuses.contains(key) && statuses.at(key).state == StatusState::kAccepted;
  }));
  api_.Put(kVirtualServices, Service("(unclosed"));
  ASSERT_TRUE(Eventually([&] {
    StatusMap statuses = source_->statuses();
    return statuses.contains(key) && statuses.at(key).state == StatusState::kRejected;
  }));
  ObjectStatus status = source_->statuses().at(key);
  EXPECT_TRUE(status.serving_last_good);
  ASSERT_FALSE(status.reasons.empty());
  EXPECT_EQ(status.reasons[0].path, "spec.routes[0].match.regex");
  EXPECT_EQ(status.reasons[0].location.file, "kubernetes:VirtualService/shop/store");
  EXPECT_EQ(status.reasons[0].location.line, 0);
  EXPECT_TRUE(Serves("port_value: 8080"));
}

TEST_F(KubeSourceTest, GoneRelistKeepsServing) {
  api_.Put(kUpstreamsCrd, Upstream(8080));
  Start();
  ASSERT_TRUE(Eventually([&] { return Serves("port_value: 8080"); }));
  // The API server forgets history and refuses the next listing once.
  api_.Compact();
  api_.FailNext(FakeKubeApi::Call::kWatch, absl::OutOfRangeError("HTTP 410: too old"));
  api_.FailNext(FakeKubeApi::Call::kList, absl::UnavailableError("down"));
  api_.Put(kUpstreamsCrd, Upstream(9090));
  ASSERT_TRUE(Eventually([&] { return Serves("port_value: 9090"); }));
}

TEST_F(KubeSourceTest, ServiceEndpointsAreServedAndFollowTheirSlices) {
  const KubeResource services{"", "v1", "services", "Service"};
  const KubeResource slices{"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"};
  api_.Put(kUpstreamsCrd, {{"metadata", {{"namespace", "shop"}, {"name", "api"}}},
                        {"spec", {{"service", {{"name", "web"}, {"port", 80}}}}}});
  Start();
  const ObjectKey key{"Upstream", "shop", "api"};
  ASSERT_TRUE(Eventually([&] {
    StatusMap statuses = source_->statuses();
    return statuses.contains(key) && statuses.at(key).state == StatusState::kWarning;
  })) << "the Service does not exist yet";
  auto slice = [](const std::string& address) {
    return nlohmann::json{{"metadata",
                           {{"namespace", "shop"},
                            {"name", "web-1"},
                            {"labels", {{"kubernetes.io/service-name", "web"}}}}},
                          {"addressType", "IPv4"},
                          {"ports", {{{"name", "http"}, {"port", 8080}}}},
                          {"endpoints", {{{"addresses", {address}}, {"zone", "zone-a"}}}}};
  };
  api_.Put(slices, slice("10.1.0.1"));
  api_.Put(services, {{"metadata", {{"namespace", "shop"}, {"name", "web"}}},
                      {"spec", {{"ports", {{{"name", "http"}, {"port", 80}}}}}}});
  ASSERT_TRUE(Eventually([&] { return Serves("address: \"10.1.0.1\" port_value: 8080"); }))
      << LatestDebug();
  EXPECT_EQ(source_->statuses().at(key).state, StatusState::kAccepted);
  api_.Put(slices, slice("10.1.0.2"));
  ASSERT_TRUE(Eventually([&] { return Serves("address: \"10.1.0.2\" port_value: 8080"); }));
  EXPECT_FALSE(Serves("10.1.0.1"));
}

}  // namespace
}  // namespace holdfast
