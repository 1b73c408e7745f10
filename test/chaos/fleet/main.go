// chaos-fleet: many simulated proxies on ADS, state of the world or delta,
// for the chaos run. Each proxy has its own gRPC connection and ADS stream;
// like Envoy it asks for clusters and listeners (wildcard), then for the
// endpoints its clusters name and the route configurations its listeners
// name, and ACKs every response. When a stream fails it reconnects to the
// next target (as a load balancer in front of the replicas would send it).
//
//	chaos-fleet --targets 127.0.0.1:P1,127.0.0.1:P2 --gen-cluster chaos/gen
//
// Commands on stdin, one a line: "add N [TARGET_INDEX [PROTO]]" starts N
// proxies (on targets round-robin, or all on TARGET_INDEX unless it is -1)
// speaking PROTO, "sotw" (the default) or "delta"; "quit" ends every stream
// and exits. Events on stdout, one JSON object a line, `t` in Unix seconds:
//
//	{"ev":"connect","p":ID,"target":I,"proto":P,"t":T}  stream opened
//	{"ev":"complete","p":ID,"target":I,"t":T,"gen":G}  all four types ACKed
//	    in this session and every named EDS/RDS resource received
//	{"ev":"gen","p":ID,"gen":G,"t":T}             ACKed endpoints of a new generation
//	{"ev":"end","p":ID,"target":I,"t":T,"err":E,"complete":B}  stream ended
//
// The generation G is read from the ClusterLoadAssignment named by
// --gen-cluster: its first endpoint's port minus 1000.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

const (
	typeCDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	typeEDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	typeLDS = "type.googleapis.com/envoy.config.listener.v3.Listener"
	typeRDS = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

var (
	targets             []string
	genCluster          string
	nodePrefix          string
	outMu               sync.Mutex
	out                 = bufio.NewWriter(os.Stdout)
	wg                  sync.WaitGroup
	rootCtx, rootCancel = context.WithCancel(context.Background())
)

func now() float64 { return float64(time.Now().UnixNano()) / 1e9 }

func emit(ev map[string]any) {
	b, _ := json.Marshal(ev)
	outMu.Lock()
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
	outMu.Unlock()
}

type typeState struct {
	version, nonce string
	acked          bool
	names          []string        // subscription (EDS, RDS)
	held           map[string]bool // names received
}

type proxy struct {
	id     int
	target int
	gen    int
	delta  bool
}

func main() {
	t := flag.String("targets", "", "comma-separated host:port of the xDS servers")
	flag.StringVar(&genCluster, "gen-cluster", "chaos/gen", "ClusterLoadAssignment carrying the generation")
	flag.StringVar(&nodePrefix, "node-prefix", "chaos-proxy", "node id prefix")
	flag.Parse()
	targets = strings.Split(*t, ",")
	if *t == "" {
		fmt.Fprintln(os.Stderr, "--targets is required")
		os.Exit(2)
	}
	next := 0
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "add":
			n, _ := strconv.Atoi(f[1])
			fixed := -1
			if len(f) > 2 {
				fixed, _ = strconv.Atoi(f[2])
			}
			delta := len(f) > 3 && f[3] == "delta"
			for k := 0; k < n; k++ {
				tgt := next % len(targets)
				if fixed >= 0 {
					tgt = fixed % len(targets)
				}
				p := &proxy{id: next, target: tgt, gen: -1, delta: delta}
				next++
				wg.Add(1)
				go p.run()
			}
		case "quit":
			rootCancel()
			wg.Wait()
			return
		}
	}
	rootCancel()
	wg.Wait()
}

func (p *proxy) run() {
	defer wg.Done()
	backoff := 200 * time.Millisecond
	for rootCtx.Err() == nil {
		session := p.session
		if p.delta {
			session = p.deltaSession
		}
		complete, err := session()
		if rootCtx.Err() != nil {
			return
		}
		emit(map[string]any{"ev": "end", "p": p.id, "target": p.target, "t": now(),
			"err": fmt.Sprint(err), "complete": complete})
		if complete {
			backoff = 200 * time.Millisecond
		}
		p.target = (p.target + 1) % len(targets)
		select {
		case <-time.After(backoff):
		case <-rootCtx.Done():
			return
		}
		if backoff < 2*time.Second {
			backoff *= 2
		}
	}
}

func (p *proxy) dial() (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///"+targets[p.target],
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithNoProxy(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<28)))
}

func (p *proxy) node() *corev3.Node {
	return &corev3.Node{Id: fmt.Sprintf("%s-%05d", nodePrefix, p.id), Cluster: "chaos"}
}

func newStates() map[string]*typeState {
	states := map[string]*typeState{}
	for _, tu := range []string{typeCDS, typeEDS, typeLDS, typeRDS} {
		states[tu] = &typeState{held: map[string]bool{}}
	}
	return states
}

