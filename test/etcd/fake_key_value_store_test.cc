// FakeKeyValueStore: the etcd semantics its users rely on.
#include "src/etcd/fake_key_value_store.h"

#include <thread>

#include "gtest/gtest.h"

namespace holdfast {
namespace {

// A watch on its own thread, its batches collected for the test.
class Watcher {
 public:
  Watcher(FakeKeyValueStore& store, WatchOptions options) {
    thread_ = std::thread([this, &store, options] {
      absl::Status ended = store.Watch(
          options,
          [this](const WatchBatch& batch) {
            absl::MutexLock lock(&mu_);
            batches_.push_back(batch);
          },
          &stop_, &compacted_);
      absl::MutexLock lock(&mu_);
      ended_ = ended;
      done_ = true;
    });
  }
  ~Watcher() { (void)Stop(); }

  absl::Status Stop() {
    if (!stop_.HasBeenNotified()) stop_.Notify();
    if (thread_.joinable()) thread_.join();
    absl::MutexLock lock(&mu_);
    return ended_;
  }
  // Waits (a bounded while, for the watch thread, not for time to pass)
  // until `count` batches arrived or the watch ended.
  std::vector<WatchBatch> WaitForBatches(size_t count) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return batches_.size() >= count || done_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(10));
    return batches_;
  }
  absl::Status WaitForEnd() {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&done_), absl::Seconds(10));
    return done_ ? ended_ : absl::DeadlineExceededError("watch still open");
  }
  int64_t compacted() {
    absl::MutexLock lock(&mu_);
    return compacted_;
  }

 private:
  absl::Mutex mu_;
  std::vector<WatchBatch> batches_ ABSL_GUARDED_BY(mu_);
  absl::Status ended_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  int64_t compacted_ = 0;  // written by the watch before it ends
  absl::Notification stop_;
  std::thread thread_;
};

etcdserverpb::TxnResponse MustTxn(FakeKeyValueStore& store, const etcdserverpb::TxnRequest& txn) {
  absl::StatusOr<etcdserverpb::TxnResponse> response = store.Txn(txn);
  EXPECT_TRUE(response.ok()) << response.status();
  return response.value_or(etcdserverpb::TxnResponse());
}

// The key as a range op in a transaction sees it, with its version.
mvccpb::KeyValue Read(FakeKeyValueStore& store, const std::string& key) {
  etcdserverpb::TxnRequest txn;
  txn.add_success()->mutable_request_range()->set_key(key);
  etcdserverpb::TxnResponse response = MustTxn(store, txn);
  const auto& kvs = response.responses(0).response_range().kvs();
  return kvs.empty() ? mvccpb::KeyValue() : kvs[0];
}

etcdserverpb::Compare* AddCompare(etcdserverpb::TxnRequest& txn, const std::string& key,
                                  etcdserverpb::Compare::CompareTarget target,
                                  etcdserverpb::Compare::CompareResult result) {
  etcdserverpb::Compare* compare = txn.add_compare();
  compare->set_key(key);
  compare->set_target(target);
  compare->set_result(result);
  return compare;
}

TEST(FakeKeyValueStore, RevisionsAndVersionsLikeEtcd) {
  FakeKeyValueStore store;
  EXPECT_EQ(store.revision(), 1);
  EXPECT_EQ(store.Put("/a", "1"), 2);
  EXPECT_EQ(store.Put("/a", "2"), 3);
  mvccpb::KeyValue a = Read(store, "/a");
  EXPECT_EQ(a.value(), "2");
  EXPECT_EQ(a.create_revision(), 2);
  EXPECT_EQ(a.mod_revision(), 3);
  EXPECT_EQ(a.version(), 2);

  EXPECT_EQ(store.Delete("/a"), 4);
  EXPECT_EQ(store.Delete("/a"), 4);  // nothing to delete: no write
  EXPECT_EQ(store.Put("/a", "3"), 5);
  a = Read(store, "/a");
  EXPECT_EQ(a.create_revision(), 5);  // created again
  EXPECT_EQ(a.version(), 1);
}

