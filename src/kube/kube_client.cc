#include "src/kube/kube_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "src/kube/json_fields.h"

namespace holdfast {
namespace {

// What a watch line or a response body held, as a Kubernetes Status.
std::string StatusMessage(const std::string& body) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (JsonString(parsed, "kind") == "Status" && JsonField(parsed, "message").is_string()) {
    return JsonString(parsed, "message");
  }
  return body.size() > 300 ? body.substr(0, 300) + "..." : body;
}

absl::StatusCode CodeForHttp(long code) {
  switch (code) {
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 429:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    case 400:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    default:
      if (code >= 500) return absl::StatusCode::kUnavailable;
      return absl::StatusCode::kFailedPrecondition;
  }
}

std::string Escape(const std::string& text) {
  char* escaped = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  std::string out = escaped ? escaped : "";
  curl_free(escaped);
  return out;
}

std::once_flag curl_init_once;

// The path of the object `object`'s metadata names.
absl::StatusOr<std::string> ObjectPath(const KubeResource& resource, const nlohmann::json& object,
                                       const char* operation) {
  const nlohmann::json& meta = JsonField(object, "metadata");
  const std::string name = JsonString(meta, "name");
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(operation, ": the object has no metadata.name"));
  }
  return absl::StrCat(resource.Path(JsonString(meta, "namespace")), "/", name);
}

}  // namespace

absl::Status StatusFromHttp(long http_code, const std::string& body,
                            const std::string& retry_after_header) {
  if (http_code >= 200 && http_code < 300) return absl::OkStatus();
  absl::Status status(CodeForHttp(http_code),
                      absl::StrCat("HTTP ", http_code, ": ", StatusMessage(body)));
  int64_t seconds = 0;
  if ((http_code == 429 || http_code >= 500) &&
      absl::SimpleAtoi(absl::StripAsciiWhitespace(retry_after_header), &seconds) && seconds >= 0) {
    status = WithRetryAfter(std::move(status), absl::Seconds(std::min<int64_t>(seconds, 300)));
  }
  return status;
}

// One request and what came back. The watch-specific parts are unused by
// plain calls, whose body is collected whole.
struct KubeClient::Call {
  std::string method = "GET";
  std::string path;
  std::string request_body;
  std::string content_type = "application/json";
  absl::Duration deadline;     // for the whole call; for a watch, until it opens
  absl::Duration stall_after;  // a watch: silence that ends it (0: not a watch)

  CURL* easy = nullptr;
  long http_code = 0;
  std::string retry_after;
  std::string body;           // a plain call's body, or a failed watch's
  std::string pending_line;   // a watch's partial line
  absl::Duration last_bytes;  // monotonic time of the last bytes received
  bool opened = false;
  absl::Status callback_error;  // why a callback aborted the transfer
  std::function<void()> on_open;
  std::function<void(const KubeWatchEvent&)> on_event;

  bool streaming() const { return stall_after > absl::ZeroDuration(); }
};

namespace {

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* call = static_cast<KubeClient::Call*>(user);
  absl::string_view line(data, size * n);
  if (absl::StartsWithIgnoreCase(line, "retry-after:")) {
    call->retry_after = std::string(absl::StripAsciiWhitespace(line.substr(12)));
  }
  return size * n;
}

absl::Status DeliverWatchLine(KubeClient::Call& call, absl::string_view line) {
  absl::StatusOr<std::optional<KubeWatchEvent>> event = ParseWatchLine(line);
  if (!event.ok()) return event.status();
  if (event->has_value()) call.on_event(**event);
  return absl::OkStatus();
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* call = static_cast<KubeClient::Call*>(user);
  const size_t total = size * n;
  if (call->http_code == 0) curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &call->http_code);
  if (!call->streaming() || call->http_code != 200) {
    call->body.append(data, total);
    return total;
  }
  call->pending_line.append(data, total);
  size_t start = 0;
  for (size_t nl; (nl = call->pending_line.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    absl::Status delivered =
        DeliverWatchLine(*call, absl::string_view(call->pending_line).substr(start, nl - start));
    if (!delivered.ok()) {
      call->callback_error = delivered;
      return 0;  // aborts the transfer
    }
  }
  call->pending_line.erase(0, start);
  return total;
}

}  // namespace

