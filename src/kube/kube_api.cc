#include "src/kube/kube_api.h"

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {
constexpr char kRetryAfterUrl[] = "holdfast.dev/retry-after-ms";
}

std::string KubeResource::Path(const std::string& ns) const {
  std::string base =
      group.empty() ? absl::StrCat("/api/", version) : absl::StrCat("/apis/", group, "/", version);
  if (!ns.empty()) absl::StrAppend(&base, "/namespaces/", ns);
  return absl::StrCat(base, "/", resource);
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryAfterUrl);
  int64_t ms = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &ms)) return std::nullopt;
  return absl::Milliseconds(ms);
}

absl::Status WithRetryAfter(absl::Status status, absl::Duration wait) {
  status.SetPayload(kRetryAfterUrl, absl::Cord(absl::StrCat(absl::ToInt64Milliseconds(wait))));
  return status;
}

}  // namespace holdfast
