#include "src/app/election_flags.h"

#include <unistd.h>

#include <tuple>

#include "absl/strings/str_cat.h"
#include "src/app/etcd_flags.h"

namespace holdfast {

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "holdfast";
  return name;
}

absl::StatusOr<LeaseElector::Options> ElectionOptionsFromFlags(const ServeOptions& options,
                                                               std::string prefix) {
  LeaseElector::Options election;
  election.prefix = std::move(prefix);
  election.replica_id = options.replica_id.empty() ? HostName() : options.replica_id;
  for (auto [flag, text, out] :
       {std::tuple{"--lease-duration", &options.lease_duration, &election.lease_duration},
        std::tuple{"--renew-deadline", &options.renew_deadline, &election.renew_deadline},
        std::tuple{"--retry-period", &options.retry_period, &election.retry_period}}) {
    absl::StatusOr<absl::Duration> parsed = ParseFlagDuration(flag, *text);
    if (!parsed.ok()) return parsed.status();
    *out = *parsed;
  }
  if (absl::Status valid = LeaseElector::Validate(election); !valid.ok()) return valid;
  return election;
}

absl::Status CheckClientGoTimings(const LeaseElector::Options& options) {
  if (options.renew_deadline <= options.retry_period * 1.2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--renew-deadline (", absl::FormatDuration(options.renew_deadline),
                     ") must be longer than 1.2 x --retry-period (",
                     absl::FormatDuration(options.retry_period * 1.2), "), as client-go requires"));
  }
  return absl::OkStatus();
}

nlohmann::json LeaderToJson(const Leadership& leadership) {
  return {{"replica", leadership.replica_id},
          {"is_leader", leadership.is_leader},
          {"term", leadership.term},
          {"leader", leadership.leader_id},
          {"transitions", leadership.transitions}};
}

}  // namespace holdfast
