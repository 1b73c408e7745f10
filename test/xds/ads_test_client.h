#pragma once
// A scripted xDS client for tests: sends exactly the requests a test writes
// and queues every response, so tests can probe protocol corners real
// clients never exercise.

#include <deque>
#include <memory>
#include <optional>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace holdfast::testing {

template <typename Request, typename Response>
class ScriptedStream {
 public:
  using Stream = grpc::ClientReaderWriter<Request, Response>;

  // `open` starts the call on the given context.
  template <typename Open>
  explicit ScriptedStream(Open open) {
    stream_ = open(&context_);
    reader_ = std::thread([this] {
      Response response;
      while (stream_->Read(&response)) {
        absl::MutexLock lock(&mu_);
        responses_.push_back(response);
      }
      absl::MutexLock lock(&mu_);
      closed_ = true;
    });
  }
  ~ScriptedStream() {
    context_.TryCancel();
    reader_.join();
  }

  bool Send(const Request& request) { return stream_->Write(request); }

  // The next response, waiting up to `deadline` (a failure bound, not a
  // condition tests rely on to pass).
  std::optional<Response> Next(absl::Duration deadline = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !responses_.empty() || closed_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), deadline);
    if (responses_.empty()) return std::nullopt;
    Response response = std::move(responses_.front());
    responses_.pop_front();
    return response;
  }

  // Ends the call from the client side and returns the server's status.
  grpc::Status Close() {
    stream_->WritesDone();
    reader_.join();
    grpc::Status status = stream_->Finish();
    reader_ = std::thread([] {});
    return status;
  }

  // Whether the server ended the stream within `deadline` (a failure bound).
  bool AwaitClosed(absl::Duration deadline) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&closed_), deadline);
  }

  // Waits for the server to end the stream and returns its status.
  grpc::Status AwaitServerFinish() {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&closed_));
    }
    reader_.join();
    reader_ = std::thread([] {});
    return stream_->Finish();
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<Stream> stream_;
  std::thread reader_;
  absl::Mutex mu_;
  std::deque<Response> responses_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

using SotwStream = ScriptedStream<envoy::service::discovery::v3::DiscoveryRequest,
                                  envoy::service::discovery::v3::DiscoveryResponse>;
using DeltaStream = ScriptedStream<envoy::service::discovery::v3::DeltaDiscoveryRequest,
                                   envoy::service::discovery::v3::DeltaDiscoveryResponse>;

}  // namespace holdfast::testing
