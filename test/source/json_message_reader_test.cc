#include "src/source/json_message_reader.h"

#include <memory>
#include <string>
#include <vector>

#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

using google::protobuf::Message;
using Json = nlohmann::json;

// What protobuf's own reader makes of `json`, or null if it refuses it.
std::unique_ptr<Message> ByProtobuf(const Json& json, const Message& prototype) {
  std::unique_ptr<Message> message(prototype.New());
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const std::string text = json.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (!google::protobuf::util::JsonStringToMessage(text, message.get(), options).ok()) return {};
  return message;
}

// Whether the fast reader took `json`; if it did, it must agree with protobuf.
bool TakenAndAgrees(const Json& json, const Message& prototype) {
  std::unique_ptr<Message> fast(prototype.New());
  if (!ReadJsonMessageExactly(json, fast.get())) return false;
  std::unique_ptr<Message> reference = ByProtobuf(json, prototype);
  EXPECT_NE(reference, nullptr) << "taken, but protobuf refuses: " << json.dump();
  if (reference != nullptr) {
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*fast, *reference))
        << json.dump() << "\nfast:     " << fast->ShortDebugString()
        << "\nprotobuf: " << reference->ShortDebugString();
  }
  return true;
}

const envoy::config::endpoint::v3::ClusterLoadAssignment kEmptyAssignment;
const envoy::config::cluster::v3::Cluster kEmptyCluster;
const envoy::config::route::v3::RouteConfiguration kEmptyRoutes;

const Json kAssignmentJson = Json::parse(R"({
  "cluster_name": "c-1",
  "endpoints": [{"locality": {"region": "r", "zone": "z", "sub_zone": "g7"},
                 "load_balancing_weight": 1, "priority": 2,
                 "lb_endpoints": [
                   {"endpoint": {"address": {"socket_address":
                       {"address": "127.0.0.1", "port_value": 8080, "protocol": "UDP"}}},
                    "loadBalancingWeight": 0, "health_status": "HEALTHY"},
                   {"endpoint": {"address": {"socketAddress":
                       {"address": "::1", "portValue": 4294967295, "ipv4_compat": true}}}}]}],
  "policy": {"overprovisioning_factor": 140, "endpoint_stale_after": "-0.25s"}
})");

const Json kClusterJson = Json::parse(R"({
  "name": "c-1", "type": "EDS", "connect_timeout": "1.5s", "lbPolicy": "LEAST_REQUEST",
  "eds_cluster_config": {"eds_config": {"ads": {}, "resource_api_version": "V3"},
                         "service_name": "svc"},
  "common_lb_config": {"healthy_panic_threshold": {"value": 12.5}},
  "per_connection_buffer_limit_bytes": 32768, "dns_refresh_rate": "0.000000001s",
  "outlier_detection": {"consecutive_5xx": 3, "interval": "10s"}
})");

TEST(JsonMessageReaderTest, CommonShapesAreReadAsProtobufReadsThem) {
  EXPECT_TRUE(TakenAndAgrees(kAssignmentJson, kEmptyAssignment));
  EXPECT_TRUE(TakenAndAgrees(kClusterJson, kEmptyCluster));
  EXPECT_TRUE(TakenAndAgrees(Json::object(), kEmptyRoutes));
}