TEST(FakeKeyValueStore, GetPrefixReadsAtOneRevisionUntilCompacted) {
  FakeKeyValueStore store;
  store.Put("/p/a", "a1");
  int64_t before = store.Put("/p/b", "b1");
  store.Put("/q/c", "c1");  // not under the prefix
  store.Put("/p/a", "a2");
  int64_t after = store.Delete("/p/b");

  RangeResult now = store.GetPrefix("/p/", 0).value();
  EXPECT_EQ(now.revision, after);
  ASSERT_EQ(now.kvs.size(), 1u);
  EXPECT_EQ(now.kvs[0].value, "a2");

  RangeResult then = store.GetPrefix("/p/", before).value();
  EXPECT_EQ(then.revision, before);
  ASSERT_EQ(then.kvs.size(), 2u);
  EXPECT_EQ(then.kvs[0].key, "/p/a");
  EXPECT_EQ(then.kvs[0].value, "a1");
  EXPECT_EQ(then.kvs[1].key, "/p/b");

  store.Compact(after - 1);
  EXPECT_TRUE(absl::IsOutOfRange(store.GetPrefix("/p/", before).status()));
  // The compaction revision itself stays readable.
  RangeResult kept = store.GetPrefix("/p/", after - 1).value();
  ASSERT_EQ(kept.kvs.size(), 2u);
  EXPECT_EQ(kept.kvs[0].value, "a2");
  EXPECT_TRUE(absl::IsOutOfRange(store.GetPrefix("/p/", after + 1).status()));
}

TEST(FakeKeyValueStore, TxnCreatesOnlyAnAbsentKeyAsTheElectionDoes) {
  FakeKeyValueStore store;
  auto create = [&](const std::string& value) {
    etcdserverpb::TxnRequest txn;
    AddCompare(txn, "/e/a", etcdserverpb::Compare::CREATE, etcdserverpb::Compare::EQUAL)
        ->set_create_revision(0);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key("/e/a");
    put->set_value(value);
    put->set_lease(7);
    txn.add_failure()->mutable_request_range()->set_key("/e/a");
    return MustTxn(store, txn);
  };
  etcdserverpb::TxnResponse first = create("one");
  EXPECT_TRUE(first.succeeded());
  EXPECT_EQ(first.header().revision(), 2);
  etcdserverpb::TxnResponse second = create("two");
  EXPECT_FALSE(second.succeeded());
  EXPECT_EQ(second.header().revision(), 2);  // no write
  const mvccpb::KeyValue& existing = second.responses(0).response_range().kvs(0);
  EXPECT_EQ(existing.value(), "one");
  EXPECT_EQ(existing.create_revision(), 2);
  EXPECT_EQ(existing.lease(), 7);

  // Revoking the lease deletes the key.
  EXPECT_EQ(store.RevokeLease(7), 3);
  EXPECT_TRUE(create("three").succeeded());
}

TEST(FakeKeyValueStore, TxnComparesValueVersionAndModRevision) {
  FakeKeyValueStore store;
  int64_t mod = store.Put("/k", "v");
  auto holds = [&](const std::string& key, etcdserverpb::Compare::CompareTarget target,
                   etcdserverpb::Compare::CompareResult result, auto set) {
    etcdserverpb::TxnRequest txn;
    set(AddCompare(txn, key, target, result));
    return MustTxn(store, txn).succeeded();
  };
  using C = etcdserverpb::Compare;
  auto value = [](const char* v) { return [v](C* c) { c->set_value(v); }; };
  EXPECT_TRUE(holds("/k", C::VALUE, C::EQUAL, value("v")));
  EXPECT_TRUE(holds("/k", C::VALUE, C::NOT_EQUAL, value("w")));
  // A missing key's value neither equals nor differs from anything.
  EXPECT_FALSE(holds("/none", C::VALUE, C::EQUAL, value("")));
  EXPECT_FALSE(holds("/none", C::VALUE, C::NOT_EQUAL, value("x")));
  EXPECT_TRUE(holds("/k", C::VERSION, C::EQUAL, [](C* c) { c->set_version(1); }));
  EXPECT_TRUE(holds("/none", C::VERSION, C::EQUAL, [](C* c) { c->set_version(0); }));
  EXPECT_TRUE(holds("/k", C::MOD, C::EQUAL, [&](C* c) { c->set_mod_revision(mod); }));
  EXPECT_TRUE(holds("/k", C::MOD, C::LESS, [&](C* c) { c->set_mod_revision(mod + 1); }));
  EXPECT_FALSE(holds("/k", C::MOD, C::GREATER, [&](C* c) { c->set_mod_revision(mod); }));
  EXPECT_TRUE(holds("/k", C::CREATE, C::EQUAL, [&](C* c) { c->set_create_revision(mod); }));
}

