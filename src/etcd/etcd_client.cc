#include "src/etcd/etcd_client.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grpcpp/grpcpp.h"
#include "src/common/log.h"
#include "src/etcd/watch_keeper.h"

namespace holdfast {
namespace {

constexpr int64_t kPageSize = 1000;

absl::Status FromGrpc(const grpc::Status& status, absl::string_view what,
                      absl::string_view endpoint) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat("etcd ", what, " at ", endpoint, ": ", status.error_message()));
}

// Failures that say the endpoint, not the request, is the problem: another
// member may well answer.
bool IsEndpointFailure(const absl::Status& status) {
  if (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status)) return true;
  absl::string_view message = status.message();
  return absl::StrContains(message, "no leader") || absl::StrContains(message, "leader changed") ||
         absl::StrContains(message, "request timed out");
}

// The token was refused: a new one may be accepted.
bool IsAuthFailure(const absl::Status& status) {
  return absl::StrContains(status.message(), "invalid auth token") ||
         (absl::IsUnauthenticated(status) &&
          !absl::StrContains(status.message(), "authentication failed"));
}

// The store refuses the user, its password or its permissions.
bool IsRefusal(const absl::Status& status) {
  absl::string_view message = status.message();
  return absl::IsPermissionDenied(status) || absl::IsUnauthenticated(status) ||
         absl::StrContains(message, "authentication failed") ||
         absl::StrContains(message, "user name is empty") ||
         absl::StrContains(message, "invalid auth token");
}

// Who the store refuses, for the log.
std::string Who(const std::string& username) {
  return username.empty() ? "access without a user" : absl::StrCat("user \"", username, "\"");
}

KeyValue FromProto(const mvccpb::KeyValue& kv) {
  return KeyValue{.key = kv.key(),
                  .value = kv.value(),
                  .create_revision = kv.create_revision(),
                  .mod_revision = kv.mod_revision(),
                  .lease = kv.lease()};
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return contents.str();
}

gpr_timespec Deadline(absl::Duration timeout) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_micros(absl::ToInt64Microseconds(timeout), GPR_TIMESPAN));
}

etcdserverpb::WatchRequest CreateWatchRequest(const WatchOptions& options) {
  etcdserverpb::WatchRequest create;
  create.mutable_create_request()->set_key(options.prefix);
  create.mutable_create_request()->set_range_end(PrefixRangeEnd(options.prefix));
  create.mutable_create_request()->set_start_revision(options.start_revision);
  create.mutable_create_request()->set_progress_notify(true);
  return create;
}

WatchBatch ToWatchBatch(const etcdserverpb::WatchResponse& response) {
  WatchBatch batch;
  batch.revision = response.header().revision();
  for (const mvccpb::Event& event : response.events()) {
    WatchEvent out;
    out.type =
        event.type() == mvccpb::Event::DELETE ? WatchEvent::Type::kDelete : WatchEvent::Type::kPut;
    out.kv = FromProto(event.kv());
    batch.events.push_back(std::move(out));
  }
  return batch;
}

}  // namespace

EtcdClient::EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {}
EtcdClient::~EtcdClient() = default;

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(EtcdClientOptions options) {
  if (options.endpoints.empty()) return absl::InvalidArgumentError("no etcd endpoints given");
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError("etcd client certificate and key go together");
  }
  std::unique_ptr<EtcdClient> client(new EtcdClient(std::move(options)));
  if (absl::Status status = client->Connect(); !status.ok()) return status;
  return client;
}

