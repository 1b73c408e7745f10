package main

// goclient csds: asks a control plane's ClientStatusDiscoveryService what
// it sent its proxies, with go-control-plane's generated CSDS stubs.
//
//	goclient csds --server HOST:PORT [--node-prefix P] [--exclude-contents] [--stream N]
//
// Without --stream, one FetchClientStatus; with --stream N, N requests on
// one StreamClientStatus, --interval-ms apart. Each response is one line of
// protojson on stdout; an RPC error is "error <numeric-code> <message>" and
// exit status 1.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

func runCsds(args []string) int {
	flags := flag.NewFlagSet("csds", flag.ExitOnError)
	server := flags.String("server", "", "the control plane's xDS address, HOST:PORT")
	nodePrefix := flags.String("node-prefix", "", "ask only for nodes whose id starts with this")
	exclude := flags.Bool("exclude-contents", false, "set exclude_resource_contents")
	stream := flags.Int("stream", 0, "requests on one StreamClientStatus (0: one FetchClientStatus)")
	intervalMs := flags.Int("interval-ms", 200, "pause between streamed requests")
	flags.Parse(args)
	if *server == "" {
		fmt.Fprintln(os.Stderr, "goclient csds: --server is required")
		return 2
	}
	conn, err := grpc.NewClient(*server, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "goclient csds: %v\n", err)
		return 1
	}
	defer conn.Close()
	request := &statuspb.ClientStatusRequest{ExcludeResourceContents: *exclude}
	if *nodePrefix != "" {
		request.NodeMatchers = []*matcherpb.NodeMatcher{{NodeId: &matcherpb.StringMatcher{
			MatchPattern: &matcherpb.StringMatcher_Prefix{Prefix: *nodePrefix}}}}
	}
	client := statuspb.NewClientStatusDiscoveryServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if *stream == 0 {
		response, err := client.FetchClientStatus(ctx, request)
		if err != nil {
			return printError(err)
		}
		return printResponse(response)
	}
	calls, err := client.StreamClientStatus(ctx)
	if err != nil {
		return printError(err)
	}
	for n := 0; n < *stream; n++ {
		if err := calls.Send(request); err != nil {
			return printError(err)
		}
		response, err := calls.Recv()
		if err != nil {
			return printError(err)
		}
		if rc := printResponse(response); rc != 0 {
			return rc
		}
		time.Sleep(time.Duration(*intervalMs) * time.Millisecond)
	}
	if err := calls.CloseSend(); err != nil {
		return printError(err)
	}
	return 0
}

func printResponse(response *statuspb.ClientStatusResponse) int {
	line, err := protojson.Marshal(response)
	if err != nil {
		fmt.Fprintf(os.Stderr, "goclient csds: %v\n", err)
		return 1
	}
	fmt.Println(string(line))
	return 0
}

func printError(err error) int {
	s := status.Convert(err)
	fmt.Printf("error %d %s\n", int(s.Code()), oneLine(s.Message()))
	return 1
}
