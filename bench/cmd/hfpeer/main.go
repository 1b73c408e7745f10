// Command hfpeer is the benchmark's peer control plane: go-control-plane's
// caches and ADS server (state of the world and delta), serving the same
// resources as holdfast gets from fleetcfg, set up as its README recommends
// for this workload (--cache linear, the default): a MuxCache whose
// SnapshotCache holds clusters, listeners and routes and whose LinearCache
// holds the endpoints, so a change sends only the changed assignments, each
// marshalled once for every stream. --cache snapshot serves endpoints from
// the SnapshotCache too (every stream gets all of them on each change).
//
// Every node sees one shared snapshot (a NodeHash that maps all nodes to one
// key), as every holdfast node does. Types have their own versions.
//
// Transport and memory as holdfast's: static HTTP/2 windows (no BDP
// probing), keepalive pings after 60 s idle with a 30 s timeout, and freed
// memory returned to the OS once a second has passed without a
// publication or a stream opening or closing (holdfast's malloc_trim).
//
// HTTP on --admin-listen:
//
//	GET  /readyz                          200 once the first snapshot is set
//	POST /change?gen=N&clusters=1,2,3     set those clusters' endpoints to generation N;
//	                                      answers at once, a publisher goroutine then sets
//	                                      a snapshot of the newest state (changes that
//	                                      arrive while it is busy are merged), as a
//	                                      controller feeding the cache would
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"holdfast.bench/fleetcfg"
)

// oneGroup maps every node to the same snapshot.
type oneGroup struct{}

func (oneGroup) ID(*corev3.Node) string { return "fleet" }

type peer struct {
	params   fleetcfg.Params
	snapshot cachev3.SnapshotCache
	linear   *cachev3.LinearCache // endpoints, with --cache linear
	cache    cachev3.Cache        // what the server reads
	activity atomic.Uint64        // publications and streams opened or closed

	mu        sync.Mutex
	endpoints []cachetypes.Resource // per cluster, current generation
	gen       int                   // newest generation asked for
	static    [cachetypes.UnknownType]cachev3.Resources
	ready     bool
	kick      chan struct{} // one pending publication
}

func newPeer(p fleetcfg.Params, linear bool) *peer {
	pe := &peer{params: p, snapshot: cachev3.NewSnapshotCache(true, oneGroup{}, nil),
		kick: make(chan struct{}, 1)}
	pe.cache = pe.snapshot
	clusters := make([]cachetypes.Resource, 0, p.Clusters)
	initial := map[string]cachetypes.Resource{}
	for i := 0; i < p.Clusters; i++ {
		clusters = append(clusters, fleetcfg.Cluster(i))
		pe.endpoints = append(pe.endpoints, p.LoadAssignment(i, 0))
		initial[cachev3.GetResourceName(pe.endpoints[i])] = pe.endpoints[i]
	}
	if linear {
		pe.linear = cachev3.NewLinearCache(resourcev3.EndpointType, cachev3.WithInitialResources(initial))
		pe.cache = &cachev3.MuxCache{
			Classify: func(r *cachev3.Request) string { return classify(r.GetTypeUrl()) },
			ClassifyDelta: func(r *cachev3.DeltaRequest) string {
				return classify(r.GetTypeUrl())
			},
			Caches: map[string]cachev3.Cache{"snapshot": pe.snapshot, "linear": pe.linear},
		}
	}
	listeners := make([]cachetypes.Resource, 0, p.Listeners)
	for j := 0; j < p.Listeners; j++ {
		listeners = append(listeners, fleetcfg.Listener(j))
	}
	pe.static[cachetypes.Cluster] = cachev3.NewResources("c1", clusters)
	pe.static[cachetypes.Listener] = cachev3.NewResources("l1", listeners)
	pe.static[cachetypes.Route] = cachev3.NewResources("r1", []cachetypes.Resource{p.RouteConfig()})
	return pe
}

func classify(typeURL string) string {
	if typeURL == resourcev3.EndpointType {
		return "linear"
	}
	return "snapshot"
}

// publish sets a snapshot of the newest state; with the linear cache only
// clusters, listeners and routes go in the snapshot (once: they never
// change here), and changes go to the LinearCache as they come.
func (pe *peer) publish() error {
	pe.activity.Add(1)
	snap := &cachev3.Snapshot{}
	snap.Resources = pe.static // an array: copied
	pe.mu.Lock()
	if pe.linear != nil && pe.ready {
		pe.mu.Unlock()
		return nil
	}
	if pe.linear == nil {
		eps := make([]cachetypes.Resource, len(pe.endpoints))
		copy(eps, pe.endpoints)
		snap.Resources[cachetypes.Endpoint] = cachev3.NewResources("g"+strconv.Itoa(pe.gen), eps)
	}
	pe.mu.Unlock()
	if pe.linear == nil {
		if err := snap.Consistent(); err != nil {
			return err
		}
	}
	if err := pe.snapshot.SetSnapshot(context.Background(), "fleet", snap); err != nil {
		return err
	}
	pe.mu.Lock()
	pe.ready = true
	pe.mu.Unlock()
	return nil
}

// publisher publishes after every kick, merging kicks that arrive meanwhile.
func (pe *peer) publisher() {
	for range pe.kick {
		if err := pe.publish(); err != nil {
			log.Printf("publish: %v", err)
		}
	}
}