absl::Status EtcdClient::Connect() {
  bool tls = !options_.ca_file.empty() || !options_.cert_file.empty();
  for (const std::string& endpoint : options_.endpoints) {
    if (absl::StartsWith(endpoint, "https://")) tls = true;
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (tls) {
    grpc::SslCredentialsOptions ssl;
    for (auto [file, field] : {std::pair{&options_.ca_file, &ssl.pem_root_certs},
                               std::pair{&options_.cert_file, &ssl.pem_cert_chain},
                               std::pair{&options_.key_file, &ssl.pem_private_key}}) {
      if (file->empty()) continue;
      absl::StatusOr<std::string> contents = ReadPemFile(*file);
      if (!contents.ok()) return contents.status();
      *field = *contents;
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, absl::ToInt64Milliseconds(options_.keepalive_time));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, absl::ToInt64Milliseconds(options_.keepalive_timeout));
  // etcd closes connections that ping while idle (PermitWithoutStream=false).
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Come back quickly after a member restarts; the caller backs off.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  for (const std::string& endpoint : options_.endpoints) {
    std::string address(absl::StripPrefix(absl::StripPrefix(endpoint, "http://"), "https://"));
    address = std::string(absl::StripSuffix(address, "/"));
    if (address.empty()) return absl::InvalidArgumentError("empty etcd endpoint");
    std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(address, credentials, args);
    endpoints_.push_back(Endpoint{.address = address,
                                  .kv = etcdserverpb::KV::NewStub(channel),
                                  .lease = etcdserverpb::Lease::NewStub(channel),
                                  .watch = etcdserverpb::Watch::NewStub(channel),
                                  .auth = etcdserverpb::Auth::NewStub(channel)});
  }
  return absl::OkStatus();
}

void EtcdClient::RecordSuccess(bool access_checked) {
  std::string ended;
  absl::Duration refused_for;
  {
    absl::MutexLock lock(&contact_mu_);
    last_success_ = Clock::Real().Monotonic();
    if (!access_checked || refused_.empty()) return;
    ended = std::move(refused_);
    refused_.clear();
    refused_for = last_success_ - refused_since_;
  }
  LogInfo("etcd: the store accepts %s again (refused for %s)", Who(options_.username),
          absl::FormatDuration(absl::Trunc(refused_for, absl::Milliseconds(100))));
}

void EtcdClient::RecordRefused(const absl::Status& status) {
  {
    absl::MutexLock lock(&contact_mu_);
    last_success_ = Clock::Real().Monotonic();  // it answered
    bool started = refused_.empty();
    refused_ = std::string(status.message());
    if (!started) return;
    refused_since_ = last_success_;
  }
  LogWarning("etcd: the store refuses %s: %s", Who(options_.username), status.message());
}

void EtcdClient::RecordFailure(const absl::Status& status) {
  absl::MutexLock lock(&contact_mu_);
  last_failure_ = Clock::Real().Monotonic();
  last_error_ = std::string(status.message());
}

EtcdClient::Contact EtcdClient::contact() const {
  absl::MutexLock lock(&contact_mu_);
  Contact contact;
  contact.failing = last_failure_ > last_success_;
  contact.since_success = Clock::Real().Monotonic() - last_success_;
  contact.last_error = last_error_;
  contact.refused = refused_;
  return contact;
}

std::string EtcdClient::current_endpoint() const {
  return endpoints_[current_.load() % endpoints_.size()].address;
}

void EtcdClient::Prepare(grpc::ClientContext& context, absl::Duration timeout) {
  if (timeout != absl::InfiniteDuration()) context.set_deadline(Deadline(timeout));
  absl::MutexLock lock(&token_mu_);
  if (!token_.empty()) context.AddMetadata("token", token_);
}

absl::Status EtcdClient::Authenticate(Endpoint& endpoint) {
  grpc::ClientContext context;
  context.set_deadline(Deadline(options_.call_timeout));
  etcdserverpb::AuthenticateRequest request;
  request.set_name(options_.username);
  request.set_password(options_.password);
  etcdserverpb::AuthenticateResponse response;
  grpc::Status status = endpoint.auth->Authenticate(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, "authenticate", endpoint.address);
  absl::MutexLock lock(&token_mu_);
  token_ = response.token();
  return absl::OkStatus();
}

absl::Status EtcdClient::EnsureToken(Endpoint& endpoint) {
  {
    absl::MutexLock lock(&token_mu_);
    if (options_.username.empty() || !token_.empty()) return absl::OkStatus();
  }
  return Authenticate(endpoint);
}

absl::Status EtcdClient::Call(
    const char* what, const std::function<grpc::Status(Endpoint&, grpc::ClientContext&)>& call,
    bool checks_access) {
  auto attempt = [&](Endpoint& endpoint) {
    grpc::ClientContext context;
    Prepare(context, options_.call_timeout);
    return FromGrpc(call(endpoint, context), what, endpoint.address);
  };
  size_t first = current_.load();
  absl::Status failure = absl::UnavailableError(absl::StrCat("etcd ", what, ": no endpoint"));
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    size_t index = (first + i) % endpoints_.size();
    Endpoint& endpoint = endpoints_[index];
    absl::Status status = EnsureToken(endpoint);
    bool authenticating = !status.ok();
    if (status.ok()) status = attempt(endpoint);
    if (!options_.username.empty() && IsAuthFailure(status)) {
      // Tokens expire (simple tokens after 5 minutes idle): get a new one.
      status = Authenticate(endpoint);
      authenticating = !status.ok();
      if (status.ok()) status = attempt(endpoint);
    }
    if (status.ok()) {
      current_.store(index);
      RecordSuccess(checks_access);
      return status;
    }
    if (!IsEndpointFailure(status)) {
      // The store answered, if only to say no.
      if (authenticating || IsRefusal(status)) {
        RecordRefused(status);
      } else {
        RecordSuccess();
      }
      return status;
    }
    RecordFailure(status);
    failure = std::move(status);
    // Start the next call elsewhere even if this one fails everywhere.
    current_.store((index + 1) % endpoints_.size());
  }
  return failure;
}

