#include "src/admin/admin_server.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "src/admin/listen_socket.h"
#include "src/admin/status_page.h"
#include "src/snapshot/redact.h"
#include "src/xds/client_status.h"

namespace holdfast {
namespace {

// Every message shown goes through here, so no page prints a secret.
nlohmann::json PlainMessageJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return nullptr;
  return nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
}

HttpResponse Json(const nlohmann::json& body) {
  HttpResponse response;
  response.content_type = "application/json";
  // Replace, not throw, on bytes that are not UTF-8 (store keys are shown
  // as they are).
  response.body = body.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return response;
}

}  // namespace

nlohmann::json RedactedMessageJson(const google::protobuf::Message& message) {
  std::unique_ptr<google::protobuf::Message> redacted(message.New());
  redacted->CopyFrom(message);
  RedactSecrets(*redacted);
  return PlainMessageJson(*redacted);
}

absl::StatusOr<nlohmann::json> ClientStatusToJson(const std::vector<ProxyView>& proxies,
                                                  const std::string& node, size_t max_bytes) {
  envoy::service::status::v3::ClientStatusRequest request;
  if (!node.empty()) request.add_node_matchers()->mutable_node_id()->set_exact(node);
  absl::StatusOr<envoy::service::status::v3::ClientStatusResponse> answer =
      AnswerClientStatus(request, proxies, max_bytes);
  if (!answer.ok()) return answer.status();
  return PlainMessageJson(*answer);  // AnswerClientStatus redacts the contents
}

nlohmann::json FleetToJson(const std::vector<ProxyView>& proxies, size_t limit) {
  nlohmann::json by_group = nlohmann::json::object();
  std::vector<std::pair<int, const ProxyView*>> troubled;  // (rank, proxy)
  for (const ProxyView& proxy : proxies) {
    const ProxySync sync = SyncOf(proxy);
    nlohmann::json& counts = by_group[proxy.group.empty() ? "(none yet)" : proxy.group];
    if (counts.is_null()) counts = {{"synced", 0}, {"pending", 0}, {"nacking", 0}};
    const std::string state(ProxySyncName(sync));
    counts[state] = counts[state].get<int>() + 1;
    if (sync != ProxySync::kSynced)
      troubled.push_back({sync == ProxySync::kNacking ? 0 : 1, &proxy});
  }
  std::stable_sort(troubled.begin(), troubled.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second->node_id) < std::tie(b.first, b.second->node_id);
  });
  nlohmann::json listed = nlohmann::json::array();
  for (size_t i = 0; i < troubled.size() && i < limit; ++i) {
    const ProxyView& proxy = *troubled[i].second;
    nlohmann::json types = nlohmann::json::array();
    absl::Time since = absl::InfiniteFuture();
    for (const auto& [type_url, progress] : proxy.types) {
      if (progress.nack.has_value()) {
        types.push_back({{"type_url", type_url},
                         {"state", "nacking"},
                         {"version", progress.nack->version},
                         {"error", progress.nack->error},
                         {"since", FormatTimestamp(progress.nack->at)}});
        since = std::min(since, progress.nack->at);
      } else if (progress.acked_version != progress.last_sent_version) {
        types.push_back({{"type_url", type_url},
                         {"state", "pending"},
                         {"version", progress.last_sent_version},
                         {"since", FormatTimestamp(progress.sent_at)}});
        since = std::min(since, progress.sent_at);
      }
    }
    listed.push_back({{"node_id", proxy.node_id},
                      {"group", proxy.group},
                      {"state", ProxySyncName(SyncOf(proxy))},
                      {"canary", proxy.canary},
                      {"stream", proxy.stream_kind},
                      {"peer", proxy.peer},
                      {"since", FormatTimestamp(since)},
                      {"types", types}});
  }
  return {{"total", proxies.size()},
          {"by_group", by_group},
          {"troubled_total", troubled.size()},
          {"troubled", listed}};
}

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
                {"at", FormatTimestamp(progress.nack->at)}};
      }
      types[type_url] = {{"last_sent_version", progress.last_sent_version},
                         {"acked_version", progress.acked_version},
                         {"acked_at", FormatTimestamp(progress.acked_at)},
                         {"nack", nack},
                         {"responses_sent", progress.responses_sent},
                         {"acks", progress.acks},
                         {"nacks", progress.nacks}};
    }
    list.push_back({{"stream_id", proxy.stream_id},
                    {"node_id", proxy.node_id},
                    {"cluster", proxy.cluster},
                    {"group", proxy.group},
                    {"identity", proxy.identity},
                    {"user_agent", proxy.user_agent},
                    {"peer", proxy.peer},
                    {"stream", proxy.stream_kind},
                    {"connected_since", FormatTimestamp(proxy.connected_since)},
                    {"state", ProxySyncName(SyncOf(proxy))},
                    {"canary", proxy.canary},
                    {"types", types}});
  }
  return {{"proxies", list}};
}

