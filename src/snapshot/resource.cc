#include "src/snapshot/resource.h"

#include <algorithm>

#include <openssl/evp.h>

#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "src/common/protowire.h"

namespace holdfast {

std::string SerializeDeterministic(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

std::string ContentDigest(absl::string_view bytes) { return ContentDigest({bytes}); }

namespace {

using Sha256Digest = std::array<unsigned char, 32>;

Sha256Digest ComputeSha256(std::initializer_list<absl::string_view> parts) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                  &EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  for (absl::string_view part : parts) EVP_DigestUpdate(context.get(), part.data(), part.size());
  Sha256Digest digest;
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest.data(), &length);
  return digest;
}

// The first 16 bytes of the digest, as two numbers (the bytes of each in
// little-endian order on every machine, so replicas agree).
std::array<uint64_t, 2> DigestLanes(std::initializer_list<absl::string_view> parts) {
  const Sha256Digest digest = ComputeSha256(parts);
  std::array<uint64_t, 2> lanes = {};
  for (size_t i = 0; i < 16; ++i) lanes[i / 8] |= uint64_t{digest[i]} << (8 * (i % 8));
  return lanes;
}

}  // namespace

std::string ContentDigest(std::initializer_list<absl::string_view> parts) {
  const Sha256Digest digest = ComputeSha256(parts);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest.data()), 8));
}

bool SameContent(const Resource& a, const Resource& b) {
  return a.version() == b.version() && a.name() == b.name() && a.type_url() == b.type_url();
}

absl::string_view TypeNameOf(absl::string_view type_url) {
  size_t slash = type_url.rfind('/');
  return slash == absl::string_view::npos ? type_url : type_url.substr(slash + 1);
}

std::shared_ptr<const Resource> Resource::FromMessage(std::string name,
                                                      const google::protobuf::Message& message) {
  auto resource = std::shared_ptr<Resource>(new Resource());
  resource->name_ = std::move(name);
  resource->type_url_ = "type.googleapis.com/" + message.GetDescriptor()->full_name();
  // No copy of the message is kept: message() parses the bytes on demand,
  // which only debugging and validation need.
  resource->serialized_ = SerializeDeterministic(message);
  resource->Encode();
  return resource;
}

std::shared_ptr<const Resource> Resource::FromBytes(std::string name, std::string type_url,
                                                    std::string serialized, std::string version) {
  auto resource = std::shared_ptr<Resource>(new Resource());
  resource->name_ = std::move(name);
  resource->type_url_ = std::move(type_url);
  resource->serialized_ = std::move(serialized);
  resource->version_given_ = !version.empty();
  resource->version_ = std::move(version);
  resource->Encode();
  return resource;
}

const google::protobuf::Message* Resource::message() const {
  absl::call_once(parse_once_, [this] {
    if (message_ != nullptr) return;
    const google::protobuf::Descriptor* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
            std::string(TypeNameOf(type_url_)));
    if (descriptor == nullptr) return;
    std::unique_ptr<google::protobuf::Message> parsed(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
    if (parsed->ParseFromString(serialized_)) message_ = std::move(parsed);
  });
  return message_.get();
}

void Resource::Encode() {
  type_index_ = std::find(type_url::kKnownTypes.begin(), type_url::kKnownTypes.end(), type_url_) -
                type_url::kKnownTypes.begin();
  // Name and type are part of the version: renaming a resource is a change.
  // Digested in parts: a gateway's route configuration can be tens of MB.
  if (!version_given_) version_ = ContentDigest({type_url_, "\n", name_, "\n", serialized_});
  entry_digest_ = DigestLanes({name_, "\t", version_});

  // google.protobuf.Any{type_url = 1, value = 2}, up to the value's bytes.
  const size_t any_size =
      LengthDelimitedSize(1, type_url_.size()) + LengthDelimitedSize(2, serialized_.size());
  std::string any_head;
  AppendLengthDelimited(1, type_url_, &any_head);
  AppendLengthDelimitedHeader(2, serialized_.size(), &any_head);

  AppendLengthDelimitedHeader(2, any_size, &sotw_head_);  // DiscoveryResponse.resources = 2
  sotw_head_ += any_head;

  // envoy.service.discovery.v3.Resource{version = 1, resource = 2, name = 3}
  const size_t delta_size = LengthDelimitedSize(1, version_.size()) +
                            LengthDelimitedSize(2, any_size) + LengthDelimitedSize(3, name_.size());
  AppendLengthDelimitedHeader(2, delta_size, &delta_head_);  // DeltaDiscoveryResponse.resources
  AppendLengthDelimited(1, version_, &delta_head_);
  AppendLengthDelimitedHeader(2, any_size, &delta_head_);
  delta_head_ += any_head;
  AppendLengthDelimited(3, name_, &delta_tail_);
}

void Resource::AppendWire(bool delta, std::string* out) const {
  out->append(delta ? delta_head_ : sotw_head_);
  out->append(serialized_);
  if (delta) out->append(delta_tail_);
}

size_t Resource::WireSize(bool delta) const {
  return serialized_.size() +
         (delta ? delta_head_.size() + delta_tail_.size() : sotw_head_.size());
}

}  // namespace holdfast
