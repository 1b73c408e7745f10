#include "src/xds/csds_call.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "src/common/thread_handoff.h"
#include "src/xds/client_status.h"

namespace holdfast {

CsdsCall::CsdsCall(const ProxyRegistry* proxies, bool streaming)
    : proxies_(proxies), streaming_(streaming) {
  HandOff(this);
  StartRead(&request_);
}

void CsdsCall::OnReadDone(bool ok) {
  TakeOver(this);
  if (!ok) {  // the client is done asking
    HandOff(this);
    Finish(grpc::Status::OK);
    return;
  }
  grpc::Slice slice;
  envoy::service::status::v3::ClientStatusRequest request;
  if (!request_.DumpToSingleSlice(&slice).ok() ||
      !request.ParseFromArray(slice.begin(), static_cast<int>(slice.size()))) {
    HandOff(this);
    Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "not an envoy.service.status.v3.ClientStatusRequest"));
    return;
  }
  absl::StatusOr<envoy::service::status::v3::ClientStatusResponse> answer =
      AnswerClientStatus(request, proxies_->List());
  if (!answer.ok()) {
    HandOff(this);
    Finish(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(answer.status().message())));
    return;
  }
  std::string bytes = answer->SerializeAsString();
  grpc::Slice out(bytes);
  response_ = grpc::ByteBuffer(&out, 1);
  HandOff(this);
  StartWrite(&response_);
}

void CsdsCall::OnWriteDone(bool ok) {
  TakeOver(this);
  if (!ok) {
    HandOff(this);
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
    return;
  }
  if (!streaming_) {
    HandOff(this);
    Finish(grpc::Status::OK);
    return;
  }
  HandOff(this);
  StartRead(&request_);
}

}  // namespace holdfast
