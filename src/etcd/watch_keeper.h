#pragma once

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "src/common/clock.h"
#include "src/common/poller.h"
#include "src/etcd/key_value_store.h"

namespace holdfast {

// Keeps one etcd watch stream from hanging while its reader blocks: asks
// the member for progress every `progress_interval` (so an idle watch still
// hears something), and cancels the stream once nothing has been heard for
// `stall_timeout` (a blackholed member never answers and never closes) or
// once `stop` is notified. Runs on one Poller. After Stop() it writes no
// more, so the stream may then be finished.
class WatchKeeper {
 public:
  using Stream = grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>;

  // How often `stop` is looked at: the caller's Notification cannot wake us.
  static constexpr absl::Duration kStopCheck = absl::Milliseconds(100);

  WatchKeeper(const WatchOptions& options, const absl::Notification* stop,
              grpc::ClientContext* context, Stream* stream, const Clock& clock);
  ~WatchKeeper() { Stop(); }

  void Start();
  // The stream answered (any response counts).
  void Heard() ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() { poller_.Stop(); }
  // Whether the stream was cancelled for its silence.
  bool stalled() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One look: cancel, or ask for progress when due. Returns the next wait.
  absl::Duration Check() ABSL_LOCKS_EXCLUDED(mu_);

  const WatchOptions& options_;
  const absl::Notification* stop_;
  grpc::ClientContext* context_;
  Stream* stream_;
  const Clock& clock_;

  mutable absl::Mutex mu_;
  absl::Duration last_heard_ ABSL_GUARDED_BY(mu_);
  bool stalled_ ABSL_GUARDED_BY(mu_) = false;
  // The poller's own.
  absl::Duration next_progress_;
  bool cancelled_ = false;
  Poller poller_;
};

}  // namespace holdfast