nlohmann::json RefusalsToJson(const std::vector<IdentityRefusalRecord>& refusals) {
  nlohmann::json list = nlohmann::json::array();
  for (const IdentityRefusalRecord& refusal : refusals) {
    list.push_back({{"peer", refusal.peer},
                    {"claimed_node_id", refusal.claimed_node_id},
                    {"expected", refusal.expected},
                    {"reason", refusal.reason},
                    {"stream", refusal.stream_kind},
                    {"at", FormatTimestamp(refusal.at)}});
  }
  return list;
}

nlohmann::json ResourcesToJson(const Snapshot& snapshot) {
  nlohmann::json types = nlohmann::json::object();
  for (const std::string& type_url : snapshot.TypeUrls()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [name, resource] : snapshot.Resources(type_url)) {
      list.push_back(resource->message() != nullptr ? RedactedMessageJson(*resource->message())
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
          entry["resource"] = RedactedMessageJson(*resource->message());
        }
        resources.push_back(std::move(entry));
      }
      types[type_url] = {{"version", snapshot.TypeVersion(type_url)}, {"resources", resources}};
    }
    groups[group] = {{"version", snapshot.version()},
                     {"created", FormatTimestamp(snapshot.created())},
                     {"sequence", published.sequence},
                     {"types", types}};
  }
  return {{"groups", groups}};
}

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(const std::string& listen_address,
                                                                const AdminAuthOptions& auth,
                                                                AdminSources sources,
                                                                HttpServerOptions http) {
  absl::StatusOr<ListenSocket> socket = ListenSocket::Open(listen_address);
  if (!socket.ok()) return socket.status();
  if (!socket->loopback() && auth.token_file.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "admin endpoint on ", socket->bound(), " (from --admin-listen ", listen_address,
        ") is reachable from other hosts and would be unauthenticated: give "
        "--admin-token-file, or listen on loopback (127.0.0.1:PORT)"));
  }
  auto server = std::unique_ptr<AdminServer>(new AdminServer());
  if (!auth.token_file.empty()) {
    absl::StatusOr<std::unique_ptr<TokenFile>> token = TokenFile::Open(auth.token_file);
    if (!token.ok()) return token.status();
    server->token_ = *std::move(token);
  }
  server->sources_ = std::move(sources);
  server->Route();
  http.allow_post = !server->sources_.actions.empty();
  server->http_ = HttpServer::Start(
      *std::move(socket), http,
      [raw = server.get()](const HttpRequest& request) { return raw->Handle(request); });
  if (server->sources_.metrics != nullptr) {
    server->collector_ = server->sources_.metrics->AddCollector(
        [raw = server.get()](MetricWriter& out) { raw->CollectHttpMetrics(out); });
  }
  return server;
}

AdminServer::~AdminServer() { Stop(); }

void AdminServer::Stop() {
  if (http_ != nullptr) http_->Stop();
  if (collector_ != 0) {
    sources_.metrics->RemoveCollector(collector_);
    collector_ = 0;
  }
}

HttpResponse AdminServer::Handle(const HttpRequest& request) {
  bool authenticated =
      token_ == nullptr || token_->MatchesAuthorization(request.Header("authorization"));
  // Probes answer everyone: a kubelet or load balancer checks them without
  // credentials. Without credentials /readyz says ready or not, not why.
  if (request.path == "/healthz") return HttpResponse::Text(200, "ok\n");
  if (request.path == "/readyz") return Readyz(/*detail=*/authenticated);
  // The page is code, not data: it asks for the data (with a token when one
  // is required) from the browser.
  if (request.path == "/") return StatusPage();
  if (!authenticated) {
    HttpResponse response = HttpResponse::Text(401, "a bearer token is required\n");
    response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"holdfast admin\"");
    return response;
  }
  if (request.method == "POST") return Act(request);
  auto route = routes_.find(request.path);
  if (route == routes_.end()) {
    if (FindAction(request.path).action != nullptr) {
      HttpResponse response = HttpResponse::Text(405, "an action: POST only\n");
      response.headers.emplace_back("Allow", "POST");
      return response;
    }
    return HttpResponse::Text(404, "not found\n");
  }
  return route->second(request);
}

