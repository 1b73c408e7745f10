#include "src/xds/view_cache.h"

#include "gtest/gtest.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using testing::Build;
using testing::EdsCluster;
using testing::Endpoints;

const std::string kEdsType(type_url::kClusterLoadAssignment);

std::vector<std::string> Names(const std::vector<ResourcePtr>& resources) {
  std::vector<std::string> names;
  for (const ResourcePtr& r : resources) names.push_back(r->name());
  return names;
}

TEST(NameSetPoolTest, EqualSetsAreOneObjectWhileUsed) {
  NameSetPool pool;
  NameSetPtr a = pool.Intern({"b", "a", "b"});
  NameSetPtr b = pool.Intern({"a", "b"});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(a->contains("a"));
  EXPECT_FALSE(a->contains("c"));
  EXPECT_NE(pool.Intern({"a"}), a);
  a.reset();
  b.reset();
  EXPECT_EQ(pool.live_sets(), 0u) << "the pool holds sets weakly";
}

class ViewCacheTest : public ::testing::Test {
 protected:
  Selection Named(std::vector<std::string> names) {
    return Selection{false, views_.names().Intern(std::move(names))};
  }
  ViewCache views_;
  SnapshotPtr before_ = Build({EdsCluster("a"), Endpoints("a", 1), EdsCluster("b"),
                               Endpoints("b", 1), EdsCluster("c"), Endpoints("c", 1)});
  SnapshotPtr after_ = Build({EdsCluster("a"), Endpoints("a", 2), EdsCluster("c"),
                              Endpoints("c", 1), EdsCluster("d"), Endpoints("d", 1)});
};

TEST_F(ViewCacheTest, SelectedIsSharedByEqualSubscriptions) {
  // Streams hold their subscriptions' name sets; the pool shares them.
  Selection first = Named({"a", "d", "ghost"});
  Selection second = Named({"ghost", "d", "a"});
  ResourceListPtr one = views_.Selected(after_, kEdsType, first);
  ResourceListPtr two = views_.Selected(after_, kEdsType, second);
  EXPECT_EQ(one, two) << "computed once";
  EXPECT_EQ(Names(one->resources), (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(one->digest, VersionOf(one->resources));
  ResourceListPtr all = views_.Selected(after_, kEdsType, Selection{true, nullptr});
  EXPECT_EQ(all->digest, after_->TypeVersion(kEdsType));
}

TEST_F(ViewCacheTest, ChangedFindsUpdatesAdditionsAndRemovalsInBothWalks) {
  // Wildcard walks both maps; a short name list looks names up: same answer.
  for (const Selection& selection :
       {Selection{true, nullptr}, Named({"a", "b", "c", "d"}),
        Named({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"})}) {
    ResourceListPtr changed = views_.Changed(before_, after_, kEdsType, selection);
    EXPECT_EQ(Names(changed->resources), (std::vector<std::string>{"a", "d"}));
    EXPECT_EQ(changed->removed, (std::vector<std::string>{"b"}));
  }
  ResourceListPtr narrow = views_.Changed(before_, after_, kEdsType, Named({"c", "b"}));
  EXPECT_TRUE(narrow->resources.empty());
  EXPECT_EQ(narrow->removed, (std::vector<std::string>{"b"}));
}

// view_cache.cc sweeps out expired entries whenever the table reaches
// max(256, twice the entries that survived the last sweep): dead entries
// never make the table reach that size.
constexpr size_t kSweepFloor = 256;

// Snapshot `i`, allocated with its control block: its memory stays while an
// entry's weak pointer to it does, so no later snapshot takes its address
// (and its dead entries) until the entries are swept.
SnapshotPtr Distinct(int i) {
  return std::make_shared<const Snapshot>(*Build({EdsCluster("a"), Endpoints("a", i)}));
}

TEST_F(ViewCacheTest, EntriesGoWithTheirSnapshots) {
  Selection selection = Named({"a"});
  views_.Changed(before_, after_, kEdsType, selection);
  before_.reset();
  after_.reset();
  // One live snapshot at a time: never kSweepFloor entries after a call.
  for (int i = 0; i < 600; ++i) {
    views_.Selected(Distinct(i), kEdsType, selection);
    ASSERT_LT(views_.size(), kSweepFloor) << "after snapshot " << i;
  }
}

TEST_F(ViewCacheTest, LiveEntriesStayAndDeadOnesStayUnderTwiceTheLive) {
  Selection selection = Named({"a"});
  std::vector<SnapshotPtr> live;
  for (int i = 0; i < 400; ++i) {
    live.push_back(Distinct(i));
    views_.Selected(live.back(), kEdsType, selection);
  }
  EXPECT_EQ(views_.size(), 400u) << "no live entry is swept";
  live.resize(100);
  // At most 400 survived a sweep, so under 800 entries throughout; once a
  // sweep has seen only the 100 live, under kSweepFloor.
  for (int i = 0; i < 1000; ++i) {
    views_.Selected(Distinct(1000 + i), kEdsType, selection);
    ASSERT_LT(views_.size(), 2 * 400u) << "after snapshot " << i;
  }
  EXPECT_LT(views_.size(), kSweepFloor);
  EXPECT_GE(views_.size(), live.size());
}

}  // namespace
}  // namespace holdfast