absl::StatusOr<std::optional<KubeWatchEvent>> ParseWatchLine(absl::string_view line) {
  if (absl::StripAsciiWhitespace(line).empty()) return std::nullopt;
  nlohmann::json event =
      nlohmann::json::parse(std::string(line), nullptr, /*allow_exceptions=*/false);
  if (!event.is_object() || !event["type"].is_string() || !event["object"].is_object()) {
    return absl::DataLossError(absl::StrCat("watch: not an event: ", line.substr(0, 200)));
  }
  const std::string type = event["type"].get<std::string>();
  KubeWatchEvent out;
  if (type == "ADDED") {
    out.type = KubeWatchEvent::Type::kAdded;
  } else if (type == "MODIFIED") {
    out.type = KubeWatchEvent::Type::kModified;
  } else if (type == "DELETED") {
    out.type = KubeWatchEvent::Type::kDeleted;
  } else if (type == "BOOKMARK") {
    out.type = KubeWatchEvent::Type::kBookmark;
  } else if (type == "ERROR") {
    // {"kind":"Status","code":410,"reason":"Expired",...}: the version is
    // gone from the server's window.
    const nlohmann::json& status = event["object"];
    const nlohmann::json& code_field = JsonField(status, "code");
    long code = code_field.is_number_integer() ? code_field.get<long>() : 500L;
    absl::Status error = StatusFromHttp(code, status.dump(), "");
    // An ERROR event is an error whatever code it claims: a StatusOr made
    // from an OK status aborts the process (found by the fuzzer).
    if (error.ok()) {
      error = absl::DataLossError(absl::StrCat("watch: an ERROR event with code ", code, ": ",
                                               status.dump().substr(0, 200)));
    }
    return error;
  } else {
    return absl::DataLossError(absl::StrCat("watch: unknown event type ", type));
  }
  out.object = std::move(event["object"]);
  return out;
}

KubeClient::KubeClient(KubeConfig config, Options options, const Clock& clock)
    : config_(std::move(config)), options_(options), clock_(clock), token_(config_, clock) {}

KubeClient::~KubeClient() = default;

absl::StatusOr<std::unique_ptr<KubeClient>> KubeClient::Create(const KubeConfig& config,
                                                               Options options,
                                                               const Clock& clock) {
  if (config.server.empty()) return absl::InvalidArgumentError("kubernetes: no server");
  std::call_once(curl_init_once, [] { curl_global_init(CURL_GLOBAL_ALL); });
  return std::unique_ptr<KubeClient>(new KubeClient(config, options, clock));
}

absl::Status KubeClient::Perform(Call& call, const absl::Notification* stop) {
  absl::StatusOr<std::string> token = token_.Current();
  if (!token.ok()) return token.status();
  call.easy = curl_easy_init();
  if (call.easy == nullptr) return absl::ResourceExhaustedError("curl_easy_init failed");
  curl_slist* headers = SetUp(call, *token);
  CURLM* multi = curl_multi_init();
  curl_multi_add_handle(multi, call.easy);
  absl::Status outcome = Drive(multi, call, stop);
  if (outcome.ok()) outcome = Finish(multi, call);
  curl_multi_remove_handle(multi, call.easy);
  curl_multi_cleanup(multi);
  curl_easy_cleanup(call.easy);
  curl_slist_free_all(headers);
  call.easy = nullptr;
  if (outcome.ok() && call.http_code == 401) token_.Invalidate();
  return outcome;
}

curl_slist* KubeClient::SetUp(Call& call, const std::string& token) {
  CURL* easy = call.easy;
  std::string url = config_.server + call.path;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  std::string content_type = absl::StrCat("Content-Type: ", call.content_type);
  if (!call.request_body.empty()) headers = curl_slist_append(headers, content_type.c_str());
  std::string auth = absl::StrCat("Authorization: Bearer ", token);
  if (!token.empty()) headers = curl_slist_append(headers, auth.c_str());

  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, call.method.c_str());
  if (!call.request_body.empty()) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, call.request_body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(call.request_body.size()));
  }
  curl_blob ca{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_NOCOPY};
  if (!config_.ca_pem.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &ca);
  curl_blob cert{const_cast<char*>(config_.client_cert_pem.data()), config_.client_cert_pem.size(),
                 CURL_BLOB_NOCOPY};
  curl_blob key{const_cast<char*>(config_.client_key_pem.data()), config_.client_key_pem.size(),
                CURL_BLOB_NOCOPY};
  if (!config_.client_cert_pem.empty()) {
    curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &call);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &call);

  return headers;
}

