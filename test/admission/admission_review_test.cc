#include "src/admission/admission_review.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

nlohmann::json Review(const nlohmann::json& object) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request", {{"uid", "u-1"}, {"operation", "CREATE"}, {"object", object}}}};
}

nlohmann::json VirtualService(const nlohmann::json& route) {
  return {{"apiVersion", "holdfast.dev/v1"},
          {"kind", "VirtualService"},
          // What the API server adds is not the user's input.
          {"metadata",
           {{"name", "shop"},
            {"namespace", "shop"},
            {"uid", "0f2c"},
            {"resourceVersion", "17"},
            {"generation", 2},
            {"creationTimestamp", "2026-12-01T00:00:00Z"},
            {"managedFields", nlohmann::json::array()},
            {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}}}}},
          {"spec", {{"domains", {"shop.example.com"}}, {"routes", {route}}}},
          {"status", {{"state", "Accepted"}}}};
}

TEST(AdmissionReviewTest, AValidObjectIsAllowedAndTheUidEchoed) {
  nlohmann::json answer = ReviewAdmission(Review(VirtualService({{"upstream", "api"}})));
  EXPECT_EQ(answer["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(answer["kind"], "AdmissionReview");
  EXPECT_EQ(answer["response"]["uid"], "u-1");
  EXPECT_EQ(answer["response"]["allowed"], true) << answer.dump(2);
}

TEST(AdmissionReviewTest, ADecodeErrorIsDeniedWithItsFieldPath) {
  nlohmann::json answer = ReviewAdmission(
      Review(VirtualService({{"match", {{"regex", "(unclosed"}}}, {"upstream", "api"}})));
  ASSERT_EQ(answer["response"]["allowed"], false) << answer.dump(2);
  EXPECT_EQ(answer["response"]["status"]["code"], 422);
  const nlohmann::json& causes = answer["response"]["status"]["details"]["causes"];
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0]["field"], "spec.routes[0].match.regex");
  EXPECT_TRUE(absl::StrContains(answer["response"]["status"]["message"].get<std::string>(),
                                "spec.routes[0].match.regex: invalid regex"));
}

TEST(AdmissionReviewTest, WhatEnvoyWouldRefuseIsDenied) {
  nlohmann::json upstream = {{"apiVersion", "holdfast.dev/v1"},
                             {"kind", "Upstream"},
                             {"metadata", {{"name", "api"}, {"namespace", "shop"}}},
                             {"spec",
                              {{"hosts", {{{"address", "10.0.0.1"}, {"port", 80}}}},
                               {"tls", {{"sni", std::string(300, 'a')}}}}}};
  nlohmann::json answer = ReviewAdmission(Review(upstream));
  ASSERT_EQ(answer["response"]["allowed"], false) << answer.dump(2);
  EXPECT_TRUE(absl::StrContains(answer["response"]["status"]["message"].get<std::string>(),
                                "Envoy would refuse its envoy.config.cluster.v3.Cluster: "
                                "transport_socket.typed_config.sni: value length must be at most "
                                "255 bytes"))
      << answer.dump(2);
}

TEST(AdmissionReviewTest, ReferencesToObjectsNotYetCreatedAreAllowed) {
  nlohmann::json gateway = {{"apiVersion", "holdfast.dev/v1"},
                            {"kind", "Gateway"},
                            {"metadata", {{"name", "gw"}, {"namespace", "shop"}}},
                            {"spec",
                             {{"port", 8443},
                              {"virtualServices", {{{"name", "later"}}}},
                              {"tls", {{"secretRef", {{"name", "not-yet"}}}}}}}};
  EXPECT_EQ(ReviewAdmission(Review(gateway))["response"]["allowed"], true);
}

TEST(AdmissionReviewTest, GarbageIsAnsweredNotThrown) {
  EXPECT_EQ(ReviewAdmission(nlohmann::json("x"))["response"]["status"]["code"], 400);
  EXPECT_EQ(ReviewAdmission(
                nlohmann::json::parse("{\"request\": {\"uid\": \"d\"}}"))["response"]["allowed"],
            true)
      << "a DELETE carries no object";
  EXPECT_EQ(ReviewAdmission(Review(nlohmann::json::object()))["response"]["allowed"], false);
  // A uid of another type (found by the fuzzer: it threw, ending the
  // process that serves the webhook) is answered with an empty uid.
  nlohmann::json odd_uid = Review(nlohmann::json::object());
  odd_uid["request"]["uid"] = {{"x", 1}};
  nlohmann::json answer = ReviewAdmission(odd_uid);
  EXPECT_EQ(answer["response"]["uid"], "");
  EXPECT_EQ(answer["response"]["allowed"], false);
}

}  // namespace
}  // namespace holdfast
