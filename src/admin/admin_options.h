#pragma once

#include <string>

namespace holdfast {

// Who may read the admin endpoint. On loopback (the default) anyone on the
// host may; bound to any other address, AdminServer::Start requires a token
// file and refuses to start without one.
struct AdminAuthOptions {
  // A file holding a bearer token ("Authorization: Bearer TOKEN"), re-read
  // when it changes. When set, every page but /healthz and /readyz needs
  // the token, wherever the endpoint is bound.
  std::string token_file;
};

}  // namespace holdfast