absl::Status KubeClient::Drive(CURLM* multi, Call& call, const absl::Notification* stop) {
  CURL* easy = call.easy;
  const absl::Duration start = clock_.Monotonic();
  call.last_bytes = start;
  curl_off_t seen_bytes = 0;
  absl::Status outcome;
  for (int running = 1;;) {
    curl_multi_perform(multi, &running);
    if (running == 0) break;
    const absl::Duration now = clock_.Monotonic();
    curl_off_t bytes = 0;
    curl_easy_getinfo(easy, CURLINFO_SIZE_DOWNLOAD_T, &bytes);
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    if (bytes != seen_bytes) {
      seen_bytes = bytes;
      call.last_bytes = now;
    }
    if (call.streaming() && code == 200 && !call.opened) {
      call.opened = true;
      call.last_bytes = now;
      if (call.on_open) call.on_open();
    }
    if (stop != nullptr && stop->HasBeenNotified()) {
      outcome = absl::CancelledError("stopped");
      break;
    }
    if (!call.opened && now - start > call.deadline) {
      outcome = absl::DeadlineExceededError(absl::StrCat(
          call.method, " ", call.path, ": no answer within ", absl::FormatDuration(call.deadline)));
      break;
    }
    if (call.opened && now - call.last_bytes > call.stall_after) {
      outcome = absl::DeadlineExceededError(
          absl::StrCat("watch ", call.path, ": stalled, nothing received for ",
                       absl::FormatDuration(absl::Trunc(now - call.last_bytes, absl::Seconds(1)))));
      break;
    }
    curl_multi_poll(multi, nullptr, 0,
                    static_cast<int>(absl::ToInt64Milliseconds(options_.poll_interval)), nullptr);
  }
  return outcome;
}

absl::Status KubeClient::Finish(CURLM* multi, Call& call) {
  CURL* easy = call.easy;
  absl::Status outcome;
  CURLcode result = CURLE_OK;
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
    if (msg->msg == CURLMSG_DONE) result = msg->data.result;
  }
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &call.http_code);
  if (!call.callback_error.ok()) {
    outcome = call.callback_error;
  } else if (result == CURLE_OPERATION_TIMEDOUT) {
    outcome =
        absl::DeadlineExceededError(absl::StrCat(call.path, ": ", curl_easy_strerror(result)));
  } else if (result != CURLE_OK) {
    outcome = absl::UnavailableError(
        absl::StrCat(config_.server, call.path, ": ", curl_easy_strerror(result)));
  }
  return outcome;
}

absl::StatusOr<nlohmann::json> KubeClient::Send(const std::string& method, const std::string& path,
                                                const std::string& body,
                                                const std::string& content_type) {
  return SendWithin(method, path, body, content_type, options_.request_timeout);
}

absl::StatusOr<nlohmann::json> KubeClient::SendWithin(const std::string& method,
                                                      const std::string& path,
                                                      const std::string& body,
                                                      const std::string& content_type,
                                                      absl::Duration deadline) {
  Call call;
  call.content_type = content_type;
  call.method = method;
  call.path = path;
  call.request_body = body;
  call.deadline = deadline;
  if (absl::Status s = Perform(call, nullptr); !s.ok()) return s;
  if (absl::Status s = StatusFromHttp(call.http_code, call.body, call.retry_after); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(method, " ", path, ": ", s.message()));
  }
  nlohmann::json parsed = nlohmann::json::parse(call.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::DataLossError(absl::StrCat(method, " ", path, ": the answer is not JSON"));
  }
  return parsed;
}

