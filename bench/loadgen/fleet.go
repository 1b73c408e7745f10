// Package loadgen simulates a fleet of Envoy proxies on ADS.
//
// Each proxy has its own gRPC connection and one ADS stream (state of the
// world or delta). Like Envoy it asks for clusters and listeners (wildcard),
// then for the endpoints its clusters name and the route configurations its
// listeners name, and ACKs every response. It records when it first holds a
// complete configuration (all four types ACKed, every named resource
// received) and, through the fleet's Tracker, when it ACKs each change.
package loadgen

import (
	"context"
	"fmt"
	"hash/maphash"
	"log"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Mode is the xDS protocol variant.
type Mode string

const (
	SotW  Mode = "sotw"
	Delta Mode = "delta"
)

const (
	sotwMethod  = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
	deltaMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
)

// Options configures a fleet.
type Options struct {
	Target     string // host:port of the xDS server
	Mode       Mode
	DialBatch  int // at most this many connections being set up at once
	NodePrefix string
}

// Fleet is a set of simulated proxies sharing one decode cache and tracker.
type Fleet struct {
	opts    Options
	Tracker *Tracker

	cache   decodeCache
	names   interner
	lastRef sync.Map // delta: resource name -> *nameList it referred to

	dialSem chan struct{}

	mu      sync.Mutex
	proxies []*proxy
	wg      sync.WaitGroup

	configured atomic.Int64
	Responses  atomic.Int64 // responses received
	Bytes      atomic.Int64 // serialized response bytes received
	StreamErrs atomic.Int64 // streams that failed (the proxy then reconnected)
	Reconnects atomic.Int64
	// Withdrawn counts resources that configured proxies were told to drop
	// (a smaller SotW set, or delta removals). The benchmark's configuration
	// never removes anything, so any count here is a server withdrawing
	// config it should have kept serving.
	Withdrawn atomic.Int64
	errLogged atomic.Int64
	closing   atomic.Bool
}

// New returns an empty fleet.
func New(opts Options) *Fleet {
	if opts.DialBatch <= 0 {
		opts.DialBatch = 1000
	}
	if opts.NodePrefix == "" {
		opts.NodePrefix = "bench-proxy"
	}
	return &Fleet{opts: opts, Tracker: newTracker(), dialSem: make(chan struct{}, opts.DialBatch)}
}

// envoyWindow is Envoy's default HTTP/2 initial stream and connection window
// (http2_protocol_options, 256 MiB).
const envoyWindow = 256 << 20

// AddOptions configures proxies added together.
type AddOptions struct {
	// SmallWindows gives the proxies 64 KiB HTTP/2 windows (stream and
	// connection) so that one that stops reading pushes back on the server
	// quickly; others get Envoy's defaults (see envoyWindow).
	SmallWindows bool
	// Uncounted proxies are left out of the Tracker's counts (slow ones).
	Uncounted bool
}

// Add starts n proxies and returns at once; use WaitConfigured.
func (f *Fleet) Add(n int, ao AddOptions) []int {
	f.mu.Lock()
	base := len(f.proxies)
	ids := make([]int, n)
	for k := 0; k < n; k++ {
		p := &proxy{id: base + k, f: f, ao: ao, gen: -1, resume: make(chan struct{})}
		f.proxies = append(f.proxies, p)
		ids[k] = p.id
	}
	started := f.proxies[base:]
	f.mu.Unlock()
	for _, p := range started {
		f.wg.Add(1)
		go p.run()
	}
	return ids
}

// NodeID returns the node id proxy id (Add's index) sends.
func (f *Fleet) NodeID(id int) string { return fmt.Sprintf("%s-%06d", f.opts.NodePrefix, id) }

// Configured returns how many proxies hold a complete configuration.
func (f *Fleet) Configured() int { return int(f.configured.Load()) }

// Size returns the number of proxies started.
func (f *Fleet) Size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.proxies)
}

