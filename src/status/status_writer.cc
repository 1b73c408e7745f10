#include "src/status/status_writer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/common/backoff.h"
#include "src/common/log.h"

namespace holdfast {
namespace {

constexpr size_t kMaxReasons = 20;
constexpr size_t kMaxMessage = 1024;

// At most `limit` bytes, "..." included, cut between UTF-8 characters.
std::string Bounded(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t cut = limit - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

// JSON text of `value`; bytes that are not UTF-8 (which decoding refuses,
// but statuses also quote store keys) become U+FFFD instead of throwing.
std::string Dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The stored value minus who wrote it: what decides whether to rewrite.
std::string ContentOf(const std::string& value) {
  nlohmann::json parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return "";  // garbage: always rewritten
  parsed.erase("writer");
  parsed.erase("term");
  return Dump(parsed);
}

}  // namespace

nlohmann::json StoredStatusJson(const ObjectKey& key, const ObjectStatus& status) {
  nlohmann::json reasons = nlohmann::json::array();
  // Over the limit, the last entry says how many more there are.
  size_t shown = status.reasons.size() <= kMaxReasons ? status.reasons.size() : kMaxReasons - 1;
  for (size_t i = 0; i < shown; ++i) {
    const FieldError& reason = status.reasons[i];
    reasons.push_back({{"path", Bounded(reason.path, 256)},
                       {"message", Bounded(reason.message, kMaxMessage)},
                       {"location", Bounded(reason.location.ToString(), 512)}});
  }
  if (shown < status.reasons.size()) {
    reasons.push_back({{"path", ""},
                       {"message", absl::StrCat("and ", status.reasons.size() - shown, " more")},
                       {"location", ""}});
  }
  return {{"kind", key.kind},
          {"namespace", key.ns},
          {"name", key.name},
          {"state", StatusStateName(status.state)},
          {"servingLastGood", status.serving_last_good},
          {"reasons", reasons}};
}

StatusWriter::StatusWriter(Options options, KeyValueStore* store, LeaseElector* elector,
                           Random& random, MetricsRegistry* metrics)
    : options_(std::move(options)),
      store_(store),
      elector_(elector),
      random_(random),
      counters_(StatusCounters::Register(metrics)) {}

StatusWriter::~StatusWriter() { Stop(); }

std::string StatusWriter::StoreKey(const ObjectKey& key) const {
  // Names never hold '/', but a File status is named by a path or key.
  std::string name = absl::StrReplaceAll(key.name, {{"%", "%25"}, {"/", "%2F"}});
  return absl::StrCat(options_.prefix, "/status/", key.kind, "/", key.ns.empty() ? "-" : key.ns,
                      "/", name);
}

void StatusWriter::Update(const StatusMap& statuses) {
  {
    absl::MutexLock lock(&mu_);
    desired_ = statuses;
  }
  poller_.Wake();
}

void StatusWriter::Start() {
  elector_->OnChange([this](const Leadership&) { poller_.Wake(); });
  // Statuses only change with an Update() or a leadership change, both of
  // which wake the poller; a failed pass is retried like every retry of the
  // store, jittered and backing off, so a store that comes back is not met
  // by retries in step with everything else that lost it at once.
  poller_.StartAdaptive(
      absl::InfiniteDuration(),
      [this, backoff = Backoff(options_.min_backoff, options_.max_backoff, random_)]() mutable {
        if (Sync().ok()) {
          backoff.Reset();
          return absl::InfiniteDuration();
        }
        return backoff.Next();
      });
}

void StatusWriter::Stop() { poller_.Stop(); }

absl::Status StatusWriter::Reconcile(const Leadership& leadership) {
  absl::StatusOr<RangeResult> stored =
      store_->GetPrefix(options_.prefix + "/status/", /*revision=*/0);
  if (!stored.ok()) return stored.status();
  stored_.clear();
  for (const KeyValue& kv : stored->kvs) stored_[kv.key] = ContentOf(kv.value);
  term_ = leadership.term;
  LogInfo("status: leading term %d; %d statuses in the store, reconciling", term_, stored_.size());
  return absl::OkStatus();
}

absl::Status StatusWriter::Commit(const Leadership& leadership, etcdserverpb::TxnRequest& txn) {
  etcdserverpb::Compare* fence = txn.add_compare();
  fence->set_key(leadership.leader_key);
  fence->set_target(etcdserverpb::Compare::CREATE);
  fence->set_result(etcdserverpb::Compare::EQUAL);
  fence->set_create_revision(leadership.term);
  absl::StatusOr<etcdserverpb::TxnResponse> response = store_->Txn(txn);
  if (!response.ok()) {
    counters_.errors->Increment();
    return response.status();
  }
  if (!response->succeeded()) {
    counters_.fenced->Increment();
    LogWarning("status: the store refused a write of term %d (the term has ended); stepping down",
               leadership.term);
    elector_->ReportFenced(leadership.term);
    return absl::FailedPreconditionError(
        absl::StrCat("status write fenced: term ", leadership.term, " has ended"));
  }
  return absl::OkStatus();
}

absl::Status StatusWriter::Sync() {
  absl::MutexLock sync_lock(&sync_mu_);
  Leadership leadership = elector_->Current();
  if (!leadership.is_leader) {
    term_ = 0;
    stored_.clear();
    return absl::OkStatus();
  }
  if (leadership.term != term_) {
    if (absl::Status status = Reconcile(leadership); !status.ok()) return status;
  }
  std::map<std::string, nlohmann::json> desired;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, status] : desired_)
      desired[StoreKey(key)] = StoredStatusJson(key, status);
  }

  struct Op {
    std::string key;
    std::string content;                    // empty: delete
    const nlohmann::json* value = nullptr;  // into `desired`, for puts
  };
  std::vector<Op> ops;
  for (const auto& [key, json] : desired) {
    std::string content = Dump(json);
    auto stored = stored_.find(key);
    if (stored == stored_.end() || stored->second != content) {
      ops.push_back({key, std::move(content), &json});
    }
  }
  for (const auto& [key, content] : stored_) {
    if (!desired.contains(key)) ops.push_back({key, ""});
  }

  for (size_t begin = 0; begin < ops.size(); begin += options_.max_ops_per_txn) {
    // Leadership is re-checked (by the clock) before every transaction; the
    // fence in the transaction covers what the clock cannot see.
    if (!elector_->Current().is_leader) return absl::OkStatus();
    size_t end = std::min(ops.size(), begin + options_.max_ops_per_txn);
    etcdserverpb::TxnRequest txn;
    for (size_t i = begin; i < end; ++i) {
      if (ops[i].content.empty()) {
        txn.add_success()->mutable_request_delete_range()->set_key(ops[i].key);
        continue;
      }
      nlohmann::json value = *ops[i].value;
      value["writer"] = options_.replica_id;
      value["term"] = leadership.term;
      etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
      put->set_key(ops[i].key);
      put->set_value(Dump(value));
    }
    if (absl::Status status = Commit(leadership, txn); !status.ok()) {
      if (absl::IsFailedPrecondition(status)) {
        term_ = 0;
        stored_.clear();
      }
      return status;
    }
    for (size_t i = begin; i < end; ++i) {
      if (ops[i].content.empty()) {
        stored_.erase(ops[i].key);
      } else {
        stored_[ops[i].key] = ops[i].content;
        counters_.writes->Increment();
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace holdfast
