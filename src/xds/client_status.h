#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "envoy/service/status/v3/csds.pb.h"
#include "src/xds/proxy_state.h"

namespace holdfast {

// Answers a CSDS request (envoy.service.status.v3) from what this replica's
// streams sent their proxies and what the proxies replied.
//
// One ClientConfig per node id, sorted by it (a proxy with one stream per
// type is one node); those matching any of the request's node_matchers, or
// all when there are none. Each resource a stream sent is one
// GenericXdsConfig:
// - ACKED / SYNCED: the proxy ACKed the version it holds;
// - REQUESTED / STALE: sent, its ACK not yet in;
// - NACKED / ERROR: the latest response of its type was NACKed; the entry
//   shows the version the proxy still holds (if any) and error_state the
//   rejected version, the proxy's error message and when;
// - DOES_NOT_EXIST: a name the proxy asked for by name that the snapshot
//   it was sent does not have.
// Resource contents pass through RedactSecrets (a Secret's key reads
// "[redacted]"); a resource of a type this build cannot parse is listed
// without contents. exclude_resource_contents leaves all contents out.
//
// Errors: INVALID_ARGUMENT for a node matcher that cannot be compiled,
// naming its field; RESOURCE_EXHAUSTED when the answer would take more
// than about `max_bytes` (a whole large fleet with every resource: about
// 19 KB per proxy holding a 102-resource gateway), so that one request
// cannot make the replica build hundreds of megabytes.
inline constexpr size_t kMaxClientStatusBytes = 64 << 20;
absl::StatusOr<envoy::service::status::v3::ClientStatusResponse> AnswerClientStatus(
    const envoy::service::status::v3::ClientStatusRequest& request,
    const std::vector<ProxyView>& proxies, size_t max_bytes = kMaxClientStatusBytes);

}  // namespace holdfast
