#include "src/cli/admin_client.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "src/common/read_file.h"

namespace holdfast {
namespace {

// Admin pages are small; a page beyond this is not one.
constexpr size_t kMaxBody = 256 << 20;

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  if (body->size() + size * count > kMaxBody) return 0;  // aborts the transfer
  body->append(data, size * count);
  return size * count;
}

std::once_flag curl_once;

}  // namespace

absl::StatusOr<AdminClient> AdminClient::Create(AdminEndpoint endpoint) {
  while (absl::EndsWith(endpoint.url, "/")) endpoint.url.pop_back();
  if (!absl::StartsWith(endpoint.url, "http://") && !absl::StartsWith(endpoint.url, "https://")) {
    endpoint.url = absl::StrCat("http://", endpoint.url);
  }
  std::string token;
  if (!endpoint.token_file.empty()) {
    absl::StatusOr<std::string> read = ReadRegularFile(endpoint.token_file, 64 << 10);
    if (!read.ok()) return read.status();
    token = std::string(absl::StripAsciiWhitespace(*read));
    if (token.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(endpoint.token_file, ": no token in it"));
    }
  }
  std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_ALL); });
  return AdminClient(std::move(endpoint), std::move(token));
}

absl::StatusOr<std::string> AdminClient::Request(const std::string& method,
                                                 const std::string& path) const {
  const std::string url = endpoint_.url + path;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> easy(curl_easy_init(), &curl_easy_cleanup);
  if (easy == nullptr) return absl::ResourceExhaustedError("curl_easy_init failed");
  curl_slist* headers = nullptr;
  const std::string auth = absl::StrCat("Authorization: Bearer ", token_);
  if (!token_.empty()) headers = curl_slist_append(headers, auth.c_str());
  if (method == "POST") headers = curl_slist_append(headers, "X-Holdfast-Action: cli");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> free_headers(headers,
                                                                           &curl_slist_free_all);
  std::string body;
  CURL* e = easy.get();
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  if (method == "POST") {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(endpoint_.timeout)));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &body);
  const CURLcode code = curl_easy_perform(e);
  if (code != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(url, ": ", curl_easy_strerror(code)));
  }
  long http = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &http);
  if (http == 200 || (http == 503 && path == "/readyz")) return body;
  const std::string said =
      absl::StrCat(url, ": HTTP ", http, ": ", absl::StripAsciiWhitespace(body.substr(0, 300)));
  if (http == 401 || http == 403) {
    return absl::PermissionDeniedError(absl::StrCat(said, " (pass --admin-token-file)"));
  }
  if (http == 404) return absl::NotFoundError(said);
  return absl::InternalError(said);
}

absl::StatusOr<nlohmann::json> AdminClient::Act(const std::string& path) const {
  absl::StatusOr<std::string> body = Request("POST", path);
  if (!body.ok()) return body.status();
  nlohmann::json doc = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return absl::InternalError(absl::StrCat(endpoint_.url, path, ": not JSON"));
  return doc;
}

absl::StatusOr<nlohmann::json> AdminClient::GetJson(const std::string& path) const {
  absl::StatusOr<std::string> body = Get(path);
  if (!body.ok()) return body.status();
  nlohmann::json doc = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return absl::InternalError(absl::StrCat(endpoint_.url, path, ": not JSON"));
  }
  return doc;
}

}  // namespace holdfast
