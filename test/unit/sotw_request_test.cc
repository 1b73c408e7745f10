#include "src/xds/sotw_request.h"

#include "gtest/gtest.h"
#include "src/common/protowire.h"

namespace holdfast {
namespace {

using envoy::service::discovery::v3::DiscoveryRequest;

TEST(SotwRequestTest, ReadsWhatProtobufReads) {
  DiscoveryRequest message;
  message.set_version_info("v1");
  message.set_type_url("type.googleapis.com/envoy.config.cluster.v3.Cluster");
  message.set_response_nonce("7");
  message.add_resource_names("b");
  message.add_resource_names("a");
  message.mutable_node()->set_id("proxy-1");
  message.mutable_error_detail()->set_code(3);
  message.mutable_error_detail()->set_message("cluster c1: é");
  const std::string bytes = message.SerializeAsString();

  SotwRequest request;
  std::optional<envoy::config::core::v3::Node> node;
  ASSERT_TRUE(ParseSotwRequest(bytes, &request, &node).ok());
  EXPECT_EQ(request.version_info, "v1");
  EXPECT_EQ(request.type_url, message.type_url());
  EXPECT_EQ(request.response_nonce, "7");
  std::vector<absl::string_view> names;
  ASSERT_TRUE(ReadResourceNames(request.names_wire, &names).ok());
  EXPECT_EQ(names, (std::vector<absl::string_view>{"b", "a"}));
  EXPECT_EQ(request.names_wire, SotwRequest::Of(message).names_wire);
  EXPECT_TRUE(request.has_error_detail);
  EXPECT_EQ(request.error_code, 3);
  EXPECT_EQ(request.error_message, "cluster c1: é");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->id(), "proxy-1");
}

TEST(SotwRequestTest, RefusesWhatProtobufRefuses) {
  DiscoveryRequest message;
  message.set_type_url("t");
  message.add_resource_names("ok");
  std::string bytes = message.SerializeAsString();
  SotwRequest request;
  std::optional<envoy::config::core::v3::Node> node;
  EXPECT_FALSE(ParseSotwRequest(bytes.substr(0, bytes.size() - 1), &request, &node).ok())
      << "truncated";
  std::string not_utf8 = bytes;
  not_utf8.replace(not_utf8.find("ok"), 2, "\xff\xfe");
  EXPECT_FALSE(message.ParseFromString(not_utf8));
  // The names' UTF-8 is checked when they are read, not when the rest is.
  ASSERT_TRUE(ParseSotwRequest(not_utf8, &request, &node).ok());
  std::vector<absl::string_view> names;
  absl::Status status = ReadResourceNames(request.names_wire, &names);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("UTF-8"), absl::string_view::npos) << status;
}

// names_wire spans every resource_names field, whatever lies between them,
// so equal bytes mean equal names and a changed name changes the bytes.
TEST(SotwRequestTest, NamesWireSpansInterleavedNames) {
  std::string bytes;
  AppendLengthDelimited(3, "a", &bytes);
  AppendLengthDelimited(4, "t", &bytes);
  AppendLengthDelimited(3, "b", &bytes);
  AppendLengthDelimited(5, "n", &bytes);
  SotwRequest request;
  std::optional<envoy::config::core::v3::Node> node;
  ASSERT_TRUE(ParseSotwRequest(bytes, &request, &node).ok());
  EXPECT_EQ(request.type_url, "t");
  EXPECT_EQ(request.response_nonce, "n");
  EXPECT_EQ(request.names_wire, absl::string_view(bytes).substr(0, 9));
  std::vector<absl::string_view> names;
  ASSERT_TRUE(ReadResourceNames(request.names_wire, &names).ok());
  EXPECT_EQ(names, (std::vector<absl::string_view>{"a", "b"}));

  std::string none;
  AppendLengthDelimited(4, "t", &none);
  ASSERT_TRUE(ParseSotwRequest(none, &request, &node).ok());
  EXPECT_TRUE(request.names_wire.empty());
}

}  // namespace
}  // namespace holdfast
