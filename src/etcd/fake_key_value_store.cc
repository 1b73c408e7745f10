#include "src/etcd/fake_key_value_store.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {

// How often a waiting watch looks at its stop notification and the clock
// (neither can wake it); writes and SetUnavailable wake it at once.
constexpr absl::Duration kWatchPoll = absl::Milliseconds(5);

template <typename T>
bool Holds(etcdserverpb::Compare::CompareResult result, const T& stored, const T& wanted) {
  switch (result) {
    case etcdserverpb::Compare::EQUAL:
      return stored == wanted;
    case etcdserverpb::Compare::GREATER:
      return stored > wanted;
    case etcdserverpb::Compare::LESS:
      return stored < wanted;
    case etcdserverpb::Compare::NOT_EQUAL:
      return stored != wanted;
    default:
      return false;
  }
}

// What the fake does not model, refused rather than misread.
absl::Status Unsupported(const etcdserverpb::TxnRequest& request) {
  for (const etcdserverpb::Compare& compare : request.compare()) {
    if (!compare.range_end().empty()) {
      return absl::InvalidArgumentError("fake store: compares over key ranges are not modelled");
    }
  }
  for (const auto* ops : {&request.success(), &request.failure()}) {
    for (const etcdserverpb::RequestOp& op : *ops) {
      if (op.has_request_txn()) {
        return absl::InvalidArgumentError("fake store: nested transactions are not modelled");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

FakeKeyValueStore::FakeKeyValueStore(const Clock& clock) : clock_(clock) {}

absl::Status FakeKeyValueStore::UnavailableError() const {
  return absl::UnavailableError("fake store: unavailable");
}

void FakeKeyValueStore::RecordOutcome(bool ok) {
  failing_ = !ok;
  if (ok) last_success_ = clock_.Monotonic();
}

KeyValueStore::Contact FakeKeyValueStore::contact() const {
  absl::MutexLock lock(&mu_);
  Contact contact;
  // Compared by order, not time: a simulated clock may not move between them.
  contact.failing = failing_;
  contact.since_success = clock_.Monotonic() - last_success_;
  if (failing_) contact.last_error = "fake store: unavailable";
  return contact;
}

void FakeKeyValueStore::SetUnavailable(bool unavailable) {
  absl::MutexLock lock(&mu_);
  unavailable_ = unavailable;
}

int64_t FakeKeyValueStore::revision() const {
  absl::MutexLock lock(&mu_);
  return revision_;
}

int FakeKeyValueStore::watchers() const {
  absl::MutexLock lock(&mu_);
  return watchers_;
}

FakeKeyValueStore::Write FakeKeyValueStore::BeginWrite() { return Write{revision_ + 1, false}; }

void FakeKeyValueStore::EndWrite(const Write& write) {
  if (write.changed) revision_ = write.revision;
}

const FakeKeyValueStore::Record* FakeKeyValueStore::Current(const std::string& key) const {
  auto it = history_.find(key);
  if (it == history_.end() || it->second.empty() || it->second.back().deleted) return nullptr;
  return &it->second.back();
}

void FakeKeyValueStore::PutLocked(Write& write, const std::string& key, const std::string& value,
                                  int64_t lease) {
  const Record* now = Current(key);
  Record record{.value = value,
                .create_revision = now ? now->create_revision : write.revision,
                .mod_revision = write.revision,
                .version = now ? now->version + 1 : 1,
                .lease = lease};
  history_[key].push_back(record);
  WatchEvent event{.type = WatchEvent::Type::kPut,
                   .kv = KeyValue{.key = key,
                                  .value = value,
                                  .create_revision = record.create_revision,
                                  .mod_revision = record.mod_revision,
                                  .lease = lease}};
  log_.push_back(Logged{write.revision, std::move(event)});
  write.changed = true;
}

void FakeKeyValueStore::DeleteLocked(Write& write, const std::string& key) {
  if (Current(key) == nullptr) return;
  Record tombstone;
  tombstone.mod_revision = write.revision;
  tombstone.deleted = true;
  history_[key].push_back(tombstone);
  WatchEvent event;
  event.type = WatchEvent::Type::kDelete;
  event.kv.key = key;
  event.kv.mod_revision = write.revision;
  log_.push_back(Logged{write.revision, std::move(event)});
  write.changed = true;
}

std::vector<std::pair<std::string, FakeKeyValueStore::Record>> FakeKeyValueStore::ReadLocked(
    const std::string& key, const std::string& range_end, int64_t revision) const {
  const int64_t at = revision > 0 ? revision : std::numeric_limits<int64_t>::max();
  std::vector<std::pair<std::string, Record>> out;
  auto visit = [&](const std::string& name, const std::vector<Record>& versions) {
    for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
      if (it->mod_revision > at) continue;
      if (!it->deleted) out.emplace_back(name, *it);
      return;
    }
  };
  if (range_end.empty()) {
    if (auto it = history_.find(key); it != history_.end()) visit(it->first, it->second);
    return out;
  }
  const bool to_the_end = range_end == std::string(1, '\0');
  if (!to_the_end && range_end <= key) return out;
  auto end = to_the_end ? history_.end() : history_.lower_bound(range_end);
  for (auto it = history_.lower_bound(key); it != end; ++it) visit(it->first, it->second);
  return out;
}

absl::Status FakeKeyValueStore::CheckReadable(int64_t revision) {
  if (unavailable_) {
    RecordOutcome(false);
    return UnavailableError();
  }
  RecordOutcome(true);  // the store answered, if only to say no
  if (revision > 0 && revision < compacted_) {
    return absl::OutOfRangeError("etcdserver: mvcc: required revision has been compacted");
  }
  if (revision > revision_) {
    return absl::OutOfRangeError("etcdserver: mvcc: required revision is a future revision");
  }
  return absl::OkStatus();
}

absl::StatusOr<RangeResult> FakeKeyValueStore::GetPrefix(const std::string& prefix,
                                                         int64_t revision) {
  absl::MutexLock lock(&mu_);
  if (absl::Status status = CheckReadable(revision); !status.ok()) return status;
  RangeResult result;
  result.revision = revision > 0 ? revision : revision_;
  for (auto& [key, record] : ReadLocked(prefix, PrefixRangeEnd(prefix), result.revision)) {
    result.kvs.push_back(KeyValue{.key = key,
                                  .value = std::move(record.value),
                                  .create_revision = record.create_revision,
                                  .mod_revision = record.mod_revision,
                                  .lease = record.lease});
  }
  return result;
}

bool FakeKeyValueStore::Compares(const etcdserverpb::Compare& compare) const {
  const Record* found = Current(compare.key());
  // As etcd: nothing equals or differs from the value of a missing key.
  if (found == nullptr && compare.target() == etcdserverpb::Compare::VALUE) return false;
  const Record absent;
  const Record& kv = found ? *found : absent;
  switch (compare.target()) {
    case etcdserverpb::Compare::VERSION:
      return Holds(compare.result(), kv.version, compare.version());
    case etcdserverpb::Compare::CREATE:
      return Holds(compare.result(), kv.create_revision, compare.create_revision());
    case etcdserverpb::Compare::MOD:
      return Holds(compare.result(), kv.mod_revision, compare.mod_revision());
    case etcdserverpb::Compare::VALUE:
      return Holds(compare.result(), kv.value, compare.value());
    case etcdserverpb::Compare::LEASE:
      return Holds(compare.result(), kv.lease, compare.lease());
    default:
      return false;
  }
}

absl::StatusOr<etcdserverpb::TxnResponse> FakeKeyValueStore::Txn(
    const etcdserverpb::TxnRequest& request) {
  if (absl::Status status = Unsupported(request); !status.ok()) return status;
  absl::MutexLock lock(&mu_);
  if (absl::Status status = CheckReadable(0); !status.ok()) return status;
  bool succeeded = true;
  for (const etcdserverpb::Compare& compare : request.compare()) succeeded &= Compares(compare);
  const auto& ops = succeeded ? request.success() : request.failure();
  for (const etcdserverpb::RequestOp& op : ops) {
    if (op.has_request_range()) {
      if (absl::Status status = CheckReadable(op.request_range().revision()); !status.ok()) {
        return status;
      }
    }
  }
  etcdserverpb::TxnResponse response;
  Write write = BeginWrite();
  for (const etcdserverpb::RequestOp& op : ops) ApplyOp(write, op, response.add_responses());
  EndWrite(write);
  response.set_succeeded(succeeded);
  response.mutable_header()->set_revision(revision_);
  return response;
}

void FakeKeyValueStore::ApplyOp(Write& write, const etcdserverpb::RequestOp& op,
                                etcdserverpb::ResponseOp* response) {
  auto fill = [](const std::string& key, const Record& record, mvccpb::KeyValue* out) {
    out->set_key(key);
    out->set_value(record.value);
    out->set_create_revision(record.create_revision);
    out->set_mod_revision(record.mod_revision);
    out->set_version(record.version);
    out->set_lease(record.lease);
  };
  if (op.has_request_put()) {
    const etcdserverpb::PutRequest& put = op.request_put();
    etcdserverpb::PutResponse* out = response->mutable_response_put();
    if (const Record* prev = Current(put.key()); prev && put.prev_kv()) {
      fill(put.key(), *prev, out->mutable_prev_kv());
    }
    PutLocked(write, put.key(), put.value(), put.lease());
  } else if (op.has_request_delete_range()) {
    const etcdserverpb::DeleteRangeRequest& del = op.request_delete_range();
    etcdserverpb::DeleteRangeResponse* out = response->mutable_response_delete_range();
    for (const auto& [key, record] : ReadLocked(del.key(), del.range_end(), 0)) {
      if (del.prev_kv()) fill(key, record, out->add_prev_kvs());
      DeleteLocked(write, key);
      out->set_deleted(out->deleted() + 1);
    }
  } else if (op.has_request_range()) {
    ApplyRange(op.request_range(), response->mutable_response_range());
  }
}

void FakeKeyValueStore::ApplyRange(const etcdserverpb::RangeRequest& request,
                                   etcdserverpb::RangeResponse* response) {
  std::vector<std::pair<std::string, Record>> kvs =
      ReadLocked(request.key(), request.range_end(), request.revision());
  using Range = etcdserverpb::RangeRequest;
  auto field = [&](const std::pair<std::string, Record>& kv) {
    switch (request.sort_target()) {
      case Range::VERSION:
        return kv.second.version;
      case Range::CREATE:
        return kv.second.create_revision;
      case Range::MOD:
        return kv.second.mod_revision;
      default:
        return int64_t{0};
    }
  };
  if (request.sort_target() == Range::VALUE) {
    std::stable_sort(kvs.begin(), kvs.end(),
                     [](const auto& a, const auto& b) { return a.second.value < b.second.value; });
  } else if (request.sort_target() != Range::KEY) {
    std::stable_sort(kvs.begin(), kvs.end(),
                     [&](const auto& a, const auto& b) { return field(a) < field(b); });
  }
  if (request.sort_order() == Range::DESCEND) std::reverse(kvs.begin(), kvs.end());
  response->set_count(static_cast<int64_t>(kvs.size()));
  if (request.limit() > 0 && kvs.size() > static_cast<size_t>(request.limit())) {
    kvs.resize(request.limit());
    response->set_more(true);
  }
  if (request.count_only()) return;
  for (const auto& [key, record] : kvs) {
    mvccpb::KeyValue* out = response->add_kvs();
    out->set_key(key);
    if (!request.keys_only()) out->set_value(record.value);
    out->set_create_revision(record.create_revision);
    out->set_mod_revision(record.mod_revision);
    out->set_version(record.version);
    out->set_lease(record.lease);
  }
}

int64_t FakeKeyValueStore::Put(const std::string& key, const std::string& value, int64_t lease) {
  absl::MutexLock lock(&mu_);
  Write write = BeginWrite();
  PutLocked(write, key, value, lease);
  EndWrite(write);
  return revision_;
}

int64_t FakeKeyValueStore::Delete(const std::string& key, bool prefix) {
  absl::MutexLock lock(&mu_);
  Write write = BeginWrite();
  for (const auto& [name, record] : ReadLocked(key, prefix ? PrefixRangeEnd(key) : "", 0)) {
    DeleteLocked(write, name);
  }
  EndWrite(write);
  return revision_;
}

int64_t FakeKeyValueStore::RevokeLease(int64_t lease) {
  absl::MutexLock lock(&mu_);
  Write write = BeginWrite();
  for (const auto& [name, record] : ReadLocked("", std::string(1, '\0'), 0)) {
    if (record.lease == lease) DeleteLocked(write, name);
  }
  EndWrite(write);
  return revision_;
}

void FakeKeyValueStore::Compact(int64_t revision) {
  absl::MutexLock lock(&mu_);
  revision = std::min(revision, revision_);
  if (revision <= compacted_) return;
  compacted_ = revision;
  // Keep, per key, the version in force at `revision` (unless deleted by
  // then) and every later one.
  for (auto it = history_.begin(); it != history_.end();) {
    std::vector<Record>& versions = it->second;
    size_t keep = 0;
    while (keep + 1 < versions.size() && versions[keep + 1].mod_revision <= revision) ++keep;
    if (versions[keep].deleted && versions[keep].mod_revision <= revision) ++keep;
    versions.erase(versions.begin(), versions.begin() + keep);
    it = versions.empty() ? history_.erase(it) : std::next(it);
  }
  std::erase_if(log_, [&](const Logged& logged) { return logged.revision < revision; });
}

std::vector<WatchEvent> FakeKeyValueStore::EventsSince(const std::string& prefix,
                                                       int64_t from) const {
  auto first =
      std::lower_bound(log_.begin(), log_.end(), from,
                       [](const Logged& logged, int64_t r) { return logged.revision < r; });
  std::vector<WatchEvent> events;
  for (auto it = first; it != log_.end(); ++it) {
    if (it->event.kv.key.starts_with(prefix)) events.push_back(it->event);
  }
  return events;
}

absl::Status FakeKeyValueStore::Watch(const WatchOptions& options,
                                      const std::function<void(const WatchBatch&)>& on_batch,
                                      absl::Notification* stop, int64_t* compacted_revision) {
  int64_t next;
  absl::Duration last_sent;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status status = CheckReadable(0); !status.ok()) return status;
    next = options.start_revision > 0 ? options.start_revision : revision_ + 1;
    last_sent = clock_.Monotonic();
    ++watchers_;
  }
  absl::Status ended;
  while (ended.ok()) {
    WatchBatch batch;
    {
      absl::MutexLock lock(&mu_);
      ended = NextBatch(options, stop, next, last_sent, batch, compacted_revision);
    }
    if (ended.ok() && batch.revision > 0) on_batch(batch);
  }
  absl::MutexLock lock(&mu_);
  --watchers_;
  return ended;
}

absl::Status FakeKeyValueStore::NextBatch(const WatchOptions& options, absl::Notification* stop,
                                          int64_t& next, absl::Duration& last_sent,
                                          WatchBatch& batch, int64_t* compacted_revision) {
  auto progress_due = [&] { return clock_.Monotonic() - last_sent >= options.progress_interval; };
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return unavailable_ || revision_ >= next || stop->HasBeenNotified() || progress_due();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), kWatchPoll);
  if (stop->HasBeenNotified()) return absl::CancelledError("watch stopped");
  if (unavailable_) {
    RecordOutcome(false);
    return UnavailableError();
  }
  if (next < compacted_) {
    if (compacted_revision) *compacted_revision = compacted_;
    return absl::OutOfRangeError(absl::StrCat("fake watch from revision ", next,
                                              ": required revision has been compacted (at ",
                                              compacted_, ")"));
  }
  if (revision_ >= next) {
    batch.events = EventsSince(options.prefix, next);
    next = revision_ + 1;
    if (batch.events.empty()) return absl::OkStatus();  // nothing under the prefix
  } else if (!progress_due()) {
    return absl::OkStatus();
  }
  batch.revision = revision_;
  last_sent = clock_.Monotonic();
  RecordOutcome(true);
  return absl::OkStatus();
}

}  // namespace holdfast
