#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace holdfast {

// Where the fleet commands find a replica: its admin endpoint.
struct AdminEndpoint {
  std::string url = "http://127.0.0.1:19000";
  std::string token_file;  // empty: no bearer token
  absl::Duration timeout = absl::Seconds(10);
};

// Reads a replica's admin pages (plain HTTP or HTTPS, GET only) for the
// command line. Errors name the URL: UNAVAILABLE when the replica cannot be
// reached, PERMISSION_DENIED on 401/403, NOT_FOUND on 404, INTERNAL for
// another status or a body that is not the JSON asked for.
class AdminClient {
 public:
  // Reads the token file now (fails if it is set and unreadable or empty).
  static absl::StatusOr<AdminClient> Create(AdminEndpoint endpoint);

  // GET `path` ("/debug/proxies"); the body when the answer is 200, or,
  // for /readyz, 503 too.
  absl::StatusOr<std::string> Get(const std::string& path) const { return Request("GET", path); }
  absl::StatusOr<nlohmann::json> GetJson(const std::string& path) const;
  // POST `path` as an admin action (no body, X-Holdfast-Action); its JSON.
  absl::StatusOr<nlohmann::json> Act(const std::string& path) const;

  const std::string& url() const { return endpoint_.url; }

 private:
  absl::StatusOr<std::string> Request(const std::string& method, const std::string& path) const;

  AdminClient(AdminEndpoint endpoint, std::string token)
      : endpoint_(std::move(endpoint)), token_(std::move(token)) {}

  AdminEndpoint endpoint_;
  std::string token_;
};

}  // namespace holdfast