absl::StatusOr<RangeResult> EtcdClient::Get(const std::string& key) {
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  etcdserverpb::RangeResponse response;
  absl::Status status = Call("get", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.kv->Range(&c, request, &response);
  });
  if (!status.ok()) return status;
  RangeResult result;
  result.revision = response.header().revision();
  for (const mvccpb::KeyValue& kv : response.kvs()) result.kvs.push_back(FromProto(kv));
  return result;
}

absl::StatusOr<RangeResult> EtcdClient::GetPrefix(const std::string& prefix, int64_t revision) {
  RangeResult result;
  std::string start = prefix;
  const std::string end = PrefixRangeEnd(prefix);
  while (true) {
    etcdserverpb::RangeRequest request;
    request.set_key(start);
    request.set_range_end(end);
    request.set_limit(kPageSize);
    request.set_revision(revision);
    etcdserverpb::RangeResponse response;
    absl::Status status = Call("list", [&](Endpoint& e, grpc::ClientContext& c) {
      return e.kv->Range(&c, request, &response);
    });
    if (!status.ok()) {
      if (absl::StrContains(status.message(), "compacted")) {
        return absl::OutOfRangeError(status.message());
      }
      return status;
    }
    // Later pages are read at the first page's revision: one consistent view.
    if (revision == 0) revision = response.header().revision();
    result.revision = revision;
    for (const mvccpb::KeyValue& kv : response.kvs()) result.kvs.push_back(FromProto(kv));
    if (!response.more() || response.kvs().empty()) break;
    start = response.kvs().rbegin()->key() + std::string(1, '\0');
  }
  return result;
}

absl::StatusOr<int64_t> EtcdClient::Put(const std::string& key, const std::string& value,
                                        int64_t lease) {
  etcdserverpb::PutRequest request;
  request.set_key(key);
  request.set_value(value);
  request.set_lease(lease);
  etcdserverpb::PutResponse response;
  absl::Status status = Call("put", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.kv->Put(&c, request, &response);
  });
  if (!status.ok()) return status;
  return response.header().revision();
}

absl::StatusOr<int64_t> EtcdClient::Delete(const std::string& key, bool prefix) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(key);
  if (prefix) request.set_range_end(PrefixRangeEnd(key));
  etcdserverpb::DeleteRangeResponse response;
  absl::Status status = Call("delete", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.kv->DeleteRange(&c, request, &response);
  });
  if (!status.ok()) return status;
  return response.deleted();
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& request) {
  etcdserverpb::TxnResponse response;
  absl::Status status = Call("txn", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.kv->Txn(&c, request, &response);
  });
  if (!status.ok()) return status;
  return response;
}

absl::Status EtcdClient::Compact(int64_t revision) {
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  etcdserverpb::CompactionResponse response;
  return Call("compact", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.kv->Compact(&c, request, &response);
  });
}

absl::StatusOr<int64_t> EtcdClient::LeaseGrant(absl::Duration ttl) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(ttl, absl::Seconds(1)))));
  etcdserverpb::LeaseGrantResponse response;
  absl::Status status = Call(
      "lease grant",
      [&](Endpoint& e, grpc::ClientContext& c) {
        return e.lease->LeaseGrant(&c, request, &response);
      },
      /*checks_access=*/false);
  if (!status.ok()) return status;
  if (!response.error().empty())
    return absl::InternalError("etcd lease grant: " + response.error());
  return response.id();
}

absl::Status EtcdClient::LeaseKeepAlive(int64_t lease) {
  // One request and one answer on a short-lived stream: every renewal has
  // a deadline, and there is no long-lived stream to watch over.
  etcdserverpb::LeaseKeepAliveResponse response;
  absl::Status status = Call(
      "lease keepalive",
      [&](Endpoint& e, grpc::ClientContext& c) {
        auto stream = e.lease->LeaseKeepAlive(&c);
        etcdserverpb::LeaseKeepAliveRequest request;
        request.set_id(lease);
        if (stream->Write(request) && stream->Read(&response)) {
          c.TryCancel();  // nothing more to read; do not wait for the server's close
          (void)stream->Finish();
          return grpc::Status::OK;
        }
        return stream->Finish();
      },
      /*checks_access=*/false);
  if (!status.ok()) return status;
  if (response.ttl() <= 0) {
    return absl::NotFoundError(absl::StrCat("etcd lease ", absl::Hex(lease), " has expired"));
  }
  return absl::OkStatus();
}

