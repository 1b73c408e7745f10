#include "src/kube/kube_shared_document.h"

#include "absl/strings/str_cat.h"
#include "src/kube/json_fields.h"

namespace holdfast {
namespace {

std::string VersionOf(const nlohmann::json& object) {
  return JsonString(JsonField(object, "metadata"), "resourceVersion");
}

}  // namespace

const KubeResource kKubeConfigMaps{"", "v1", "configmaps", "ConfigMap"};

std::string KubeSharedDocument::Describe() const {
  return absl::StrCat("ConfigMap ", ns_, "/", name_, " key ", key_);
}

absl::StatusOr<std::string> KubeSharedDocument::Stored(absl::StatusOr<nlohmann::json> object) {
  if (!object.ok()) return object.status();
  std::string version = VersionOf(*object);
  if (version.empty()) {
    return absl::DataLossError(
        absl::StrCat(Describe(), ": the answer has no metadata.resourceVersion"));
  }
  absl::MutexLock lock(&mu_);
  last_ = *std::move(object);
  return version;
}

absl::StatusOr<DocumentVersion> KubeSharedDocument::Read() {
  absl::StatusOr<nlohmann::json> object = api_->Get(kKubeConfigMaps, ns_, name_);
  if (absl::IsNotFound(object.status())) return DocumentVersion{};
  if (!object.ok()) return object.status();
  std::string text;
  if (auto data = object->find("data"); data != object->end() && data->is_object()) {
    if (auto value = data->find(key_); value != data->end() && value->is_string()) {
      text = value->get<std::string>();
    }
  }
  absl::StatusOr<std::string> version = Stored(*std::move(object));
  if (!version.ok()) return version.status();
  return DocumentVersion{std::move(text), *std::move(version)};
}

absl::StatusOr<std::string> KubeSharedDocument::Replace(const std::string& text,
                                                        const std::string& revision) {
  if (revision.empty()) {
    nlohmann::json object = {{"apiVersion", "v1"},
                             {"kind", "ConfigMap"},
                             {"metadata", {{"name", name_}, {"namespace", ns_}}},
                             {"data", {{key_, text}}}};
    absl::StatusOr<nlohmann::json> created = api_->Create(kKubeConfigMaps, ns_, object);
    if (absl::IsAlreadyExists(created.status())) {
      return absl::AbortedError(absl::StrCat(Describe(), ": created meanwhile by another"));
    }
    return Stored(std::move(created));
  }
  nlohmann::json object;
  {
    absl::MutexLock lock(&mu_);
    if (VersionOf(last_) == revision) object = last_;
  }
  if (!object.is_object()) object = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}};
  object["metadata"]["name"] = name_;
  object["metadata"]["namespace"] = ns_;
  object["metadata"]["resourceVersion"] = revision;
  if (!object["data"].is_object()) object["data"] = nlohmann::json::object();
  object["data"][key_] = text;
  return Stored(api_->Replace(kKubeConfigMaps, object));
}

}  // namespace holdfast
