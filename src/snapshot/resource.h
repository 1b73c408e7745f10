#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace holdfast {

// Type URLs of the resource kinds the server knows how to order and check.
namespace type_url {
inline constexpr absl::string_view kListener =
    "type.googleapis.com/envoy.config.listener.v3.Listener";
inline constexpr absl::string_view kRouteConfiguration =
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
inline constexpr absl::string_view kCluster = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
inline constexpr absl::string_view kClusterLoadAssignment =
    "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
inline constexpr absl::string_view kSecret =
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";
inline constexpr absl::string_view kRuntime =
    "type.googleapis.com/envoy.service.runtime.v3.Runtime";
// The types above, in one list: a resource knows its type's index in it
// (Resource::type_index), which groups resources by type without reading
// their type URLs.
inline constexpr std::array<absl::string_view, 6> kKnownTypes = {
    kListener, kRouteConfiguration, kCluster, kClusterLoadAssignment, kSecret, kRuntime};
inline constexpr uint8_t kUnknownType = kKnownTypes.size();
}  // namespace type_url

// A resource another resource depends on to be usable.
struct ResourceRef {
  std::string type_url;
  std::string name;
  // Where the reference is, as a field path inside the referring resource.
  std::string field_path;
};

// One xDS resource at one version: immutable once built, shared by every
// snapshot that contains it and every stream that sends it.
//
// The wire forms are encoded once, here, so that fan-out to many streams
// costs no serialization: a response is the concatenation of these bytes.
class Resource {
 public:
  // Builds a resource from a message; the type URL is the message's type.
  // The version is a digest of the deterministic serialization, so equal
  // content always gets an equal version.
  static std::shared_ptr<const Resource> FromMessage(std::string name,
                                                     const google::protobuf::Message& message);
  // Builds an opaque resource from already serialized bytes of any type.
  // With `version`, versioned by it rather than by a digest of the bytes:
  // for a resource assembled from parts whose digests are known (a
  // gateway's route configuration), and one read back from a snapshot file.
  static std::shared_ptr<const Resource> FromBytes(std::string name, std::string type_url,
                                                   std::string serialized,
                                                   std::string version = "");

  const std::string& name() const { return name_; }
  const std::string& type_url() const { return type_url_; }
  const std::string& version() const { return version_; }
  // The index of type_url() in type_url::kKnownTypes, or kUnknownType.
  uint8_t type_index() const { return type_index_; }
  // A digest of the name and version alone. A set of resources is
  // versioned by the sum of these (VersionSum): one entry added or removed
  // changes the sum without reading the others.
  const std::array<uint64_t, 2>& entry_digest() const { return entry_digest_; }
  // False when the version was given (FromBytes): it cannot be derived
  // from the bytes again, so a snapshot file stores it.
  bool version_is_content_digest() const { return !version_given_; }
  // The serialized message (the value of its Any).
  const std::string& serialized() const { return serialized_; }
  // Appends the `resources` entry of a DiscoveryResponse (tag, length,
  // google.protobuf.Any) or, with `delta`, of a DeltaDiscoveryResponse (tag,
  // length, Resource). Only the few header bytes are kept apart from the
  // serialized message, so a resource holds its content once.
  void AppendWire(bool delta, std::string* out) const;
  size_t WireSize(bool delta) const;
  // The parsed message, when the type is linked in; nullptr for opaque types.
  // Resources built from bytes are parsed on first use (debug output,
  // validation), not on the serving path.
  const google::protobuf::Message* message() const;
  // ReferencesOf(*this), found once: every snapshot that shares the
  // resource checks them (src/snapshot/references.cc).
  const std::vector<ResourceRef>& references() const;

 private:
  Resource() = default;
  void Encode();

  std::string name_;
  std::string type_url_;
  std::string version_;
  bool version_given_ = false;
  uint8_t type_index_ = type_url::kUnknownType;
  std::array<uint64_t, 2> entry_digest_ = {};
  std::string serialized_;
  // What comes before and after serialized_ in each wire form.
  std::string sotw_head_;
  std::string delta_head_;
  std::string delta_tail_;
  // absl's once reads a flag inline; std::call_once is a pthread_once call
  // per use, 5% of a snapshot build that reads 10,000 resources' references.
  mutable absl::once_flag parse_once_;
  mutable std::unique_ptr<const google::protobuf::Message> message_;
  mutable absl::once_flag references_once_;
  mutable std::vector<ResourceRef> references_;
};

using ResourcePtr = std::shared_ptr<const Resource>;

// Whether two resources have the same type, name and version: the same
// content (versions are content digests, or made from digests of parts).
bool SameContent(const Resource& a, const Resource& b);

// The serialization whose bytes are the same for the same content (map
// entries in key order), which versions digest.
std::string SerializeDeterministic(const google::protobuf::Message& message);

// Hex digest (16 chars) used for resource and type versions.
std::string ContentDigest(absl::string_view bytes);
// The same of the parts' concatenation, without concatenating them.
std::string ContentDigest(std::initializer_list<absl::string_view> parts);

// "type.googleapis.com/a.b.C" -> "a.b.C".
absl::string_view TypeNameOf(absl::string_view type_url);

}  // namespace holdfast
