// Command goclient is the grpc-go proxyless xDS client of the integration
// suite: the same behaviour as xds_cpp_client and xds_node_client.js, built
// on grpc-go's xds package (a third, independent xDS implementation).
//
//	goclient --target xds:///echo.test [--interval-ms 100] [--deadline-ms 1000] [--count N]
//	         [--header NAME=VALUE]...
//	goclient csds --server HOST:PORT ...   (csds.go)
//
// One holdfast.test.Echo/Call per interval, each carrying every --header as
// request metadata (what xDS header matchers see); one line per RPC on stdout:
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
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	_ "google.golang.org/grpc/xds" // registers the xds resolver and balancers
)

const callMethod = "/holdfast.test.Echo/Call"

// headerFlags collects repeated --header NAME=VALUE flags as metadata pairs.
type headerFlags []string

func (h *headerFlags) String() string { return strings.Join(*h, ",") }

func (h *headerFlags) Set(value string) error {
	name, v, ok := strings.Cut(value, "=")
	if !ok || name == "" || name != strings.ToLower(name) {
		return fmt.Errorf("want NAME=VALUE with a lower-case name, got %q", value)
	}
	*h = append(*h, name, v)
	return nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "csds" {
		os.Exit(runCsds(os.Args[2:]))
	}
	target := flag.String("target", "", "xds:///host target")
	intervalMs := flag.Int("interval-ms", 100, "pause between RPCs")
	deadlineMs := flag.Int("deadline-ms", 1000, "per-RPC deadline")
	count := flag.Int("count", 0, "number of RPCs; 0 means forever")
	var headers headerFlags
	flag.Var(&headers, "header", "NAME=VALUE request metadata sent with every RPC (repeatable)")
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
		if len(headers) > 0 {
			ctx = metadata.AppendToOutgoingContext(ctx, headers...)
		}
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