AdminServer::FoundAction AdminServer::FindAction(const std::string& path) const {
  if (auto exact = sources_.actions.find(path); exact != sources_.actions.end()) {
    return {&exact->second, ""};
  }
  // The nearest action above: /rollout/promote for /rollout/promote/a/b.
  for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
       slash = path.rfind('/', slash - 1)) {
    if (auto above = sources_.actions.find(path.substr(0, slash)); above != sources_.actions.end()) {
      return {&above->second, path.substr(slash + 1)};
    }
  }
  return {};
}

HttpResponse AdminServer::Act(const HttpRequest& request) {
  const FoundAction found = FindAction(request.path);
  if (found.action == nullptr) {
    HttpResponse response = HttpResponse::Text(405, "only GET and HEAD here\n");
    response.headers.emplace_back("Allow", "GET, HEAD");
    return response;
  }
  if (request.Header("x-holdfast-action").empty()) {
    return HttpResponse::Text(403, "an action needs the header X-Holdfast-Action\n");
  }
  return Json((*found.action)(found.below));
}

HttpResponse AdminServer::Readyz(bool detail) const {
  Readiness readiness = sources_.readiness();
  std::string body = readiness.ready ? "ready" : "not ready";
  if (detail) absl::StrAppend(&body, ": ", readiness.reason);
  return HttpResponse::Text(readiness.ready ? 200 : 503, body + "\n");
}

void AdminServer::Route() {
  routes_["/metrics"] = [this](const HttpRequest&) {
    HttpResponse response = HttpResponse::Text(200, sources_.metrics->RenderPrometheus());
    response.content_type = "text/plain; version=0.0.4";
    return response;
  };
  routes_["/debug/snapshot"] = [this](const HttpRequest& request) {
    auto resources = request.query.find("resources");
    bool with_resources = resources == request.query.end() || resources->second != "false";
    return Json(SnapshotsToJson(*sources_.cache, with_resources));
  };
  routes_["/debug/proxies"] = [this](const HttpRequest&) {
    nlohmann::json page = ProxiesToJson(sources_.proxies->List());
    page["identity_refusals"] = RefusalsToJson(sources_.proxies->Refusals());
    return Json(page);
  };
  routes_["/debug/fleet"] = [this](const HttpRequest& request) {
    size_t limit = 100;
    if (auto it = request.query.find("limit"); it != request.query.end()) {
      if (!absl::SimpleAtoi(it->second, &limit)) limit = 100;
    }
    return Json(FleetToJson(sources_.proxies->List(), std::min<size_t>(limit, 10'000)));
  };
  routes_["/debug/client_status"] = [this](const HttpRequest& request) {
    auto node = request.query.find("node");
    absl::StatusOr<nlohmann::json> answer = ClientStatusToJson(
        sources_.proxies->List(), node == request.query.end() ? "" : node->second);
    if (answer.ok()) return Json(*answer);
    // Too large: the request asks for too much; one node (?node=) answers.
    HttpResponse refused = Json({{"error", std::string(answer.status().message())}});
    refused.status = 400;
    return refused;
  };
  routes_["/debug/status"] = [this](const HttpRequest&) {
    return Json(sources_.status ? sources_.status() : nlohmann::json::object());
  };
  for (const auto& [path, page] : sources_.pages) {
    routes_[path] = [page = page](const HttpRequest&) { return Json(page()); };
  }
}

void AdminServer::CollectHttpMetrics(MetricWriter& out) const {
  if (http_ == nullptr) return;
  HttpServerStats stats = http_->stats();
  out.Sample("holdfast_admin_connections", "Open admin HTTP connections", "gauge", {}, stats.open);
  out.Sample("holdfast_admin_requests_total", "Admin HTTP requests answered", "counter", {},
             stats.requests);
  out.Sample("holdfast_admin_requests_refused_total",
             "Admin HTTP requests refused as malformed, too large or carrying a body", "counter",
             {}, stats.refused);
  const std::pair<const char*, uint64_t> closes[] = {{"evicted", stats.evicted},
                                                     {"header_timeout", stats.header_timeouts},
                                                     {"idle_timeout", stats.idle_timeouts},
                                                     {"write_timeout", stats.write_timeouts}};
  for (const auto& [reason, count] : closes) {
    out.Sample("holdfast_admin_connections_cut_total",
               "Admin HTTP connections closed by a limit, by limit", "counter",
               {{"reason", reason}}, count);
  }
}

}  // namespace holdfast