TEST(JsonMessageReaderTest, WhatProtobufMightReadDifferentlyIsLeftToIt) {
  const std::vector<std::string> kDeclined = {
      R"({"cluster_name": "a", "clusterName": "b"})",               // one field twice
      R"({"cluster_name": "a", "unknown": 1})",                      // unknown field
      R"({"cluster_name": null})",                                   // null
      R"({"endpoints": [{"priority": "2"}]})",                       // number in a string
      R"({"endpoints": [{"priority": -1}]})",                        // out of range
      R"({"endpoints": [{"priority": 4294967296}]})",                // out of range
      R"({"endpoints": [{"priority": 1.0}]})",                       // not an integer
      R"({"endpoints": {"priority": 1}})",                           // not a list
      R"({"endpoints": [null]})",                                    // null in a list
      R"({"policy": {"endpoint_stale_after": "1.0000000001s"}})",    // ten digits
      R"({"policy": {"endpoint_stale_after": "1m"}})",               // not seconds
      R"({"policy": {"endpoint_stale_after": "315576000000s"}})",    // beyond the limit
      R"({"endpoints": [{"lb_endpoints": [{"health_status": 1}]}]})",  // enum by number
      R"({"endpoints": [{"lb_endpoints": [{"health_status": "FINE"}]}]})",
      R"({"endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address":
          {"port_value": 1, "named_port": "http"}}}}]}]})",          // two of one oneof
      R"({"named_endpoints": {"a": {}}})",                           // a map
  };
  for (const std::string& text : kDeclined) {
    envoy::config::endpoint::v3::ClusterLoadAssignment message;
    EXPECT_FALSE(ReadJsonMessageExactly(Json::parse(text), &message)) << text;
  }
  // The document reader lets invalid UTF-8 through (protobuf then names the
  // field); nlohmann's own parser would refuse it.
  Json invalid_utf8;
  invalid_utf8["cluster_name"] = std::string("a\xff");
  envoy::config::endpoint::v3::ClusterLoadAssignment message;
  EXPECT_FALSE(ReadJsonMessageExactly(invalid_utf8, &message));
  const std::vector<std::string> kClusterDeclined = {
      R"({"typed_extension_protocol_options": {"a": {}}})",            // map of Any
      R"({"metadata": {"filter_metadata": {"a": {"k": 1}}}})",         // Struct
      R"({"load_assignment": {"policy": {"weighted_priority_health": true}},
          "transport_socket": {"typed_config": {"@type": "x"}}})",     // Any
      R"({"upstream_bind_config": {"freebind": true},
          "lrs_server": {"self": {}}, "load_balancing_policy": {"policies": [
          {"typed_extension_config": {"name": "n", "typed_config": {}}}]}})",
  };
  for (const std::string& text : kClusterDeclined) {
    envoy::config::cluster::v3::Cluster message;
    EXPECT_FALSE(ReadJsonMessageExactly(Json::parse(text), &message)) << text;
  }
}

// Every value of the samples replaced, one at a time, by values of other
// kinds: whatever the fast reader takes, protobuf reads the same way.
TEST(JsonMessageReaderTest, AgreesWithProtobufOnEveryOneValueMutation) {
  const std::vector<Json> kReplacements = {
      0, 1, -1, 4294967295u, 4294967296u, 9007199254740993u, -9223372036854775807 - 1, 0.5,
      -0.0, 1e300, true, false, nullptr, "", "x", "8080", "1s", "-1.5s", "HEALTHY", "V3",
      Json::object(), Json::array(), Json::array({1}), Json::array({"a"}), Json::array({{}})};
  int taken = 0, tried = 0;
  const struct {
    const Json& sample;
    const Message* prototype;
  } kSamples[] = {{kAssignmentJson, &kEmptyAssignment}, {kClusterJson, &kEmptyCluster}};
  for (const auto& [sample, prototype] : kSamples) {
    const Json flat = sample.flatten();
    std::vector<Json::json_pointer> places;
    for (const auto& [pointer, value] : flat.items()) {
      Json::json_pointer place(pointer);
      // Every leaf and every enclosing value up to the root's children.
      for (; !place.empty() && !place.parent_pointer().empty(); place = place.parent_pointer()) {
        places.push_back(place);
      }
      if (!place.empty()) places.push_back(place);
    }
    for (const Json::json_pointer& place : places) {
      for (const Json& replacement : kReplacements) {
        Json mutated = sample;
        mutated[place] = replacement;
        ++tried;
        if (TakenAndAgrees(mutated, *prototype)) ++taken;
      }
    }
  }
  // Most replacements are of a kind the field cannot take; enough must be
  // taken for the comparison to prove something (160 of 2,550 when written).
  EXPECT_GE(taken, 100) << taken << " of " << tried;
  EXPECT_LT(taken, tried / 2) << taken << " of " << tried;
}

}  // namespace
}  // namespace holdfast