absl::Status EtcdClient::LeaseRevoke(int64_t lease) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseRevokeResponse response;
  absl::Status status = Call("lease revoke", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.lease->LeaseRevoke(&c, request, &response);
  });
  if (absl::StrContains(status.message(), "requested lease not found")) {
    return absl::NotFoundError(status.message());
  }
  return status;
}

absl::Status EtcdClient::Watch(const WatchOptions& options,
                               const std::function<void(const WatchBatch&)>& on_batch,
                               absl::Notification* stop, int64_t* compacted_revision) {
  const size_t index = current_.load() % endpoints_.size();
  Endpoint& endpoint = endpoints_[index];
  if (absl::Status auth = EnsureToken(endpoint); !auth.ok()) {
    if (IsEndpointFailure(auth)) {
      RecordFailure(auth);
    } else {
      RecordRefused(auth);
    }
    current_.store((index + 1) % endpoints_.size());
    return auth;
  }
  grpc::ClientContext context;
  Prepare(context, absl::InfiniteDuration());
  // Without a leader the member cancels the watch instead of going quiet.
  context.AddMetadata("hasleader", "true");
  std::unique_ptr<WatchKeeper::Stream> stream = endpoint.watch->Watch(&context);
  if (!stream->Write(CreateWatchRequest(options))) {
    context.TryCancel();
    grpc::Status finish = stream->Finish();
    current_.store((index + 1) % endpoints_.size());
    return FromGrpc(
        finish.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream closed") : finish,
        "watch", endpoint.address);
  }

  WatchKeeper keeper(options, stop, &context, stream.get(), Clock::Real());
  keeper.Start();
  absl::Status result =
      ReadWatch(*stream, endpoint.address, options, on_batch, &keeper, compacted_revision);
  // A stream we walked away from is still open: close it. One that ended on
  // its own keeps its real status for Finish.
  if (!result.ok()) context.TryCancel();
  keeper.Stop();  // no write may race with Finish
  grpc::Status finish = stream->Finish();
  if (stop->HasBeenNotified()) return absl::CancelledError("watch stopped");
  if (!result.ok()) {
    if (absl::IsUnavailable(result)) current_.store((index + 1) % endpoints_.size());
    return result;
  }
  current_.store((index + 1) % endpoints_.size());
  if (keeper.stalled()) {
    return absl::DeadlineExceededError(absl::StrCat("etcd watch at ", endpoint.address,
                                                    ": no answer for ",
                                                    absl::FormatDuration(options.stall_timeout)));
  }
  return WatchEnded(finish, endpoint.address);
}

absl::Status EtcdClient::ReadWatch(WatchKeeper::Stream& stream, const std::string& address,
                                   const WatchOptions& options,
                                   const std::function<void(const WatchBatch&)>& on_batch,
                                   WatchKeeper* keeper, int64_t* compacted_revision) {
  etcdserverpb::WatchResponse response;
  while (stream.Read(&response)) {
    keeper->Heard();
    RecordSuccess();
    if (response.compact_revision() > 0) {
      if (compacted_revision) *compacted_revision = response.compact_revision();
      return absl::OutOfRangeError(absl::StrCat("etcd watch from revision ", options.start_revision,
                                                " : compacted at ", response.compact_revision()));
    }
    if (response.canceled()) {
      const std::string reason =
          absl::StrCat("etcd watch at ", address, " canceled: ", response.cancel_reason());
      if (!absl::StrContains(response.cancel_reason(), "permission denied")) {
        return absl::UnavailableError(reason);
      }
      absl::Status refused = absl::PermissionDeniedError(reason);
      RecordRefused(refused);
      return refused;
    }
    if (response.created() && response.events().empty()) continue;
    on_batch(ToWatchBatch(response));
  }
  return absl::OkStatus();  // the stream ended: Finish says why
}

absl::Status EtcdClient::WatchEnded(const grpc::Status& finish, const std::string& address) {
  if (finish.ok()) return absl::UnavailableError("etcd watch closed by the server");
  absl::Status ended = FromGrpc(finish, "watch", address);
  if (IsAuthFailure(ended)) {
    absl::MutexLock lock(&token_mu_);
    token_.clear();
  } else if (IsRefusal(ended)) {
    RecordRefused(ended);
  }
  return ended;
}

}  // namespace holdfast