absl::StatusOr<KubeList> KubeClient::List(const KubeResource& resource, const std::string& ns) {
  KubeList list;
  std::string next;
  do {
    std::string path = absl::StrCat(resource.Path(ns), "?limit=", options_.page_size);
    if (!resource.field_selector.empty()) {
      absl::StrAppend(&path, "&fieldSelector=", Escape(resource.field_selector));
    }
    if (!next.empty()) absl::StrAppend(&path, "&continue=", Escape(next));
    absl::StatusOr<nlohmann::json> page = Send("GET", path, "");
    if (!page.ok()) return page.status();
    const nlohmann::json& meta = JsonField(*page, "metadata");
    if (list.resource_version.empty()) list.resource_version = JsonString(meta, "resourceVersion");
    if (page->is_object() && (*page)["items"].is_array()) {
      for (nlohmann::json& item : (*page)["items"]) {
        if (!item.is_object()) continue;
        // Items of a list carry no kind; the watch's objects do.
        item["apiVersion"] = resource.ApiVersion();
        item["kind"] = resource.kind;
        list.items.push_back(std::move(item));
      }
    }
    next = JsonString(meta, "continue");
  } while (!next.empty());
  return list;
}

absl::Status KubeClient::Watch(const KubeResource& resource, const KubeWatchRequest& request,
                               const std::function<void()>& on_open,
                               const std::function<void(const KubeWatchEvent&)>& on_event,
                               const absl::Notification* stop) {
  Call call;
  call.path = absl::StrCat(resource.Path(request.ns), "?watch=1&allowWatchBookmarks=true",
                           "&timeoutSeconds=", absl::ToInt64Seconds(request.timeout),
                           "&resourceVersion=", Escape(request.resource_version));
  if (!resource.field_selector.empty()) {
    absl::StrAppend(&call.path, "&fieldSelector=", Escape(resource.field_selector));
  }
  call.deadline = options_.request_timeout;
  call.stall_after = request.timeout + options_.stall_grace;
  call.on_open = on_open;
  call.on_event = on_event;
  if (absl::Status s = Perform(call, stop); !s.ok()) return s;
  if (call.http_code != 200) return StatusFromHttp(call.http_code, call.body, call.retry_after);
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> KubeClient::Get(const KubeResource& resource, const std::string& ns,
                                               const std::string& name) {
  return Send("GET", absl::StrCat(resource.Path(ns), "/", name), "");
}

absl::StatusOr<nlohmann::json> KubeClient::UpdateStatus(const KubeResource& resource,
                                                        const nlohmann::json& object,
                                                        absl::Duration timeout) {
  absl::StatusOr<std::string> path = ObjectPath(resource, object, "UpdateStatus");
  if (!path.ok()) return path.status();
  std::string target = absl::StrCat(*path, "/status");
  if (timeout == absl::InfiniteDuration()) return Send("PUT", target, object.dump());
  // Whole milliseconds, rounded down: the server must give up no later
  // than the caller's bound.
  const int64_t millis = absl::ToInt64Milliseconds(timeout);
  if (millis < 1) {
    return absl::DeadlineExceededError(
        absl::StrCat("PUT ", target, ": no time left (", absl::FormatDuration(timeout), ")"));
  }
  absl::StrAppend(&target, "?timeout=", millis, "ms");
  return SendWithin("PUT", target, object.dump(), "application/json",
                    std::min(timeout, options_.request_timeout));
}

absl::StatusOr<nlohmann::json> KubeClient::Create(const KubeResource& resource,
                                                  const std::string& ns,
                                                  const nlohmann::json& object) {
  absl::StatusOr<nlohmann::json> created = Send("POST", resource.Path(ns), object.dump());
  // On a create, the one conflict there is: the name is taken.
  if (IsConflict(created.status())) return absl::AlreadyExistsError(created.status().message());
  return created;
}

absl::StatusOr<nlohmann::json> KubeClient::Replace(const KubeResource& resource,
                                                   const nlohmann::json& object) {
  absl::StatusOr<std::string> path = ObjectPath(resource, object, "Replace");
  if (!path.ok()) return path.status();
  if (JsonString(JsonField(object, "metadata"), "resourceVersion").empty()) {
    return absl::InvalidArgumentError("Replace: the object has no metadata.resourceVersion");
  }
  return Send("PUT", *path, object.dump());
}

}  // namespace holdfast
