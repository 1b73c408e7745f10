#pragma once

#include "src/admin/http_message.h"

namespace holdfast {

// The status page at the admin root: one self-contained HTML document (no
// CDN, no external files) whose script reads the JSON pages (/readyz,
// /debug/replica, /debug/leader, /debug/store, /debug/snapshot,
// /debug/fleet, /debug/status, /debug/events) every 2 s and shows this
// replica, its proxies (counts by group and state, NACKing and pending
// ones first with the error and since when) and objects (Rejected and
// Warning first, with field paths and file:line), and recent events. It
// carries no data itself: with --admin-token-file it asks for the token
// and sends it with each request (kept in the tab's session storage).
HttpResponse StatusPage();

}  // namespace holdfast
