// Command goclient is the grpc-go proxyless xDS client of the integration
// suite: the same behaviour as xds_cpp_client and xds_node_client.js, built
// on grpc-go's xds package (a third, independent xDS implementation).
//
//	goclient --target xds:///echo.test [--interval-ms 100] [--deadline-ms 1000] [--count N]
//
// One holdfast.test.Echo/Call per interval; one line per RPC on stdout:
//
//	ok <backend-name>
//	error <numeric-code> <message on one line>
//
// The bootstrap comes from env GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	_ "google.golang.org/grpc/xds" // registers the xds resolver and balancers
)

const callMethod = "/holdfast.test.Echo/Call"

func main() {
	target := flag.String("target", "", "xds:///host target")
	intervalMs := flag.Int("interval-ms", 100, "pause between RPCs")
	deadlineMs := flag.Int("deadline-ms", 1000, "per-RPC deadline")
	count := flag.Int("count", 0, "number of RPCs; 0 means forever")
	flag.Parse()
	if *target == "" {
		fmt.Fprintln(os.Stderr, "goclient: --target is required")
		os.Exit(2)
	}
	conn, err := grpc.NewClient(*target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	if err != nil {
		fmt.Fprintf(os.Stderr, "goclient: %v\n", err)
		os.Exit(1)
	}
	defer conn.Close()

	for n := 0; *count == 0 || n < *count; n++ {
		ctx, cancel := context.WithTimeout(context.Background(),
			time.Duration(*deadlineMs)*time.Millisecond)
		var reply []byte
		err := conn.Invoke(ctx, callMethod, encodeEchoRequest(fmt.Sprintf("rpc %d", n)), &reply)
		cancel()
		if err != nil {
			s := status.Convert(err)
			fmt.Printf("error %d %s\n", int(s.Code()), oneLine(s.Message()))
		} else if backend, derr := decodeEchoReplyBackend(reply); derr != nil {
			fmt.Printf("error %d bad reply: %s\n", 13, oneLine(derr.Error()))
		} else {
			fmt.Printf("ok %s\n", backend)
		}
		time.Sleep(time.Duration(*intervalMs) * time.Millisecond)
	}
}

func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}
