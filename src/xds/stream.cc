#include "src/xds/stream.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "src/common/log.h"
#include "src/common/thread_handoff.h"

namespace holdfast {
namespace {
std::atomic<uint64_t> next_stream_id{1};
}  // namespace

XdsStream* XdsStream::Start(const StreamContext& context, std::string kind,
                            ProtocolFactory make_protocol, std::string fixed_type_url,
                            std::string peer, PeerCertificate cert) {
  auto stream =
      std::shared_ptr<XdsStream>(new XdsStream(context, kind, std::move(peer), std::move(cert)));
  XdsStream* raw = stream.get();
  {
    absl::MutexLock lock(&raw->mu_);
    raw->protocol_ = make_protocol(std::move(fixed_type_url), raw->proxy_.get(), context);
  }
  raw->self_ = std::move(stream);
  if (context.open_streams != nullptr) context.open_streams->Opened();
  if (context.first_request != nullptr) {
    std::weak_ptr<XdsStream> weak = raw->self_;
    context.first_request->Add(raw->id_, [weak] {
      auto stream = weak.lock();
      return stream != nullptr && stream->EndWithoutFirstRequest();
    });
  }
  HandOff(raw);
  raw->StartRead(&raw->read_buffer_);
  return raw;
}

XdsStream::XdsStream(const StreamContext& context, std::string kind, std::string peer,
                     PeerCertificate cert)
    : context_(context),
      id_(next_stream_id.fetch_add(1)),
      kind_(kind),
      proxy_(std::make_shared<ProxyState>(id_, std::move(kind), std::move(peer),
                                          context.clock->Now())),
      cert_(std::move(cert)) {}

bool XdsStream::EndWithoutFirstRequest() {
  absl::MutexLock lock(&mu_);
  if (requested_ || finished_) return false;
  LogDebug("xds stream %d (%s, %s): no request within %s, ending it", id_, kind_,
           proxy_->View().peer, absl::FormatDuration(context_.first_request->timeout()));
  context_.first_request->NoteEnding();
  // DEADLINE_EXCEEDED: the client let a deadline pass; it is told which one.
  FinishLocked(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                            absl::StrCat("holdfast: no DiscoveryRequest within ",
                                         absl::FormatDuration(context_.first_request->timeout()),
                                         " of opening the stream (--xds-first-request-timeout)")));
  return true;
}

void XdsStream::OnReadDone(bool ok) {
  TakeOver(this);
  if (!ok) {
    // The client half-closed or the stream broke: nothing more to read.
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::OK);
    return;
  }

  std::optional<envoy::config::core::v3::Node> node;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    requested_ = true;
    status = protocol_->OnRequest(read_buffer_, &node);
    // A SotW request repeats every name the proxy asks for (tens of KB at
    // fleet scale); an idle stream should not keep the last one.
    read_buffer_.Clear();
    if (status.ok() && !joined_ && !node.has_value()) {
      status = absl::InvalidArgumentError("the first request on a stream must carry node");
    }
    if (!status.ok()) {
      LogWarning("xds stream %d (%s): %s", id_, proxy_->View().node_id, status.message());
      FinishLocked(grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                                std::string(status.message())));
      return;
    }
    if (!joined_ && !CheckIdentityLocked(*node)) return;
  }

  if (!joined_) JoinGroup(*node);

  absl::MutexLock lock(&mu_);
  MaybeWriteLocked();
  if (finished_) return;
  HandOff(this);
  StartRead(&read_buffer_);
}

bool XdsStream::CheckIdentityLocked(const envoy::config::core::v3::Node& node) {
  if (context_.identity == nullptr || !context_.identity->enabled()) return true;
  IdentityCheck check = context_.identity->Check(cert_, node.id());
  if (check.verified.has_value()) {
    verified_ = std::move(check.verified);
    return true;
  }
  const absl::string_view reason = IdentityRefusalLabel(check.reason);
  context_.stats->IdentityRefused(reason);
  const std::string peer = proxy_->View().peer;
  const bool first = context_.proxies->RecordRefusal({.peer = peer,
                                                      .claimed_node_id = node.id().substr(0, 256),
                                                      .expected = check.expected,
                                                      .reason = std::string(reason),
                                                      .stream_kind = kind_,
                                                      .at = context_.clock->Now()});
  // Once per connection: a client that retries on the same connection
  // would otherwise write a line per attempt.
  Logf(first ? LogLevel::kWarning : LogLevel::kDebug, "xds stream %d (%s, %s): refused: %s", id_,
       kind_, peer, check.message);
  FinishLocked(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, check.message));
  return false;
}

