#include "src/etcd/etcd_shared_document.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace holdfast {

absl::StatusOr<DocumentVersion> EtcdSharedDocument::Read() {
  absl::StatusOr<RangeResult> range = store_->GetPrefix(key_, 0);
  if (!range.ok()) return range.status();
  for (const KeyValue& kv : range->kvs) {
    if (kv.key == key_) return DocumentVersion{kv.value, absl::StrCat(kv.mod_revision)};
  }
  return DocumentVersion{};
}

absl::StatusOr<std::string> EtcdSharedDocument::Replace(const std::string& text,
                                                        const std::string& revision) {
  int64_t mod_revision = 0;  // an absent key's
  if (!revision.empty() && !absl::SimpleAtoi(revision, &mod_revision)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(), ": revision '", revision, "' is not an etcd revision"));
  }
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* unchanged = txn.add_compare();
  unchanged->set_key(key_);
  unchanged->set_target(etcdserverpb::Compare::MOD);
  unchanged->set_result(etcdserverpb::Compare::EQUAL);
  unchanged->set_mod_revision(mod_revision);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key_);
  put->set_value(text);
  absl::StatusOr<etcdserverpb::TxnResponse> response = store_->Txn(txn);
  if (!response.ok()) return response.status();
  if (!response->succeeded()) {
    return absl::AbortedError(absl::StrCat(Describe(), ": changed since revision ",
                                           revision.empty() ? "(none)" : revision));
  }
  return absl::StrCat(response->header().revision());
}

}  // namespace holdfast
