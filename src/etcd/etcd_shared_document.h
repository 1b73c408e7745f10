#pragma once

#include <string>

#include "src/common/shared_document.h"
#include "src/etcd/key_value_store.h"

namespace holdfast {

// A SharedDocument in one etcd key: the revision is the key's
// mod_revision, and a replace is a transaction conditioned on it (on the
// key's absence for the first).
class EtcdSharedDocument : public SharedDocument {
 public:
  EtcdSharedDocument(KeyValueStore* store, std::string key) : store_(store), key_(std::move(key)) {}

  absl::StatusOr<DocumentVersion> Read() override;
  absl::StatusOr<std::string> Replace(const std::string& text,
                                      const std::string& revision) override;
  std::string Describe() const override { return "etcd key " + key_; }

 private:
  KeyValueStore* store_;
  const std::string key_;
};

}  // namespace holdfast
