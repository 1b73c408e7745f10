#pragma once

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "src/common/shared_document.h"
#include "src/kube/kube_api.h"

namespace holdfast {

extern const KubeResource kKubeConfigMaps;

// A SharedDocument in one key of a ConfigMap's data: the revision is the
// ConfigMap's resourceVersion; the first replace creates the ConfigMap,
// later ones replace it conditioned on the resourceVersion read (keeping
// what else others put on it). Needs get, create and update on it.
class KubeSharedDocument : public SharedDocument {
 public:
  KubeSharedDocument(KubeApi* api, std::string ns, std::string name, std::string key)
      : api_(api), ns_(std::move(ns)), name_(std::move(name)), key_(std::move(key)) {}

  absl::StatusOr<DocumentVersion> Read() override;
  absl::StatusOr<std::string> Replace(const std::string& text,
                                      const std::string& revision) override;
  std::string Describe() const override;

 private:
  absl::StatusOr<std::string> Stored(absl::StatusOr<nlohmann::json> object);

  KubeApi* api_;
  const std::string ns_;
  const std::string name_;
  const std::string key_;
  absl::Mutex mu_;
  nlohmann::json last_ ABSL_GUARDED_BY(mu_);  // the ConfigMap as last read or written
};

}  // namespace holdfast
