#pragma once

#include <curl/curl.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "src/common/clock.h"
#include "src/kube/kube_api.h"
#include "src/kube/kube_config.h"

namespace holdfast {

// KubeApi over HTTPS with libcurl: one connection per call (watches are
// long-lived; lists and writes are rare), HTTP/1.1, JSON.
//
// Every call has a deadline. A watch is bounded differently: the server is
// asked to end it after `KubeWatchRequest::timeout` and sends a bookmark
// shortly before that (and at least every minute), so a watch that has
// received no byte at all for `timeout + stall_grace` is taken for dead
// (DeadlineExceeded) even though TCP still looks open: a blackholed API
// server never closes it. Transfers are polled every `poll_interval` for
// the stop notification, so another thread stops a call promptly.
class KubeClient : public KubeApi {
 public:
  struct Options {
    absl::Duration request_timeout = absl::Seconds(10);  // list (per page), get, update
    absl::Duration connect_timeout = absl::Seconds(5);   // TCP and TLS handshake
    absl::Duration stall_grace = absl::Seconds(5);
    absl::Duration poll_interval = absl::Milliseconds(50);
    int page_size = 500;
    std::string user_agent = "holdfast";
  };

  // Fails only when `config` cannot be used (e.g. no server).
  static absl::StatusOr<std::unique_ptr<KubeClient>> Create(const KubeConfig& config,
                                                            Options options, const Clock& clock);
  ~KubeClient() override;

  absl::StatusOr<KubeList> List(const KubeResource& resource, const std::string& ns) override;
  absl::Status Watch(const KubeResource& resource, const KubeWatchRequest& request,
                     const std::function<void()>& on_open,
                     const std::function<void(const KubeWatchEvent&)>& on_event,
                     const absl::Notification* stop) override;
  absl::StatusOr<nlohmann::json> Get(const KubeResource& resource, const std::string& ns,
                                     const std::string& name) override;
  absl::StatusOr<nlohmann::json> UpdateStatus(const KubeResource& resource,
                                              const nlohmann::json& object,
                                              absl::Duration timeout) override;
  absl::StatusOr<nlohmann::json> Create(const KubeResource& resource, const std::string& ns,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> Replace(const KubeResource& resource,
                                         const nlohmann::json& object) override;

  // Any request, for tools and tests (e.g. server-side apply: PATCH with
  // application/apply-patch+yaml); the answer's JSON, or its error mapped
  // as KubeApi says.
  absl::StatusOr<nlohmann::json> Send(const std::string& method, const std::string& path,
                                      const std::string& body,
                                      const std::string& content_type = "application/json");

  const KubeConfig& config() const { return config_; }

  struct Call;  // one transfer's state (kube_client.cc)

 private:
  KubeClient(KubeConfig config, Options options, const Clock& clock);
  // Runs one request to completion: `call` says what to send and collects
  // the answer; returns the transfer's own failure (connection, deadline,
  // stop), not the HTTP status.
  absl::Status Perform(Call& call, const absl::Notification* stop);
  // Send() with the call's deadline given.
  absl::StatusOr<nlohmann::json> SendWithin(const std::string& method, const std::string& path,
                                            const std::string& body,
                                            const std::string& content_type,
                                            absl::Duration deadline);
  // Perform's steps: the transfer's options (returns the header list to
  // free), the loop that runs it against the deadline, stalls and `stop`,
  // and reading how it ended.
  curl_slist* SetUp(Call& call, const std::string& token);
  absl::Status Drive(CURLM* multi, Call& call, const absl::Notification* stop);
  absl::Status Finish(CURLM* multi, Call& call);

  const KubeConfig config_;
  const Options options_;
  const Clock& clock_;
  BearerToken token_;
};

// One line of a watch stream: an event, nothing (a blank line), or the
// status that ends the watch (an ERROR event, or a line that is not an
// event: DataLoss).
absl::StatusOr<std::optional<KubeWatchEvent>> ParseWatchLine(absl::string_view line);

// The absl status for an HTTP answer (see KubeApi): `body` may be a
// Kubernetes Status object, whose message is kept.
absl::Status StatusFromHttp(long http_code, const std::string& body,
                            const std::string& retry_after_header);

}  // namespace holdfast