void XdsStream::JoinGroup(const envoy::config::core::v3::Node& node) {
  // First request: the client is a proxy now.
  if (context_.first_request != nullptr) context_.first_request->Remove(id_);
  context_.proxies->Add(proxy_, id_);
  context_.stats->StreamOpened(kind_);
  counted_ = true;
  std::string group = context_.grouper->GroupOf(node, verified_ ? &*verified_ : nullptr);
  proxy_->SetNode(node, group);
  if (verified_.has_value()) proxy_->SetIdentity(verified_->identity);
  joined_ = true;
  std::weak_ptr<XdsStream> weak = weak_from_this();
  // Subscribed before the first look at the rule, so no change is missed.
  if (context_.canaries != nullptr) {
    canary_subscription_ = context_.canaries->Subscribe([weak] {
      if (auto stream = weak.lock()) stream->Rewatch();
    });
  }
  absl::MutexLock lock(&watch_mu_);
  node_ = node;
  group_ = std::move(group);
  WatchLocked();
}

void XdsStream::Rewatch() {
  absl::MutexLock lock(&watch_mu_);
  {
    absl::MutexLock done(&mu_);
    if (done_) return;
  }
  if (node_.has_value()) WatchLocked();
}

void XdsStream::WatchLocked() {
  // A canary stays in its group (metrics, pages) but watches what the
  // rollout offers canaries.
  std::optional<std::string> rollout =
      context_.canaries != nullptr ? context_.canaries->CanaryOf(*node_, group_) : std::nullopt;
  std::string watched = rollout ? CanaryKey(*rollout) : group_;
  if (watch_ != nullptr && watched == watched_) return;
  if (rollout) {
    proxy_->SetCanary(*rollout);
  } else {
    proxy_->ClearCanary();
  }
  LogDebug("xds stream %d: node %s %s group %s%s", id_, node_->id(),
           watch_ == nullptr ? "joined" : "moved within", group_,
           rollout ? " as a canary" : "");
  // The old watch goes first (dropping it waits out a publication to it),
  // then the stream takes whatever its new key holds, older or not.
  watch_.reset();
  {
    absl::MutexLock lock(&mu_);
    sequence_ = 0;
  }
  watched_ = std::move(watched);
  std::weak_ptr<XdsStream> weak = weak_from_this();
  watch_ = context_.cache->Watch(watched_, [weak](const Published& published) {
    if (auto stream = weak.lock()) stream->OnPublished(published);
  });
  OnPublished(context_.cache->Current(watched_));
}

void XdsStream::OnPublished(const Published& published) {
  if (published.snapshot == nullptr) return;
  absl::MutexLock lock(&mu_);
  if (done_ || published.sequence <= sequence_) return;
  sequence_ = published.sequence;
  protocol_->OnSnapshot(published.snapshot);
  if (writing_) {
    context_.stats->Coalesced();
    return;
  }
  MaybeWriteLocked();
}

void XdsStream::MaybeWriteLocked() {
  if (writing_ || finished_) return;
  std::optional<grpc::ByteBuffer> next = protocol_->NextWrite();
  if (!next.has_value()) return;
  write_buffer_ = std::move(*next);
  writing_ = true;
  HandOff(this);
  StartWrite(&write_buffer_);
}

void XdsStream::OnWriteDone(bool ok) {
  TakeOver(this);
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (pending_finish_.has_value()) {
    HandOff(this);
    Finish(*pending_finish_);  // deferred until the write drained
    pending_finish_.reset();
    return;
  }
  if (!ok) return;  // the stream is broken; the read side finishes it
  MaybeWriteLocked();
}

void XdsStream::FinishLocked(const grpc::Status& status) {
  if (finished_) return;
  finished_ = true;
  if (writing_) {
    pending_finish_ = status;
  } else {
    HandOff(this);
    Finish(status);
  }
}

void XdsStream::OnDone() {
  TakeOver(this);
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  // Dropping these waits out a running call of theirs; mu_ must be free.
  canary_subscription_.reset();
  {
    absl::MutexLock lock(&watch_mu_);
    watch_.reset();
  }
  if (context_.first_request != nullptr) context_.first_request->Remove(id_);
  if (counted_) {
    context_.proxies->Remove(id_);
    context_.stats->StreamClosed();
  }
  // Last, after this stream may be gone: XdsServer may end this stream's
  // server generation, and free what streams share, once it drops.
  StreamCount* open_streams = context_.open_streams;
  { std::shared_ptr<XdsStream> self = std::move(self_); }  // may delete this
  if (open_streams != nullptr) open_streams->Closed();
}

}  // namespace holdfast
