#include "src/rollout/held_objects.h"

#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "src/source/config_files.h"
#include "src/translate/translator.h"

namespace holdfast {
namespace {

// Two upstreams, a service routing to both, a gateway serving it.
constexpr char kObjects[] = R"(
apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: a, namespace: ns}
spec: {hosts: [{address: 127.0.0.1, port: 8001}]}
---
apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: b, namespace: ns}
spec: {hosts: [{address: 127.0.0.1, port: 8002}]}
---
apiVersion: holdfast.dev/v1
kind: VirtualService
metadata: {name: shop, namespace: ns}
spec:
  domains: [shop.test]
  routes:
  - match: {prefix: /b}
    upstream: b
  - match: {prefix: /}
    upstream: a
---
apiVersion: holdfast.dev/v1
kind: VirtualService
metadata: {name: other, namespace: ns}
spec:
  domains: [other.test]
  routes:
  - match: {prefix: /}
    upstream: b
---
apiVersion: holdfast.dev/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  port: 8080
  virtualServices: [{name: shop}, {name: other}]
)";

SnapshotPtr Translate(const std::string& yaml) {
  std::map<std::string, DecodedFile> files{{"objects.yaml", DecodeObjects(yaml, "objects.yaml")}};
  StatusMap file_statuses;
  Translator translator;
  TranslationOutput out = translator.Translate(AssembleInput(files, {}, &file_statuses));
  for (const auto& [key, status] : out.statuses) {
    EXPECT_EQ(status.state, StatusState::kAccepted) << key.ToString();
  }
  absl::StatusOr<SnapshotPtr> snapshot = Snapshot::Build(out.resources, absl::UnixEpoch());
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  return *snapshot;
}

// kObjects with each `from` replaced by its `to`.
std::string Replace(
    std::initializer_list<std::pair<absl::string_view, absl::string_view>> replacements) {
  std::string changed = kObjects;
  for (const auto& [from, to] : replacements) {
    EXPECT_TRUE(absl::StrContains(changed, from)) << from;
    changed = absl::StrReplaceAll(changed, {{from, to}});
  }
  return changed;
}

// "Kind ns/name" -> serving_last_good, checking every status is a hold.
std::map<std::string, bool> Held(const StatusMap& statuses) {
  std::map<std::string, bool> held;
  for (const auto& [key, status] : statuses) {
    EXPECT_EQ(status.key, key);
    EXPECT_EQ(status.state, StatusState::kRejected) << key.ToString();
    EXPECT_EQ(status.reasons.size(), 1u) << key.ToString();
    if (!status.reasons.empty()) {
      EXPECT_TRUE(absl::StrContains(status.reasons[0].message, "held by the staged rollout"));
      EXPECT_TRUE(absl::StrContains(status.reasons[0].message, "2 of 3 canaries rejected"));
    }
    held[key.ToString()] = status.serving_last_good;
  }
  return held;
}

constexpr char kReason[] = "2 of 3 canaries rejected v2 (node-1: bad port)";

TEST(HeldObjectsTest, ARejectedClusterIsReportedOnItsUpstreamOnly) {
  const SnapshotPtr stable = Translate(kObjects);
  const SnapshotPtr candidate = Translate(Replace({{"port: 8001", "port: 9001"}}));
  EXPECT_EQ(
      Held(HeldObjectStatuses(*stable, *candidate, type_url::kClusterLoadAssignment, kReason)),
      (std::map<std::string, bool>{{"Upstream ns/a", true}}));
  EXPECT_TRUE(HeldObjectStatuses(*stable, *candidate, type_url::kListener, kReason).empty())
      << "the change made no listener differ";
}

TEST(HeldObjectsTest, ARejectedRouteConfigurationIsReportedOnTheServiceWhoseRoutesChanged) {
  const SnapshotPtr stable = Translate(kObjects);
  const SnapshotPtr candidate = Translate(Replace({{"prefix: /b}", "prefix: /bee}"}}));
  // The gateway's route configuration and the service's own for gRPC
  // clients both changed; the unchanged service is not blamed, nor the
  // gateway that merely serves it.
  EXPECT_EQ(Held(HeldObjectStatuses(*stable, *candidate, type_url::kRouteConfiguration, kReason)),
            (std::map<std::string, bool>{{"VirtualService ns/shop", true}}));
}

TEST(HeldObjectsTest, ANewObjectHeldHasNoLastGoodVersionServed) {
  const SnapshotPtr stable = Translate(kObjects);
  const SnapshotPtr candidate = Translate(absl::StrCat(kObjects, R"(---
apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: c, namespace: ns}
spec: {hosts: [{address: 127.0.0.1, port: 8003}]}
)"));
  EXPECT_EQ(Held(HeldObjectStatuses(*stable, *candidate, type_url::kCluster, kReason)),
            (std::map<std::string, bool>{{"Upstream ns/c", false}}));
}

TEST(HeldObjectsTest, AGatewayChangeIsReportedOnTheGateway) {
  const SnapshotPtr stable = Translate(kObjects);
  const SnapshotPtr candidate = Translate(Replace({{"port: 8080", "port: 8081"}}));
  EXPECT_EQ(Held(HeldObjectStatuses(*stable, *candidate, type_url::kListener, kReason)),
            (std::map<std::string, bool>{{"Gateway ns/gw", true}}));
}

TEST(HeldObjectsTest, AnApiListenerIsReportedOnTheServiceItRoutesTo) {
  const SnapshotPtr stable = Translate(kObjects);
  const SnapshotPtr candidate =
      Translate(Replace({{"domains: [other.test]", "domains: [other.test, more.test]"}}));
  // The new domain is an API listener of its own for gRPC clients; the
  // gateway's route configuration changes too, but only Listeners were
  // rejected.
  EXPECT_EQ(Held(HeldObjectStatuses(*stable, *candidate, type_url::kListener, kReason)),
            (std::map<std::string, bool>{{"VirtualService ns/other", false}}));
}

TEST(HeldObjectsTest, AHoldOfTheWholeCandidateIsReportedOnEveryObjectItChanges) {
  const SnapshotPtr stable = Translate(kObjects);
  const SnapshotPtr candidate =
      Translate(Replace({{"port: 8001", "port: 9001"}, {"upstream: b\n---", "upstream: a\n---"}}));
  EXPECT_EQ(
      Held(HeldObjectStatuses(*stable, *candidate, "", kReason)),
      (std::map<std::string, bool>{{"Upstream ns/a", true}, {"VirtualService ns/other", true}}));
}

TEST(HeldObjectsTest, NothingIsHeldWhenTheCandidateChangesNothingOfTheType) {
  const SnapshotPtr stable = Translate(kObjects);
  EXPECT_TRUE(HeldObjectStatuses(*stable, *stable, "", kReason).empty());
}

}  // namespace
}  // namespace holdfast
