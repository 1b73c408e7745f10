#include "src/xds/client_status.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "src/snapshot/redact.h"
#include "src/xds/node_matcher.h"

namespace holdfast {
namespace {

using envoy::admin::v3::ClientResourceStatus;
using envoy::service::status::v3::ClientConfig;
using envoy::service::status::v3::ClientStatusRequest;
using envoy::service::status::v3::ClientStatusResponse;
using envoy::service::status::v3::ConfigStatus;
using GenericXdsConfig = ClientConfig::GenericXdsConfig;

void SetTime(absl::Time at, google::protobuf::Timestamp* out) {
  if (at == absl::InfinitePast()) return;
  const int64_t nanos = absl::ToUnixNanos(at);
  out->set_seconds(nanos / 1'000'000'000);
  out->set_nanos(static_cast<int32_t>(nanos % 1'000'000'000));
}

// Resource contents as shown: redacted, each resource once per answer.
class Contents {
 public:
  explicit Contents(bool exclude) : exclude_(exclude) {}

  // Sets `*field()` to the resource as shown, unless it is not shown.
  template <typename Field>
  void Fill(const Resource& resource, Field field) {
    if (exclude_) return;
    auto [it, inserted] = shown_.try_emplace(&resource);
    if (inserted) it->second = Shown(resource);
    if (!it->second.has_value()) return;
    google::protobuf::Any* out = field();
    out->set_type_url(resource.type_url());
    out->set_value(*it->second);
    bytes_ += resource.type_url().size() + it->second->size();
  }
  // Roughly what the answer's entries take so far.
  void Count(size_t bytes) { bytes_ += bytes; }
  size_t bytes() const { return bytes_; }

 private:
  static std::optional<std::string> Shown(const Resource& resource) {
    const google::protobuf::Message* message = resource.message();
    if (message == nullptr) return std::nullopt;  // cannot be checked for secrets
    std::unique_ptr<google::protobuf::Message> copy(message->New());
    copy->CopyFrom(*message);
    if (!RedactSecrets(*copy)) return resource.serialized();
    return copy->SerializeAsString();
  }

  const bool exclude_;
  size_t bytes_ = 0;
  absl::flat_hash_map<const Resource*, std::optional<std::string>> shown_;
};

class ConfigWriter {
 public:
  ConfigWriter(ClientConfig* config, Contents* contents) : config_(config), contents_(contents) {}

  void AddType(const std::string& type, const TypeProgress& progress) {
    const HeldResources sent = ResourcesOf(progress.sent, type);
    const HeldResources acked = ResourcesOf(progress.acked, type);
    const bool nacked =
        progress.nack.has_value() && progress.nack->version == progress.last_sent_version;
    for (const auto& [name, resource] : sent.present) {
      auto held = acked.present.find(name);
      const Resource* holds = held == acked.present.end() ? nullptr : held->second.get();
      if (holds != nullptr && holds->version() == resource->version()) {
        Add(type, name, holds, ConfigStatus::SYNCED, ClientResourceStatus::ACKED,
            progress.acked_at);
      } else if (nacked) {
        GenericXdsConfig* entry = Add(type, name, holds, ConfigStatus::ERROR,
                                      ClientResourceStatus::NACKED, progress.acked_at);
        auto* error = entry->mutable_error_state();
        error->set_details(progress.nack->error);
        error->set_version_info(progress.nack->version);
        SetTime(progress.nack->at, error->mutable_last_update_attempt());
        contents_->Fill(*resource, [&] { return error->mutable_failed_configuration(); });
      } else {
        Add(type, name, resource.get(), ConfigStatus::STALE, ClientResourceStatus::REQUESTED,
            progress.sent_at);
      }
    }
    if (nacked) {  // the proxy keeps what it had, removals included
      for (const auto& [name, resource] : acked.present) {
        if (sent.present.contains(name)) continue;
        Add(type, name, resource.get(), ConfigStatus::SYNCED, ClientResourceStatus::ACKED,
            progress.acked_at);
      }
    }
    const bool synced = progress.acked_version == progress.last_sent_version;
    for (const std::string& name : sent.missing) {
      Add(type, name, nullptr, synced ? ConfigStatus::SYNCED : ConfigStatus::STALE,
          ClientResourceStatus::DOES_NOT_EXIST, synced ? progress.acked_at : progress.sent_at);
    }
  }

 private:
  GenericXdsConfig* Add(const std::string& type, const std::string& name, const Resource* holds,
                        ConfigStatus status, ClientResourceStatus client_status, absl::Time at) {
    GenericXdsConfig* entry = config_->add_generic_xds_configs();
    contents_->Count(type.size() + name.size() + 48);
    entry->set_type_url(type);
    entry->set_name(name);
    entry->set_config_status(status);
    entry->set_client_status(client_status);
    SetTime(at, entry->mutable_last_updated());
    if (holds != nullptr) {
      entry->set_version_info(holds->version());
      contents_->Fill(*holds, [&] { return entry->mutable_xds_config(); });
    }
    return entry;
  }

  ClientConfig* config_;
  Contents* contents_;
};

bool Selected(const std::vector<NodeMatcher>& matchers, const ProxyView& proxy) {
  if (matchers.empty()) return true;
  if (proxy.node == nullptr) return false;
  return std::any_of(matchers.begin(), matchers.end(),
                     [&](const NodeMatcher& m) { return m.Matches(*proxy.node); });
}

}  // namespace

absl::StatusOr<ClientStatusResponse> AnswerClientStatus(const ClientStatusRequest& request,
                                                        const std::vector<ProxyView>& proxies,
                                                        size_t max_bytes) {
  std::vector<NodeMatcher> matchers;
  for (int i = 0; i < request.node_matchers_size(); ++i) {
    absl::StatusOr<NodeMatcher> matcher =
        NodeMatcher::Compile(request.node_matchers(i), absl::StrCat("node_matchers[", i, "]"));
    if (!matcher.ok()) return matcher.status();
    matchers.push_back(*std::move(matcher));
  }
  // Streams by node id; a proxy with a stream per type is one node.
  std::map<std::string, std::vector<const ProxyView*>> nodes;
  for (const ProxyView& proxy : proxies) {
    if (Selected(matchers, proxy)) nodes[proxy.node_id].push_back(&proxy);
  }
  ClientStatusResponse response;
  Contents contents(request.exclude_resource_contents());
  for (auto& [node_id, streams] : nodes) {
    std::sort(streams.begin(), streams.end(),
              [](const ProxyView* a, const ProxyView* b) { return a->stream_id < b->stream_id; });
    ClientConfig* config = response.add_config();
    ConfigWriter writer(config, &contents);
    for (const ProxyView* stream : streams) {
      if (stream->node != nullptr && !config->has_node()) *config->mutable_node() = *stream->node;
      for (const auto& [type, progress] : stream->types) writer.AddType(type, progress);
    }
    if (!config->has_node()) config->mutable_node()->set_id(node_id);
    if (contents.bytes() > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the answer about ", nodes.size(), " nodes would exceed ", max_bytes >> 20,
          " MiB; ask about fewer with node_matchers",
          request.exclude_resource_contents() ? "" : ", or set exclude_resource_contents"));
    }
  }
  return response;
}

}  // namespace holdfast
