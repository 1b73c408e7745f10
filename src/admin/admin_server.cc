#include "src/admin/admin_server.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "httplib.h"

namespace holdfast {
namespace {

std::string Timestamp(absl::Time t) {
  if (t == absl::InfinitePast()) return "";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

nlohmann::json MessageToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return nullptr;
  return nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
}

void SendJson(httplib::Response& res, const nlohmann::json& body) {
  // Replace, not throw, on bytes that are not UTF-8 (store keys are shown
  // as they are).
  res.set_content(body.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                  "application/json");
}

}  // namespace

nlohmann::json ProxiesToJson(const std::vector<ProxyView>& proxies) {
  nlohmann::json list = nlohmann::json::array();
  for (const ProxyView& proxy : proxies) {
    nlohmann::json types = nlohmann::json::object();
    for (const auto& [type_url, progress] : proxy.types) {
      nlohmann::json nack = nullptr;
      if (progress.nack.has_value()) {
        nack = {{"version", progress.nack->version},
                {"nonce", progress.nack->nonce},
                {"code", progress.nack->code},
                {"error", progress.nack->error},
                {"at", Timestamp(progress.nack->at)}};
      }
      types[type_url] = {{"last_sent_version", progress.last_sent_version},
                         {"acked_version", progress.acked_version},
                         {"acked_at", Timestamp(progress.acked_at)},
                         {"nack", nack},
                         {"responses_sent", progress.responses_sent},
                         {"acks", progress.acks},
                         {"nacks", progress.nacks}};
    }
    list.push_back({{"stream_id", proxy.stream_id},
                    {"node_id", proxy.node_id},
                    {"cluster", proxy.cluster},
                    {"group", proxy.group},
                    {"user_agent", proxy.user_agent},
                    {"peer", proxy.peer},
                    {"stream", proxy.stream_kind},
                    {"connected_since", Timestamp(proxy.connected_since)},
                    {"types", types}});
  }
  return {{"proxies", list}};
}

nlohmann::json ResourcesToJson(const Snapshot& snapshot) {
  nlohmann::json types = nlohmann::json::object();
  for (const std::string& type_url : snapshot.TypeUrls()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [name, resource] : snapshot.Resources(type_url)) {
      list.push_back(resource->message() != nullptr ? MessageToJson(*resource->message())
                                                    : nlohmann::json(name));
    }
    types[type_url] = list;
  }
  return types;
}

nlohmann::json StatusesToJson(const StatusMap& statuses) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [key, status] : statuses) {
    nlohmann::json reasons = nlohmann::json::array();
    for (const FieldError& reason : status.reasons) {
      reasons.push_back({{"field", reason.path},
                         {"message", reason.message},
                         {"location", reason.location.ToString()}});
    }
    list.push_back({{"kind", key.kind},
                    {"namespace", key.ns},
                    {"name", key.name},
                    {"status", StatusStateName(status.state)},
                    {"serving_last_good", status.serving_last_good},
                    {"location", status.location.ToString()},
                    {"reasons", reasons}});
  }
  return {{"objects", list}};
}

nlohmann::json SnapshotsToJson(const SnapshotCache& cache, bool with_resources) {
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [group, published] : cache.All()) {
    const Snapshot& snapshot = *published.snapshot;
    nlohmann::json types = nlohmann::json::object();
    for (const std::string& type_url : snapshot.TypeUrls()) {
      nlohmann::json resources = nlohmann::json::array();
      for (const auto& [name, resource] : snapshot.Resources(type_url)) {
        nlohmann::json entry = {{"name", name}, {"version", resource->version()}};
        if (with_resources && resource->message() != nullptr) {
          entry["resource"] = MessageToJson(*resource->message());
        }
        resources.push_back(std::move(entry));
      }
      types[type_url] = {{"version", snapshot.TypeVersion(type_url)}, {"resources", resources}};
    }
    groups[group] = {{"version", snapshot.version()},
                     {"created", Timestamp(snapshot.created())},
                     {"sequence", published.sequence},
                     {"types", types}};
  }
  return {{"groups", groups}};
}

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(const std::string& listen_address,
                                                                AdminSources sources) {
  size_t colon = listen_address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen_address.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("admin address \"", listen_address, "\": expected HOST:PORT"));
  }
  std::string host = listen_address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);

  auto server = std::unique_ptr<AdminServer>(new AdminServer());
  server->sources_ = std::move(sources);
  server->http_ = std::make_unique<httplib::Server>();
  server->Route();
  if (port == 0) {
    server->port_ = server->http_->bind_to_any_port(host);
  } else if (server->http_->bind_to_port(host, port)) {
    server->port_ = port;
  }
  if (server->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for admin on ", listen_address));
  }
  server->thread_ = std::thread([http = server->http_.get()] { http->listen_after_bind(); });
  return server;
}

AdminServer::~AdminServer() { Stop(); }

void AdminServer::Stop() {
  if (http_ != nullptr) http_->stop();
  if (thread_.joinable()) thread_.join();
}

void AdminServer::Route() {
  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  http_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    Readiness readiness = sources_.readiness();
    res.status = readiness.ready ? 200 : 503;
    res.set_content(absl::StrCat(readiness.ready ? "ready: " : "not ready: ", readiness.reason, "\n"),
                    "text/plain");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(sources_.metrics->RenderPrometheus(), "text/plain; version=0.0.4");
  });
  http_->Get("/debug/snapshot", [this](const httplib::Request& req, httplib::Response& res) {
    bool with_resources = req.get_param_value("resources") != "false";
    SendJson(res, SnapshotsToJson(*sources_.cache, with_resources));
  });
  http_->Get("/debug/proxies", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, ProxiesToJson(sources_.proxies->List()));
  });
  http_->Get("/debug/status", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, sources_.status ? sources_.status() : nlohmann::json::object());
  });
  for (const auto& [path, page] : sources_.pages) {
    http_->Get(path, [page = page](const httplib::Request&, httplib::Response& res) {
      SendJson(res, page());
    });
  }
}

}  // namespace holdfast
