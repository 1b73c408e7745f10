#include "src/xds/view_cache.h"

#include "gtest/gtest.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using testing::Build;
using testing::EdsCluster;
using testing::Endpoints;

const std::string kEds(type_url::kClusterLoadAssignment);

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
  ResourceListPtr one = views_.Selected(after_, kEds, first);
  ResourceListPtr two = views_.Selected(after_, kEds, second);
  EXPECT_EQ(one, two) << "computed once";
  EXPECT_EQ(Names(one->resources), (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(one->digest, VersionOf(one->resources));
  ResourceListPtr all = views_.Selected(after_, kEds, Selection{true, nullptr});
  EXPECT_EQ(all->digest, after_->TypeVersion(kEds));
}

TEST_F(ViewCacheTest, ChangedFindsUpdatesAdditionsAndRemovalsInBothWalks) {
  // Wildcard walks both maps; a short name list looks names up: same answer.
  for (const Selection& selection :
       {Selection{true, nullptr}, Named({"a", "b", "c", "d"}), Named({"a", "b", "c", "d", "e",
                                                                       "f", "g", "h", "i", "j",
                                                                       "k", "l", "m"})}) {
    ResourceListPtr changed = views_.Changed(before_, after_, kEds, selection);
    EXPECT_EQ(Names(changed->resources), (std::vector<std::string>{"a", "d"}));
    EXPECT_EQ(changed->removed, (std::vector<std::string>{"b"}));
  }
  ResourceListPtr narrow = views_.Changed(before_, after_, kEds, Named({"c", "b"}));
  EXPECT_TRUE(narrow->resources.empty());
  EXPECT_EQ(narrow->removed, (std::vector<std::string>{"b"}));
}

TEST_F(ViewCacheTest, EntriesGoWithTheirSnapshots) {
  Selection selection = Named({"a"});
  views_.Changed(before_, after_, kEds, selection);
  // Enough entries for later snapshots to trigger a sweep.
  before_.reset();
  after_.reset();
  for (int i = 0; i < 600; ++i) {
    SnapshotPtr s = Build({EdsCluster("a"), Endpoints("a", i)});
    views_.Selected(s, kEds, selection);
  }
  EXPECT_LT(views_.size(), 600u) << "entries of dead snapshots are swept";
}

}  // namespace
}  // namespace holdfast