// session runs one state-of-the-world ADS stream until it fails.
func (p *proxy) session() (complete bool, err error) {
	conn, err := p.dial()
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(rootCtx)
	defer cancel()
	st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	node := p.node()
	states := newStates()
	send := func(tu string) error {
		s := states[tu]
		req := &discoveryv3.DiscoveryRequest{TypeUrl: tu, VersionInfo: s.version,
			ResponseNonce: s.nonce, ResourceNames: s.names, Node: node}
		node = nil
		return st.Send(req)
	}
	if err := send(typeCDS); err != nil {
		return false, err
	}
	if err := send(typeLDS); err != nil {
		return false, err
	}
	p.connected()
	for {
		resp, err := st.Recv()
		if err != nil {
			return complete, err
		}
		tu := resp.GetTypeUrl()
		s, ok := states[tu]
		if !ok {
			return complete, fmt.Errorf("unexpected type %s", tu)
		}
		var refs []string
		gen := -1
		heldNow := map[string]bool{}
		for _, any := range resp.GetResources() {
			name, r, g, err := decode(tu, any)
			if err != nil {
				return complete, fmt.Errorf("decode %s: %w", tu, err)
			}
			heldNow[name] = true
			refs = append(refs, r...)
			if g >= 0 {
				gen = g
			}
		}
		if tu == typeEDS || tu == typeRDS {
			// As Envoy and gRPC treat them: only listener and cluster
			// responses are the whole state; an endpoint or route response
			// updates what it carries and leaves the rest.
			for n := range heldNow {
				s.held[n] = true
			}
		} else {
			s.held = heldNow
		}
		if tu == typeCDS || tu == typeLDS {
			dep := typeEDS
			if tu == typeLDS {
				dep = typeRDS
			}
			refs = uniq(refs)
			if strings.Join(refs, "\x00") != strings.Join(states[dep].names, "\x00") {
				states[dep].names = refs
				// What is no longer asked for is dropped, as Envoy does.
				wanted := map[string]bool{}
				for _, n := range refs {
					wanted[n] = true
				}
				for n := range states[dep].held {
					if !wanted[n] {
						delete(states[dep].held, n)
					}
				}
				if err := send(dep); err != nil {
					return complete, err
				}
			}
		}
		s.version, s.nonce, s.acked = resp.GetVersionInfo(), resp.GetNonce(), true
		if err := send(tu); err != nil {
			return complete, err
		}
		complete = p.acked(tu, gen, states, complete)
	}
}

func (p *proxy) connected() {
	proto := "sotw"
	if p.delta {
		proto = "delta"
	}
	emit(map[string]any{"ev": "connect", "p": p.id, "target": p.target, "proto": proto, "t": now()})
}

// acked reports what a response of type tu, just ACKed, changed: a new
// generation (gen >= 0 from the generation cluster), the session complete.
func (p *proxy) acked(tu string, gen int, states map[string]*typeState, complete bool) bool {
	t := now()
	if tu == typeEDS && gen >= 0 && gen != p.gen {
		p.gen = gen
		emit(map[string]any{"ev": "gen", "p": p.id, "gen": gen, "t": t, "target": p.target})
	}
	if !complete && allHeld(states) {
		complete = true
		emit(map[string]any{"ev": "complete", "p": p.id, "target": p.target, "t": t, "gen": p.gen})
	}
	return complete
}

func allHeld(states map[string]*typeState) bool {
	for _, s := range states {
		if !s.acked {
			return false
		}
	}
	for _, tu := range []string{typeEDS, typeRDS} {
		s := states[tu]
		if len(s.names) == 0 {
			return false
		}
		for _, n := range s.names {
			if !s.held[n] {
				return false
			}
		}
	}
	return true
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	// Stable order: sorted.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// decode returns a resource's name, the names it refers to (EDS for a
// cluster, RDS for a listener) and, for the generation cluster, its
// generation (else -1).
func decode(tu string, a *anypb.Any) (string, []string, int, error) {
	switch tu {
	case typeCDS:
		var c clusterv3.Cluster
		if err := proto.Unmarshal(a.GetValue(), &c); err != nil {
			return "", nil, -1, err
		}
		if c.GetType() == clusterv3.Cluster_EDS || c.GetEdsClusterConfig() != nil {
			n := c.GetEdsClusterConfig().GetServiceName()
			if n == "" {
				n = c.GetName()
			}
			return c.GetName(), []string{n}, -1, nil
		}
		return c.GetName(), nil, -1, nil
	case typeEDS:
		var cla endpointv3.ClusterLoadAssignment
		if err := proto.Unmarshal(a.GetValue(), &cla); err != nil {
			return "", nil, -1, err
		}
		g := -1
		if cla.GetClusterName() == genCluster {
			for _, le := range cla.GetEndpoints() {
				for _, ep := range le.GetLbEndpoints() {
					g = int(ep.GetEndpoint().GetAddress().GetSocketAddress().GetPortValue()) - 1000
				}
			}
		}
		return cla.GetClusterName(), nil, g, nil
	case typeLDS:
		var l listenerv3.Listener
		if err := proto.Unmarshal(a.GetValue(), &l); err != nil {
			return "", nil, -1, err
		}
		var refs []string
		hcms := []*anypb.Any{l.GetApiListener().GetApiListener()}
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				hcms = append(hcms, f.GetTypedConfig())
			}
		}
		for _, h := range hcms {
			if h == nil || !strings.HasSuffix(h.GetTypeUrl(), "HttpConnectionManager") {
				continue
			}
			var hcm hcmv3.HttpConnectionManager
			if err := proto.Unmarshal(h.GetValue(), &hcm); err != nil {
				return "", nil, -1, err
			}
			if n := hcm.GetRds().GetRouteConfigName(); n != "" {
				refs = append(refs, n)
			}
		}
		return l.GetName(), refs, -1, nil
	case typeRDS:
		var rc routev3.RouteConfiguration
		if err := proto.Unmarshal(a.GetValue(), &rc); err != nil {
			return "", nil, -1, err
		}
		return rc.GetName(), nil, -1, nil
	}
	return "", nil, -1, fmt.Errorf("unknown type")
}
