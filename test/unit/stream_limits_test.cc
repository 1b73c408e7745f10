// Every limit a client can run into ends its stream with a status naming the
// limit, and nothing a client sends becomes a metric label.
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "src/common/token_bucket.h"
#include "src/xds/delta_session.h"
#include "src/xds/sotw_session.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryRequest;

constexpr StreamLimits kSmall{.max_types = 3, .max_type_url_bytes = 64, .max_names_per_type = 5};

DiscoveryRequest Sotw(const std::string& type, int names = 0) {
  DiscoveryRequest request;
  request.set_type_url(type);
  for (int i = 0; i < names; ++i) request.add_resource_names(absl::StrCat("n", i));
  return request;
}

DeltaDiscoveryRequest Delta(const std::string& type, int first, int count) {
  DeltaDiscoveryRequest request;
  request.set_type_url(type);
  for (int i = first; i < first + count; ++i)
    request.add_resource_names_subscribe(absl::StrCat("n", i));
  return request;
}

class StreamLimitsTest : public ::testing::Test {
 protected:
  SimulatedClock clock_;
  MetricsRegistry metrics_;
  XdsStats stats_{&metrics_};
  ProxyState proxy_{1, "ads", "test", absl::UnixEpoch()};
  ViewCache views_;
};

void ExpectLimit(const absl::Status& status, absl::StatusCode code, absl::string_view names) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), names)) << status;
}

TEST_F(StreamLimitsTest, SotwTypesTypeUrlsAndNamesAreBounded) {
  SotwSession session("", clock_, &proxy_, &stats_, &views_, kSmall);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(session.OnRequest(Sotw(absl::StrCat("t", i))).ok());
  ASSERT_TRUE(session.OnRequest(Sotw("t0", 5)).ok()) << "a known type is not a new one";
  ExpectLimit(session.OnRequest(Sotw("t3")), absl::StatusCode::kResourceExhausted,
              "at most 3 resource types");
  SotwSession fresh("", clock_, &proxy_, &stats_, &views_, kSmall);
  ExpectLimit(fresh.OnRequest(Sotw(std::string(65, 'x'))), absl::StatusCode::kInvalidArgument,
              "type_url is 65 bytes; the limit is 64");
  ExpectLimit(fresh.OnRequest(Sotw("t0", 6)), absl::StatusCode::kResourceExhausted,
              "at most 5 names of one type");
}

TEST_F(StreamLimitsTest, DeltaNamesAreBoundedBeforeTheWork) {
  DeltaSession session("", clock_, &proxy_, &stats_, &views_, kSmall);
  ASSERT_TRUE(session.OnRequest(Delta("t", 0, 3)).ok());
  ASSERT_TRUE(session.OnRequest(Delta("t", 3, 2)).ok());
  ExpectLimit(session.OnRequest(Delta("t", 5, 1)), absl::StatusCode::kResourceExhausted,
              "at most 5 names of one type");
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(session.OnRequest(Delta(absl::StrCat("u", i), 0, 1)).ok());
  ExpectLimit(session.OnRequest(Delta("u2", 0, 1)), absl::StatusCode::kResourceExhausted,
              "at most 3 resource types");
}

// 20,000 requests with distinct type URLs once made 120,000 metric series.
TEST_F(StreamLimitsTest, MetricLabelsComeFromAClosedSet) {
  for (int i = 0; i < 1000; ++i) {
    SotwSession session("", clock_, &proxy_, &stats_, &views_);
    const std::string type = absl::StrCat("type.googleapis.com/made.up.Type", i);
    DiscoveryRequest request = Sotw(type);
    ASSERT_TRUE(session.OnRequest(request).ok());
    request.set_response_nonce("stale");
    ASSERT_TRUE(session.OnRequest(request).ok());  // counted as a stale request
  }
  const std::string text = metrics_.RenderPrometheus();
  EXPECT_FALSE(absl::StrContains(text, "made.up")) << text;
  EXPECT_TRUE(absl::StrContains(text, "holdfast_xds_stale_requests_total{type_url=\"other\"} 1000"))
      << text;
  EXPECT_EQ(TypeUrlLabel(type_url::kCluster), type_url::kCluster);
  EXPECT_EQ(TypeUrlLabel("type.googleapis.com/envoy.config.cluster.v3.ClusterX"), "other");
}

TEST(TokenBucketTest, AllowsTheBurstThenTheRate) {
  SimulatedClock clock;
  TokenBucket bucket(clock, /*rate=*/10, /*burst=*/20);
  int taken = 0;
  while (bucket.TryTake()) ++taken;
  EXPECT_EQ(taken, 20);
  clock.Advance(absl::Milliseconds(500));
  taken = 0;
  while (bucket.TryTake()) ++taken;
  EXPECT_EQ(taken, 5);
  clock.Advance(absl::Hours(1));
  taken = 0;
  while (bucket.TryTake()) ++taken;
  EXPECT_EQ(taken, 20) << "never more than the burst";
}

}  // namespace
}  // namespace holdfast