// WaitConfigured waits until n proxies are configured or the timeout passes.
func (f *Fleet) WaitConfigured(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for f.Configured() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d proxies configured after %v (%d stream errors)",
				f.Configured(), n, timeout, f.StreamErrs.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// WaitGen waits until n counted proxies have ACKed generation gen.
func (f *Fleet) WaitGen(gen, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for f.Tracker.Reached(gen) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("generation %d: %d of %d proxies ACKed after %v (%d stream errors)",
				gen, f.Tracker.Reached(gen), n, timeout, f.StreamErrs.Load())
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// ConfigTimes returns, sorted, when each configured proxy became configured,
// relative to since.
func (f *Fleet) ConfigTimes(since time.Time) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Duration
	for _, p := range f.proxies {
		if t := p.configuredAt.Load(); t != 0 {
			out = append(out, time.Unix(0, t).Sub(since))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// SetPaused makes the given proxies stop reading their stream (true) or
// resume (false).
func (f *Fleet) SetPaused(ids []int, paused bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		p := f.proxies[id]
		p.pmu.Lock()
		if paused && !p.paused {
			p.paused = true
			p.resume = make(chan struct{})
		} else if !paused && p.paused {
			p.paused = false
			close(p.resume)
		}
		p.pmu.Unlock()
	}
}

// Gens returns the generation each of the given proxies holds.
func (f *Fleet) Gens(ids []int) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, len(ids))
	for k, id := range ids {
		out[k] = int(f.proxies[id].held.Load())
	}
	return out
}

// Holdings counts the proxies whose held resource counts differ from want
// (CDS, EDS, LDS, RDS) or whose generation differs from gen (if gen >= 0).
func (f *Fleet) Holdings(want [4]int, gen int) (wrong int, example string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.proxies {
		p.pmu.Lock()
		got := p.heldCounts
		p.pmu.Unlock()
		g := int(p.held.Load())
		if got != want || (gen >= 0 && g != gen) {
			wrong++
			if example == "" {
				example = fmt.Sprintf("proxy %d holds CDS/EDS/LDS/RDS %v (want %v), generation %d (want %d)",
					p.id, got, want, g, gen)
			}
		}
	}
	return
}

// Close ends every stream and connection and waits for the proxies to stop.
func (f *Fleet) Close() {
	f.closing.Store(true)
	f.mu.Lock()
	ps := append([]*proxy(nil), f.proxies...)
	f.mu.Unlock()
	for _, p := range ps {
		p.pmu.Lock()
		if p.cancel != nil {
			p.cancel()
		}
		if p.paused {
			p.paused = false
			close(p.resume)
		}
		p.closed = true
		p.pmu.Unlock()
	}
	f.wg.Wait()
}

func (f *Fleet) logErr(format string, args ...any) {
	if f.closing.Load() {
		return
	}
	if f.errLogged.Add(1) <= 5 {
		log.Printf(format, args...)
	}
}

// --- one proxy ---

type typeState struct {
	acked     bool
	version   string
	nonce     string
	sub       *nameList // SotW: names asked for (EDS, RDS)
	subBits   bitset    // delta: names subscribed (EDS, RDS)
	subCount  int
	heldBits  bitset // delta, and SotW endpoints and routes: names held
	heldCount int
}

type proxy struct {
	id int
	f  *Fleet
	ao AddOptions

	pmu        sync.Mutex
	cancel     context.CancelFunc
	closed     bool
	paused     bool
	resume     chan struct{}
	heldCounts [4]int

	stream       grpc.ClientStream
	sentNode     bool
	ts           [numTypes]typeState
	gen          int
	configured   bool
	held         atomic.Int64 // generation held (for Gens)
	configuredAt atomic.Int64 // unix ns
}

func (p *proxy) node() *corev3.Node {
	if p.sentNode {
		return nil
	}
	p.sentNode = true
	return &corev3.Node{
		Id:            p.f.NodeID(p.id),
		Cluster:       "bench",
		UserAgentName: "hfbench",
	}
}

func (p *proxy) run() {
	defer p.f.wg.Done()
	p.held.Store(-1)
	ctx, cancel := context.WithCancel(context.Background())
	p.pmu.Lock()
	if p.closed {
		p.pmu.Unlock()
		cancel()
		return
	}
	p.cancel = cancel
	p.pmu.Unlock()
	defer cancel()

	// Like Envoy, a proxy whose stream ends reconnects (with backoff) and
	// asks for everything again; what it holds is kept meanwhile.
	backoff := 500 * time.Millisecond
	for {
		err := p.session(ctx)
		if ctx.Err() != nil {
			return
		}
		p.fail(err)
		p.f.Reconnects.Add(1)
		wait := backoff + time.Duration(rand.Int64N(int64(backoff)))
		if backoff < 4*time.Second {
			backoff *= 2
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
	}
}

// session runs one connection and ADS stream until it fails.
func (p *proxy) session(ctx context.Context) error {
	select {
	case p.f.dialSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	released := false
	release := func() {
		if !released {
			released = true
			<-p.f.dialSem
		}
	}
	defer release()

	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithNoProxy(),
		grpc.WithSharedWriteBuffer(true),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1 << 30)),
	}
	if p.ao.SmallWindows {
		dopts = append(dopts, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	} else {
		// Static windows, as Envoy's HTTP/2 client has. grpc-go's default is
		// a dynamic window probed with a BDP ping after data arrives: one
		// extra PING and PING ACK per response per proxy, which no Envoy sends
		// and which the server would pay for.
		dopts = append(dopts, grpc.WithInitialWindowSize(envoyWindow), grpc.WithInitialConnWindowSize(envoyWindow))
	}
	conn, err := grpc.NewClient("passthrough:///"+p.f.opts.Target, dopts...)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer conn.Close()
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()

	method := sotwMethod
	if p.f.opts.Mode == Delta {
		method = deltaMethod
	}
	desc := &grpc.StreamDesc{StreamName: method, ServerStreams: true, ClientStreams: true}
	st, err := conn.NewStream(sctx, desc, method, grpc.ForceCodecV2(rawCodec{}), grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	release() // connected: the server has accepted this connection
	p.stream = st
	p.sentNode = false
	p.ts = [numTypes]typeState{}
	// Envoy asks for clusters first, then listeners, both wildcard.
	for _, t := range []int{tCDS, tLDS} {
		if err := p.request(t, nil, nil); err != nil {
			return err
		}
	}
	for {
		var m rawMsg
		if err := st.RecvMsg(&m); err != nil {
			return err
		}
		recv := time.Now()
		p.pmu.Lock()
		paused, resume := p.paused, p.resume
		p.pmu.Unlock()
		if paused {
			select {
			case <-resume:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		p.f.Responses.Add(1)
		p.f.Bytes.Add(int64(len(m.b)))
		if p.f.opts.Mode == Delta {
			err = p.onDelta(m.b, recv)
		} else {
			err = p.onSotw(m.b, recv)
		}
		if err != nil {
			return err
		}
	}
}

func (p *proxy) fail(err error) {
	p.pmu.Lock()
	closed := p.closed
	p.pmu.Unlock()
	if closed {
		return
	}
	p.f.StreamErrs.Add(1)
	p.f.logErr("proxy %d: %v", p.id, err)
}

// request sends a SotW request or a delta request for type t.
// SotW: names is the full subscription (nil for wildcard), version and nonce
// from the type's state. Delta: names are added to the subscription.
func (p *proxy) request(t int, names []string, unsub []string) error {
	ts := &p.ts[t]
	if p.f.opts.Mode == Delta {
		return p.stream.SendMsg(&discoveryv3.DeltaDiscoveryRequest{
			Node:                     p.node(),
			TypeUrl:                  typeURLs[t],
			ResourceNamesSubscribe:   names,
			ResourceNamesUnsubscribe: unsub,
		})
	}
	return p.stream.SendMsg(&discoveryv3.DiscoveryRequest{
		Node:          p.node(),
		TypeUrl:       typeURLs[t],
		VersionInfo:   ts.version,
		ResponseNonce: ts.nonce,
		ResourceNames: names,
	})
}

func subNames(l *nameList) []string {
	if l == nil {
		return nil
	}
	return l.names
}

var hashSeed = maphash.MakeSeed()

// contentHash identifies a response's resources by their bytes, whatever
// their order: go-control-plane sends a type's resources in map order,
// which differs between responses of the same content, and a hash that
// depended on it would have the fleet decode every peer response afresh
// (work holdfast's sorted responses were spared).
func contentHash(values [][]byte) uint64 {
	var sum uint64
	for _, v := range values {
		sum += maphash.Bytes(hashSeed, v)
	}
	return sum
}

func (p *proxy) onSotw(b []byte, recv time.Time) error {
	r, err := parseSotw(b)
	if err != nil {
		return fmt.Errorf("bad DiscoveryResponse: %w", err)
	}
	t := typeIndex(r.typeURL)
	if t < 0 {
		return fmt.Errorf("unexpected type %q", r.typeURL)
	}
	d := p.f.cache.entry(fmt.Sprintf("s|%d|%s|%d|%x", t, r.version, len(r.resources),
		contentHash(r.resources)))
	d.once.Do(func() {
		d.count = len(r.resources)
		d.gen, d.refs, d.err = decodeSet(t, r.resources)
		if t == tEDS || t == tRDS {
			for _, v := range r.resources {
				d.ids = append(d.ids, p.f.names.id(resourceName(v)))
			}
		}
	})
	if d.err != nil {
		return fmt.Errorf("%s version %q: %w", typeNames[t], r.version, d.err)
	}
	// Envoy subscribes to what new clusters and listeners name before it
	// ACKs them.
	if t == tCDS || t == tLDS {
		next := t + 1
		if !p.ts[next].sub.same(d.refs) {
			p.ts[next].sub = d.refs
			p.ts[next].subCount = len(d.refs.names)
			if err := p.request(next, subNames(d.refs), nil); err != nil {
				return err
			}
		}
	}
	ts := &p.ts[t]
	if t == tEDS || t == tRDS {
		// As in Envoy and gRPC: only listener and cluster responses are the
		// whole state; an endpoint or route response updates what it carries
		// and leaves the rest.
		for _, id := range d.ids {
			if ts.heldBits.set(id) {
				ts.heldCount++
			}
		}
	} else {
		if p.configured && d.count < ts.heldCount {
			p.f.Withdrawn.Add(int64(ts.heldCount - d.count))
		}
		ts.heldCount = d.count
	}
	ts.version, ts.nonce, ts.acked = r.version, r.nonce, true
	var names []string
	if t == tEDS || t == tRDS {
		names = subNames(ts.sub)
	}
	if err := p.request(t, names, nil); err != nil {
		return err
	}
	ack := time.Now()
	p.afterAck(t, d.gen, recv, ack)
	return nil
}

func (p *proxy) onDelta(b []byte, recv time.Time) error {
	r, err := parseDelta(b)
	if err != nil {
		return fmt.Errorf("bad DeltaDiscoveryResponse: %w", err)
	}
	t := typeIndex(r.typeURL)
	if t < 0 {
		return fmt.Errorf("unexpected type %q", r.typeURL)
	}
	ts := &p.ts[t]
	gen := -1
	var subscribe []string
	var unsub []string
	next := t + 1
	for _, res := range r.resources {
		d := p.f.cache.deltaEntry(deltaKey{t, res.name, res.version})
		d.once.Do(func() {
			d.name = p.f.names.id(res.name)
			d.gen, d.refs, d.err = decodeSet(t, [][]byte{res.value})
		})
		if d.err != nil {
			return fmt.Errorf("%s %q version %q: %w", typeNames[t], res.name, res.version, d.err)
		}
		if ts.heldBits.set(d.name) {
			ts.heldCount++
		}
		if d.gen > gen {
			gen = d.gen
		}
		if t == tCDS || t == tLDS {
			if last, ok := p.f.lastRef.Load(res.name); !ok || last.(*nameList) != d.refs {
				p.f.lastRef.Store(res.name, d.refs)
			}
			for i, id := range d.refs.idsIn(&p.f.names) {
				if p.ts[next].subBits.set(id) {
					p.ts[next].subCount++
					subscribe = append(subscribe, d.refs.names[i])
				}
			}
		}
	}
	for _, name := range r.removed {
		id := p.f.names.id(name)
		if ts.heldBits.clear(id) {
			ts.heldCount--
			if p.configured {
				p.f.Withdrawn.Add(1)
			}
		}
		if t == tCDS || t == tLDS {
			if v, ok := p.f.lastRef.Load(name); ok {
				refs := v.(*nameList)
				for i, id := range refs.idsIn(&p.f.names) {
					if p.ts[next].subBits.clear(id) {
						p.ts[next].subCount--
						unsub = append(unsub, refs.names[i])
					}
				}
			}
		}
	}
	if len(subscribe) > 0 || len(unsub) > 0 {
		if err := p.request(next, subscribe, unsub); err != nil {
			return err
		}
	}
	ts.acked, ts.nonce = true, r.nonce
	if err := p.stream.SendMsg(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURLs[t], ResponseNonce: r.nonce}); err != nil {
		return err
	}
	ack := time.Now()
	p.afterAck(t, gen, recv, ack)
	return nil
}

func (p *proxy) afterAck(t, gen int, recv, ack time.Time) {
	p.pmu.Lock()
	for k := range p.heldCounts {
		p.heldCounts[k] = p.ts[k].heldCount
	}
	p.pmu.Unlock()
	if t == tEDS && gen > p.gen {
		if p.configured {
			p.f.Tracker.reach(p.id, p.gen, gen, recv, ack, !p.ao.Uncounted)
		}
		p.gen = gen
		p.held.Store(int64(gen))
	}
	if !p.configured {
		ok := true
		for k := range p.ts {
			if !p.ts[k].acked {
				ok = false
			}
		}
		if ok && p.ts[tEDS].subCount > 0 && p.ts[tEDS].heldCount == p.ts[tEDS].subCount &&
			p.ts[tRDS].subCount > 0 && p.ts[tRDS].heldCount == p.ts[tRDS].subCount {
			p.configured = true
			p.configuredAt.Store(ack.UnixNano())
			p.f.configured.Add(1)
		}
	}
}
