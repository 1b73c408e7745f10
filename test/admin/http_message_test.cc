#include "src/admin/http_message.h"

#include <string>

#include "gtest/gtest.h"

namespace holdfast {
namespace {

using State = HttpParse::State;

struct HeadCase {
  std::string name;
  std::string input;
  State state;
  int error_status = 0;
};

class ParseRequestHeadTest : public testing::TestWithParam<HeadCase> {};

TEST_P(ParseRequestHeadTest, Classifies) {
  const HeadCase& c = GetParam();
  HttpParse parse = ParseRequestHead(c.input, 1024);
  EXPECT_EQ(parse.state, c.state) << parse.error;
  EXPECT_EQ(parse.error_status, c.error_status) << parse.error;
}

INSTANTIATE_TEST_SUITE_P(
    Heads, ParseRequestHeadTest,
    testing::Values(
        HeadCase{"minimal", "GET / HTTP/1.1\r\n\r\n", State::kComplete},
        HeadCase{"bare_lf", "GET / HTTP/1.1\nHost: x\n\n", State::kComplete},
        HeadCase{"leading_empty_lines", "\r\n\r\nGET / HTTP/1.0\r\n\r\n", State::kComplete},
        HeadCase{"no_end_yet", "GET / HTTP/1.1\r\nHost: x\r\n", State::kIncomplete},
        HeadCase{"partial_line", "GE", State::kIncomplete},
        HeadCase{"empty", "", State::kIncomplete},
        HeadCase{"content_length_zero", "GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
                 State::kComplete},
        HeadCase{"body", "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", State::kError, 413},
        HeadCase{"chunked", "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", State::kError,
                 413},
        HeadCase{"bad_length", "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", State::kError, 400},
        HeadCase{"two_spaces", "GET  / HTTP/1.1\r\n\r\n", State::kError, 400},
        HeadCase{"no_version", "GET /\r\n\r\n", State::kError, 400},
        HeadCase{"http2", "GET / HTTP/2.0\r\n\r\n", State::kError, 505},
        HeadCase{"garbage_version", "GET / HTTQ/1.1\r\n\r\n", State::kError, 400},
        HeadCase{"absolute_target", "GET http://x/ HTTP/1.1\r\n\r\n", State::kError, 400},
        HeadCase{"bad_escape", "GET /a%zz HTTP/1.1\r\n\r\n", State::kError, 400},
        HeadCase{"truncated_escape", "GET /a% HTTP/1.1\r\n\r\n", State::kError, 400},
        HeadCase{"bad_method", "G(T / HTTP/1.1\r\n\r\n", State::kError, 400},
        HeadCase{"folded_field", "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", State::kError, 400},
        HeadCase{"space_before_colon", "GET / HTTP/1.1\r\nA : b\r\n\r\n", State::kError, 400},
        HeadCase{"cr_in_value", "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", State::kError, 400},
        HeadCase{"too_long_unfinished", "GET /" + std::string(2000, 'a'), State::kError, 431},
        HeadCase{"too_long_finished", "GET / HTTP/1.1\r\nA: " + std::string(1100, 'a') + "\r\n\r\n",
                 State::kError, 431}),
    [](const testing::TestParamInfo<HeadCase>& info) { return info.param.name; });

TEST(ParseRequestHead, FillsTheRequest) {
  std::string input =
      "GET /debug/snapshot%2Fx?resources=false&a=b+c&d=%41&flag HTTP/1.1\r\n"
      "Host: localhost\r\nAuthorization:  Bearer abc  \r\n\r\nGET /next";
  HttpParse parse = ParseRequestHead(input, 1024);
  ASSERT_EQ(parse.state, State::kComplete) << parse.error;
  EXPECT_EQ(parse.consumed, input.find("GET /next"));
  const HttpRequest& request = parse.request;
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.path, "/debug/snapshot/x");
  EXPECT_EQ(request.query.at("resources"), "false");
  EXPECT_EQ(request.query.at("a"), "b c");
  EXPECT_EQ(request.query.at("d"), "A");
  EXPECT_EQ(request.query.at("flag"), "");
  EXPECT_EQ(request.Header("authorization"), "Bearer abc");
  EXPECT_EQ(request.Header("host"), "localhost");
  EXPECT_EQ(request.Header("missing"), "");
}

TEST(ParseRequestHead, HeadExactlyAtTheCapIsAccepted) {
  std::string head = "GET / HTTP/1.1\r\nA: ";
  head += std::string(1024 - head.size() - 4, 'x') + "\r\n\r\n";
  ASSERT_EQ(head.size(), 1024u);
  EXPECT_EQ(ParseRequestHead(head, 1024).state, State::kComplete);
  EXPECT_EQ(ParseRequestHead(head, 1023).error_status, 431);
}

struct KeepAliveCase {
  std::string head;
  bool keep_alive;
};

TEST(HttpRequest, KeepAliveFollowsVersionAndConnectionHeader) {
  const KeepAliveCase cases[] = {
      {"GET / HTTP/1.1\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nConnection: Upgrade, Close\r\n\r\n", false},
      {"GET / HTTP/1.0\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
  };
  for (const KeepAliveCase& c : cases) {
    HttpParse parse = ParseRequestHead(c.head, 1024);
    ASSERT_EQ(parse.state, State::kComplete) << c.head;
    EXPECT_EQ(parse.request.KeepAlive(), c.keep_alive) << c.head;
  }
}

TEST(SerializeResponse, WritesLengthAndOmitsBodyForHead) {
  HttpResponse response = HttpResponse::Text(404, "not found\n");
  response.headers.emplace_back("X-A", "b");
  EXPECT_EQ(SerializeResponse(response, false, true),
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n"
            "X-A: b\r\n\r\nnot found\n");
  EXPECT_EQ(SerializeResponse(response, true, false),
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n"
            "X-A: b\r\nConnection: close\r\n\r\n");
}

}  // namespace
}  // namespace holdfast

namespace holdfast {
namespace {

// The admission webhook reads bodies; the admin endpoint (max 0) never does.
TEST(HttpMessageTest, BodiesAreAcceptedOnlyUpToTheCallersBound) {
  const std::string head = "POST /validate?timeout=5s HTTP/1.1\r\nContent-Length: 10\r\n\r\n";
  HttpParse admin = ParseRequestHead(head, 16 << 10);
  EXPECT_EQ(admin.state, HttpParse::State::kError);
  EXPECT_EQ(admin.error_status, 413);
  HttpParse webhook = ParseRequestHead(head, 16 << 10, /*max_body_bytes=*/10);
  ASSERT_EQ(webhook.state, HttpParse::State::kComplete);
  EXPECT_EQ(webhook.request.content_length, 10u);
  EXPECT_EQ(webhook.request.path, "/validate");
  EXPECT_EQ(webhook.consumed, head.size());
  EXPECT_EQ(ParseRequestHead(head, 16 << 10, 9).error_status, 413);
  EXPECT_EQ(ParseRequestHead("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                             16 << 10, 100)
                .error_status,
            413);
  EXPECT_EQ(ParseRequestHead("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 16 << 10,
                             100)
                .error_status,
            413);
}

}  // namespace
}  // namespace holdfast