TEST(FakeKeyValueStore, TxnWritesAtOneRevisionAndRangesSortAndLimit) {
  FakeKeyValueStore store;
  store.Put("/c/z", "first");
  store.Put("/c/a", "second");
  etcdserverpb::TxnRequest txn;
  for (const char* key : {"/s/1", "/s/2"}) {
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value("x");
  }
  txn.add_success()->mutable_request_delete_range()->set_key("/c/z");
  etcdserverpb::RangeRequest* range = txn.add_success()->mutable_request_range();
  range->set_key("/c/");
  range->set_range_end(PrefixRangeEnd("/c/"));
  range->set_sort_target(etcdserverpb::RangeRequest::CREATE);
  range->set_sort_order(etcdserverpb::RangeRequest::ASCEND);
  range->set_limit(1);
  etcdserverpb::TxnResponse response = MustTxn(store, txn);
  EXPECT_EQ(response.header().revision(), 4);  // one write for three changes
  EXPECT_EQ(response.responses(2).response_delete_range().deleted(), 1);
  const etcdserverpb::RangeResponse& first = response.responses(3).response_range();
  ASSERT_EQ(first.kvs_size(), 1);
  EXPECT_EQ(first.kvs(0).key(), "/c/a");  // /c/z is gone within the transaction
  EXPECT_FALSE(first.more());
  EXPECT_EQ(store.GetPrefix("/s/", 0)->kvs.size(), 2u);
  EXPECT_EQ(store.GetPrefix("/s/", 0)->kvs[1].mod_revision, 4);
}

TEST(FakeKeyValueStore, WatchDeliversEveryChangeInOrderFromTheStartRevision) {
  FakeKeyValueStore store;
  store.Put("/w/a", "1");
  int64_t start = store.Put("/w/b", "1");
  store.Put("/other", "1");
  store.Put("/w/a", "2");
  Watcher watcher(store, WatchOptions{.prefix = "/w/", .start_revision = start});
  std::vector<WatchBatch> seen = watcher.WaitForBatches(1);
  store.Delete("/w/b");
  seen = watcher.WaitForBatches(2);
  EXPECT_TRUE(absl::IsCancelled(watcher.Stop()));

  std::vector<std::pair<WatchEvent::Type, std::string>> events;
  int64_t last = 0;
  for (const WatchBatch& batch : seen) {
    for (const WatchEvent& event : batch.events) {
      EXPECT_GT(event.kv.mod_revision, last);
      last = event.kv.mod_revision;
      events.emplace_back(event.type, event.kv.key + "=" + event.kv.value);
    }
  }
  using T = WatchEvent::Type;
  EXPECT_EQ(events, (std::vector<std::pair<T, std::string>>{
                        {T::kPut, "/w/b=1"}, {T::kPut, "/w/a=2"}, {T::kDelete, "/w/b="}}));
}

TEST(FakeKeyValueStore, WatchFromACompactedRevisionFailsOutOfRange) {
  FakeKeyValueStore store;
  int64_t old = store.Put("/w/a", "1");
  int64_t now = store.Put("/w/a", "2");
  store.Compact(now);
  Watcher watcher(store, WatchOptions{.prefix = "/w/", .start_revision = old});
  absl::Status ended = watcher.WaitForEnd();
  EXPECT_TRUE(absl::IsOutOfRange(ended)) << ended;
  EXPECT_EQ(watcher.compacted(), now);
  EXPECT_TRUE(watcher.WaitForBatches(0).empty());
}

TEST(FakeKeyValueStore, ProgressNotificationsFollowTheClock) {
  SimulatedClock clock;
  FakeKeyValueStore store(clock);
  store.Put("/w/a", "1");
  Watcher watcher(store, WatchOptions{.prefix = "/w/", .progress_interval = absl::Seconds(5)});
  store.Put("/elsewhere", "1");  // moves the revision, nothing to tell this watch
  for (int i = 0; i < 100 && store.watchers() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  clock.Advance(absl::Seconds(5));
  std::vector<WatchBatch> seen = watcher.WaitForBatches(1);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].events.empty());
  EXPECT_EQ(seen[0].revision, store.revision());
}

TEST(FakeKeyValueStore, UnavailableFailsEveryCallAndEndsWatchesUntilBack) {
  SimulatedClock clock;
  FakeKeyValueStore store(clock);
  ASSERT_TRUE(store.GetPrefix("/", 0).ok());
  Watcher watcher(store, WatchOptions{.prefix = "/w/"});
  store.SetUnavailable(true);
  absl::Status ended = watcher.WaitForEnd();
  EXPECT_TRUE(absl::IsUnavailable(ended)) << ended;
  EXPECT_TRUE(absl::IsUnavailable(store.GetPrefix("/", 0).status()));
  EXPECT_TRUE(absl::IsUnavailable(store.Txn(etcdserverpb::TxnRequest()).status()));
  clock.Advance(absl::Seconds(6));
  KeyValueStore::Contact contact = store.contact();
  EXPECT_TRUE(contact.failing);
  EXPECT_EQ(contact.since_success, absl::Seconds(6));
  EXPECT_GT(contact.since_success, store.call_timeout());
  // Other clients still reach the store.
  int64_t written = store.Put("/w/a", "1");

  store.SetUnavailable(false);
  RangeResult listed = store.GetPrefix("/w/", 0).value();
  EXPECT_EQ(listed.revision, written);
  EXPECT_FALSE(store.contact().failing);
}

}  // namespace
}  // namespace holdfast
