#include "src/election/kube_lease_store.h"

#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {

constexpr char kMicroTime[] = "%Y-%m-%dT%H:%M:%E6SZ";

std::string FormatMicroTime(absl::Time time) {
  return absl::FormatTime(kMicroTime, time, absl::UTCTimeZone());
}

absl::Time ParseTime(const nlohmann::json& value) {
  absl::Time time;
  std::string error;
  if (value.is_string() && absl::ParseTime(absl::RFC3339_full, value.get<std::string>(),
                                           absl::UTCTimeZone(), &time, &error)) {
    return time;
  }
  return absl::Time();
}

std::string StringField(const nlohmann::json& spec, const char* field) {
  auto it = spec.find(field);
  return it != spec.end() && it->is_string() ? it->get<std::string>() : "";
}

int32_t IntField(const nlohmann::json& spec, const char* field) {
  auto it = spec.find(field);
  return it != spec.end() && it->is_number_integer() ? it->get<int32_t>() : 0;
}

std::string VersionOf(const nlohmann::json& object) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  return meta->value("resourceVersion", "");
}

}  // namespace

const KubeResource kKubeLeases{"coordination.k8s.io", "v1", "leases", "Lease"};

nlohmann::json LeaseSpecJson(const LeaseRecord& record, nlohmann::json spec) {
  if (!spec.is_object()) spec = nlohmann::json::object();
  spec["holderIdentity"] = record.holder_identity;
  spec["leaseDurationSeconds"] = record.lease_duration_seconds;
  spec["leaseTransitions"] = record.lease_transitions;
  for (auto [field, time] :
       {std::pair{"acquireTime", record.acquire_time}, std::pair{"renewTime", record.renew_time}}) {
    if (time == absl::Time()) {
      spec.erase(field);
    } else {
      spec[field] = FormatMicroTime(time);
    }
  }
  if (record.preferred_holder.empty()) {
    spec.erase("preferredHolder");
  } else {
    spec["preferredHolder"] = record.preferred_holder;
  }
  return spec;
}

LeaseRecord LeaseRecordFromJson(const nlohmann::json& spec) {
  LeaseRecord record;
  if (!spec.is_object()) return record;
  record.holder_identity = StringField(spec, "holderIdentity");
  record.lease_duration_seconds = IntField(spec, "leaseDurationSeconds");
  record.lease_transitions = IntField(spec, "leaseTransitions");
  record.preferred_holder = StringField(spec, "preferredHolder");
  if (auto it = spec.find("acquireTime"); it != spec.end()) record.acquire_time = ParseTime(*it);
  if (auto it = spec.find("renewTime"); it != spec.end()) record.renew_time = ParseTime(*it);
  return record;
}

absl::StatusOr<std::string> KubeLeaseStore::Remember(nlohmann::json object) {
  std::string version = VersionOf(object);
  if (version.empty()) {
    return absl::DataLossError(
        absl::StrCat("Lease ", ns_, "/", name_, ": the answer has no metadata.resourceVersion"));
  }
  absl::MutexLock lock(&mu_);
  last_ = std::move(object);
  return version;
}

absl::StatusOr<LeaseStore::Versioned> KubeLeaseStore::Get() {
  absl::StatusOr<nlohmann::json> object = api_->Get(kKubeLeases, ns_, name_);
  if (!object.ok()) return object.status();
  Versioned current;
  auto spec = object->find("spec");
  current.record = LeaseRecordFromJson(spec == object->end() ? nlohmann::json() : *spec);
  absl::StatusOr<std::string> version = Remember(*std::move(object));
  if (!version.ok()) return version.status();
  current.resource_version = *version;
  return current;
}

absl::StatusOr<std::string> KubeLeaseStore::Create(const LeaseRecord& record) {
  nlohmann::json lease = {{"apiVersion", kKubeLeases.ApiVersion()},
                          {"kind", kKubeLeases.kind},
                          {"metadata", {{"name", name_}, {"namespace", ns_}}},
                          {"spec", LeaseSpecJson(record)}};
  absl::StatusOr<nlohmann::json> created = api_->Create(kKubeLeases, ns_, lease);
  if (!created.ok()) return created.status();
  return Remember(*std::move(created));
}

absl::StatusOr<std::string> KubeLeaseStore::Update(const LeaseRecord& record,
                                                   const std::string& resource_version) {
  nlohmann::json lease;
  {
    absl::MutexLock lock(&mu_);
    // Start from what was read at that version, so a replace keeps what
    // others put on the Lease (labels, annotations, fields we do not know).
    if (VersionOf(last_) == resource_version) lease = last_;
  }
  if (!lease.is_object()) {
    lease = {{"apiVersion", kKubeLeases.ApiVersion()}, {"kind", kKubeLeases.kind}};
  }
  lease["metadata"]["name"] = name_;
  lease["metadata"]["namespace"] = ns_;
  lease["metadata"]["resourceVersion"] = resource_version;
  lease["spec"] = LeaseSpecJson(record, lease.value("spec", nlohmann::json::object()));
  absl::StatusOr<nlohmann::json> replaced = api_->Replace(kKubeLeases, lease);
  if (!replaced.ok()) return replaced.status();
  return Remember(*std::move(replaced));
}

}  // namespace holdfast
