#pragma once
// A bare HTTP/2 client over a TCP socket, for tests of what the transport
// enforces on clients that do not play by gRPC's rules: it sends exactly the
// frames a test asks for and reads frames one at a time.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace holdfast::testing {

class RawHttp2Client {
 public:
  static constexpr uint8_t kHeaders = 0x1;
  static constexpr uint8_t kRstStream = 0x3;
  static constexpr uint8_t kSettings = 0x4;
  static constexpr uint8_t kGoAway = 0x7;
  static constexpr uint16_t kMaxConcurrentStreams = 0x3;
  static constexpr uint32_t kRefusedStream = 0x7;

  struct Frame {
    uint8_t type = 0;
    uint8_t flags = 0;
    uint32_t stream_id = 0;
    std::string payload;
  };

  // Connects to 127.0.0.1:`port`; reads give up after `timeout_s` (a failure
  // bound, so a test that expects a frame fails instead of hanging).
  RawHttp2Client(int port, int timeout_s) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{timeout_s, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~RawHttp2Client() { close(fd_); }
  bool connected() const { return connected_; }
  // Whether the server closed the connection (as opposed to a read timing
  // out).
  bool closed_by_server() const { return closed_by_server_; }

  // The client preface and an empty SETTINGS frame.
  bool SendPreface() {
    return SendRaw("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") && SendFrame(kSettings, 0, 0, "");
  }
  bool AckSettings() { return SendFrame(kSettings, 0x1, 0, ""); }

  // Opens a gRPC call on `stream_id` (END_HEADERS, the stream stays open).
  bool OpenGrpcStream(uint32_t stream_id, const std::string& path) {
    std::string block;
    for (const auto& [name, value] :
         std::vector<std::pair<std::string, std::string>>{{":method", "POST"},
                                                          {":scheme", "http"},
                                                          {":path", path},
                                                          {":authority", "holdfast"},
                                                          {"content-type", "application/grpc"},
                                                          {"te", "trailers"}}) {
      // HPACK literal without indexing, new name, no Huffman (RFC 7541 6.2.2).
      block += '\0';
      block += static_cast<char>(name.size());
      block += name;
      block += static_cast<char>(value.size());
      block += value;
    }
    return SendFrame(kHeaders, 0x4, stream_id, block);
  }

  std::optional<Frame> ReadFrame() {
    std::string header;
    if (!ReadExactly(9, &header)) return std::nullopt;
    const auto byte = [&header](int i) { return static_cast<uint8_t>(header[i]); };
    Frame frame;
    const size_t length = byte(0) << 16 | byte(1) << 8 | byte(2);
    frame.type = byte(3);
    frame.flags = byte(4);
    frame.stream_id = (byte(5) & 0x7f) << 24 | byte(6) << 16 | byte(7) << 8 | byte(8);
    if (!ReadExactly(length, &frame.payload)) return std::nullopt;
    return frame;
  }

  // The value of `id` in a SETTINGS frame's payload, if present.
  static std::optional<uint32_t> Setting(const Frame& settings, uint16_t id) {
    const std::string& p = settings.payload;
    for (size_t i = 0; i + 6 <= p.size(); i += 6) {
      const auto at = [&p, i](size_t k) { return static_cast<uint8_t>(p[i + k]); };
      if ((at(0) << 8 | at(1)) == id) {
        return static_cast<uint32_t>(at(2)) << 24 | at(3) << 16 | at(4) << 8 | at(5);
      }
    }
    return std::nullopt;
  }
  // The error code of a RST_STREAM or GOAWAY frame.
  static uint32_t ErrorCode(const Frame& frame) {
    const std::string& p = frame.payload;
    const size_t at = frame.type == kGoAway ? 4 : 0;
    if (p.size() < at + 4) return 0;
    const auto byte = [&p, at](size_t k) { return static_cast<uint8_t>(p[at + k]); };
    return static_cast<uint32_t>(byte(0)) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3);
  }

 private:
  bool SendFrame(uint8_t type, uint8_t flags, uint32_t stream_id, const std::string& payload) {
    std::string frame;
    const size_t n = payload.size();
    for (int shift : {16, 8, 0}) frame += static_cast<char>(n >> shift & 0xff);
    frame += static_cast<char>(type);
    frame += static_cast<char>(flags);
    for (int shift : {24, 16, 8, 0}) frame += static_cast<char>(stream_id >> shift & 0xff);
    return SendRaw(frame + payload);
  }
  bool SendRaw(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  bool ReadExactly(size_t n, std::string* out) {
    out->resize(n);
    size_t got = 0;
    while (got < n) {
      const ssize_t r = recv(fd_, out->data() + got, n - got, 0);
      if (r == 0 || (r < 0 && errno == ECONNRESET)) closed_by_server_ = true;
      if (r <= 0) return false;
      got += r;
    }
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool closed_by_server_ = false;
};

}  // namespace holdfast::testing
