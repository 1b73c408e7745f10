#include "src/xds/listener_monitor.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

using ::testing::HasSubstr;

constexpr char kEmfile[] = "Failed accept4: Too many open files";

ListenerObservation At(int second, uint64_t failures = 0, int64_t open = 20,
                       std::optional<uint64_t> queued = 0) {
  ListenerObservation observation;
  observation.now = absl::Seconds(second);
  observation.failures = {failures, failures > 0 ? kEmfile : ""};
  observation.queued = queued;
  observation.descriptors = {open, 256, false};
  return observation;
}

ListenerObservation Exhausted(int second, uint64_t failures) {
  ListenerObservation observation = At(second, failures, 256, std::nullopt);
  observation.descriptors.exhausted = true;
  return observation;
}

TEST(ListenerMonitorTest, AnAcceptFailureStopsAndRestartsTheListenerOnceDescriptorsAreFree) {
  ListenerMonitor monitor({}, At(0));
  EXPECT_EQ(monitor.Observe(At(1)), ListenerAction::kNone);
  EXPECT_TRUE(monitor.state(absl::Seconds(1)).accepting);

  // Failed, with every descriptor taken: nothing to do but say so.
  EXPECT_EQ(monitor.Observe(Exhausted(2, 1)), ListenerAction::kNone);
  ListenerState state = monitor.state(absl::Seconds(4));
  EXPECT_FALSE(state.accepting);
  EXPECT_THAT(state.detail, HasSubstr("for 2s"));
  EXPECT_THAT(state.detail, HasSubstr(kEmfile));
  EXPECT_THAT(state.detail, HasSubstr("all of 256 file descriptors open"));

  // Some free, but fewer than the reserve a new listener needs.
  EXPECT_EQ(monitor.Observe(At(3, 1, 250)), ListenerAction::kNone);
  EXPECT_THAT(
      monitor.state(absl::Seconds(3)).detail,
      HasSubstr("250 of 256 file descriptors open; a new listener starts once 32 are free"));

  EXPECT_EQ(monitor.Observe(At(4, 1, 30)), ListenerAction::kStopListening);
  EXPECT_FALSE(monitor.state(absl::Seconds(4)).accepting);
  // One check later, so that the old listener's complaints are in.
  EXPECT_EQ(monitor.Observe(At(5, 2, 30)), ListenerAction::kStartListening);
  monitor.Started(2);
  EXPECT_TRUE(monitor.state(absl::Seconds(5)).accepting);
  EXPECT_EQ(monitor.Observe(At(6, 2, 31)), ListenerAction::kNone);
  EXPECT_TRUE(monitor.state(absl::Seconds(6)).accepting);

  // The new listener fails too: the same again.
  EXPECT_EQ(monitor.Observe(At(7, 3, 30)), ListenerAction::kStopListening);
}

TEST(ListenerMonitorTest, FailuresBeforeTheListenerStartedAreNotItsOwn) {
  ListenerMonitor monitor({}, At(0, 4));
  EXPECT_EQ(monitor.Observe(At(1, 4)), ListenerAction::kNone);
  EXPECT_TRUE(monitor.state(absl::Seconds(1)).accepting);
}

TEST(ListenerMonitorTest, AnAcceptQueueThatNeverShrinksMeansNothingAccepts) {
  ListenerMonitor monitor({.stuck_after = absl::Seconds(5)}, At(0));
  for (int second = 10; second < 15; ++second) {
    const uint64_t queued = second < 12 ? 3 : 4;  // a connection arrived
    EXPECT_EQ(monitor.Observe(At(second, 0, 20, queued)), ListenerAction::kNone) << second;
    EXPECT_TRUE(monitor.state(absl::Seconds(second)).accepting) << second;
  }
  EXPECT_EQ(monitor.Observe(At(15, 0, 20, 4)), ListenerAction::kStopListening);
  ListenerState state = monitor.state(absl::Seconds(16));
  EXPECT_FALSE(state.accepting);
  EXPECT_THAT(state.detail, HasSubstr("for 6s"));  // since the queue was first seen
  EXPECT_THAT(state.detail, HasSubstr("4 connections waiting to be accepted for 5s"));
}

TEST(ListenerMonitorTest, AQueueThatEmptiesOrShrinksBetweenChecksIsAWorkingListener) {
  ListenerMonitor monitor({.stuck_after = absl::Seconds(5)}, At(0));
  for (int second = 1; second < 30; ++second) {
    const uint64_t queued = second % 4 == 0 ? 0 : 7;
    EXPECT_EQ(monitor.Observe(At(second, 0, 20, queued)), ListenerAction::kNone) << second;
  }
  // Never empty, but read from: a listener swamped by connections.
  for (int second = 30; second < 60; ++second) {
    const uint64_t queued = 100 + (second % 3 == 0 ? 0 : 50);
    EXPECT_EQ(monitor.Observe(At(second, 0, 20, queued)), ListenerAction::kNone) << second;
  }
  // Unknown (no listening socket found, /proc unreadable) is not evidence.
  for (int second = 60; second < 70; ++second) {
    EXPECT_EQ(monitor.Observe(At(second, 0, 20, std::nullopt)), ListenerAction::kNone);
  }
  EXPECT_TRUE(monitor.state(absl::Seconds(70)).accepting);
}

TEST(ListenerMonitorTest, AListenerThatCannotStartIsTriedAgain) {
  ListenerMonitor monitor({}, At(0));
  EXPECT_EQ(monitor.Observe(At(1, 1, 30)), ListenerAction::kStopListening);
  EXPECT_EQ(monitor.Observe(At(2, 1, 30)), ListenerAction::kStartListening);
  monitor.StartFailed("cannot listen for xDS on 127.0.0.1:18000");
  EXPECT_THAT(monitor.state(absl::Seconds(2)).detail,
              HasSubstr("a new listener failed to start: cannot listen"));
  EXPECT_EQ(monitor.Observe(Exhausted(3, 1)), ListenerAction::kNone);
  EXPECT_EQ(monitor.Observe(At(4, 1, 30)), ListenerAction::kStartListening);
}

TEST(ListenerMonitorTest, TheReserveIsAQuarterOfATinyLimit) {
  ListenerMonitor monitor({.reserve = 32}, At(0));
  EXPECT_EQ(monitor.Reserve({.open = 0, .limit = 40}), 10);
  EXPECT_EQ(monitor.Reserve({.open = 0, .limit = 1024}), 32);
  EXPECT_EQ(monitor.Reserve({.open = 0, .limit = 2}), 1);
}

TEST(ListenerMonitorTest, OnlyAcceptFailuresAreCountedFromTheGrpcLog) {
  const AcceptFailures before = AcceptFailuresSoFar();
  NoteGrpcLogMessage("Handshake failed with fatal error SSL_ERROR_SSL");
  NoteGrpcLogMessage(kEmfile);
  NoteGrpcLogMessage("Drop incoming connection: high memory pressure");
  const AcceptFailures after = AcceptFailuresSoFar();
  EXPECT_EQ(after.count, before.count + 1);
  EXPECT_EQ(after.last, kEmfile);
}

}  // namespace
}  // namespace holdfast