func (pe *peer) change(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	gen, err := strconv.Atoi(r.URL.Query().Get("gen"))
	if err != nil || gen < 1 {
		http.Error(w, "bad gen", http.StatusBadRequest)
		return
	}
	var clusters []int
	for _, s := range strings.Split(r.URL.Query().Get("clusters"), ",") {
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 || i >= pe.params.Clusters {
			http.Error(w, "bad cluster "+s, http.StatusBadRequest)
			return
		}
		clusters = append(clusters, i)
	}
	eps := make([]cachetypes.Resource, len(clusters))
	for k, i := range clusters {
		eps[k] = pe.params.LoadAssignment(i, gen)
	}
	pe.mu.Lock()
	for k, i := range clusters {
		pe.endpoints[i] = eps[k]
	}
	if gen > pe.gen {
		pe.gen = gen
	}
	pe.mu.Unlock()
	if pe.linear != nil {
		// What a controller feeding a LinearCache does: only what changed.
		update := make(map[string]cachetypes.Resource, len(eps))
		for _, e := range eps {
			update[cachev3.GetResourceName(e)] = e
		}
		pe.activity.Add(1)
		if err := pe.linear.UpdateResources(update, nil); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	select {
	case pe.kick <- struct{}{}:
	default: // a publication is already pending; it will see this change
	}
	w.WriteHeader(http.StatusNoContent)
}

func main() {
	var p fleetcfg.Params
	xdsListen := flag.String("xds-listen", "127.0.0.1:0", "xDS gRPC address")
	adminListen := flag.String("admin-listen", "127.0.0.1:0", "HTTP control address")
	portsFile := flag.String("ports-file", "", `write {"xds":PORT,"admin":PORT} here once listening`)
	flag.IntVar(&p.Clusters, "clusters", 1000, "EDS clusters")
	flag.IntVar(&p.Routes, "routes", 1000, "routes in the route configuration")
	flag.IntVar(&p.EndpointsPerCluster, "endpoints", 3, "endpoints per cluster")
	flag.IntVar(&p.Listeners, "listeners", 2, "listeners")
	cacheKind := flag.String("cache", "linear",
		"linear: MuxCache, endpoints in a LinearCache (go-control-plane's advice); snapshot: one SnapshotCache")
	flag.Parse()
	if *cacheKind != "linear" && *cacheKind != "snapshot" {
		log.Fatalf("--cache %q: want linear or snapshot", *cacheKind)
	}

	pe := newPeer(p, *cacheKind == "linear")
	if err := pe.publish(); err != nil {
		log.Fatalf("initial snapshot: %v", err)
	}
	go pe.publisher()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streams := serverv3.CallbackFuncs{
		StreamOpenFunc:        func(context.Context, int64, string) error { pe.activity.Add(1); return nil },
		StreamClosedFunc:      func(int64, *corev3.Node) { pe.activity.Add(1) },
		DeltaStreamOpenFunc:   func(context.Context, int64, string) error { pe.activity.Add(1); return nil },
		DeltaStreamClosedFunc: func(int64, *corev3.Node) { pe.activity.Add(1) },
	}
	srv := serverv3.NewServer(ctx, pe.cache, streams)
	const window = 64 << 10 // a static window turns grpc-go's BDP probing off, as holdfast's
	gs := grpc.NewServer(grpc.MaxConcurrentStreams(1<<20),
		grpc.InitialWindowSize(window), grpc.InitialConnWindowSize(window),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 60 * time.Second, Timeout: 30 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second,
			PermitWithoutStream: true}))
	go pe.returnMemoryWhenQuiet()
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(gs, srv)

	xl, err := net.Listen("tcp", *xdsListen)
	if err != nil {
		log.Fatal(err)
	}
	al, err := net.Listen("tcp", *adminListen)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/change", pe.change)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		pe.mu.Lock()
		defer pe.mu.Unlock()
		if !pe.ready {
			http.Error(w, "no snapshot", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	go func() { _ = http.Serve(al, mux) }()
	go func() {
		if err := gs.Serve(xl); err != nil {
			log.Printf("grpc serve: %v", err)
		}
	}()

	if *portsFile != "" {
		data, _ := json.Marshal(map[string]int{
			"xds":   xl.Addr().(*net.TCPAddr).Port,
			"admin": al.Addr().(*net.TCPAddr).Port,
		})
		tmp := filepath.Join(filepath.Dir(*portsFile), "."+filepath.Base(*portsFile)+".tmp")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(tmp, *portsFile); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("hfpeer: xds %s admin %s, %d clusters %d routes %d endpoints/cluster %d listeners",
		xl.Addr(), al.Addr(), p.Clusters, p.Routes, p.EndpointsPerCluster, p.Listeners)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	gs.Stop()
}

// returnMemoryWhenQuiet gives freed memory back to the OS once a second has
// passed without activity, as holdfast's MemoryTrimmer does with
// malloc_trim, so that resident memory is compared like for like.
func (pe *peer) returnMemoryWhenQuiet() {
	last, trimmed := pe.activity.Load(), uint64(0)
	for range time.Tick(time.Second) {
		now := pe.activity.Load()
		if now == last && now != trimmed {
			debug.FreeOSMemory()
			trimmed = now
		}
		last = now
	}
}
