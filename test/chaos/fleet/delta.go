package main

import (
	"context"
	"fmt"
	"strings"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// deltaSession runs one delta ADS stream (DeltaAggregatedResources) until it
// fails. The server sends only what changed: the proxy keeps what it holds,
// drops what is removed, and subscribes to (and unsubscribes from) the
// endpoint and route names as its clusters and listeners come and go.
func (p *proxy) deltaSession() (complete bool, err error) {
	conn, err := p.dial()
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(rootCtx)
	defer cancel()
	st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	node := p.node()
	send := func(req *discoveryv3.DeltaDiscoveryRequest) error {
		req.Node, node = node, nil
		return st.Send(req)
	}
	states := newStates()
	// What each held cluster and listener refers to (EDS, RDS names).
	refs := map[string]map[string][]string{typeCDS: {}, typeLDS: {}}
	for _, tu := range []string{typeCDS, typeLDS} { // wildcard: no names
		if err := send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: tu}); err != nil {
			return false, err
		}
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
		gen := -1
		for _, r := range resp.GetResources() {
			_, rr, g, err := decode(tu, r.GetResource())
			if err != nil {
				return complete, fmt.Errorf("decode %s %s: %w", tu, r.GetName(), err)
			}
			s.held[r.GetName()] = true
			if refs[tu] != nil {
				refs[tu][r.GetName()] = rr
			}
			if g >= 0 {
				gen = g
			}
		}
		for _, n := range resp.GetRemovedResources() {
			delete(s.held, n)
			delete(refs[tu], n) // a no-op for EDS and RDS (nil map)
		}
		if refs[tu] != nil {
			if err := resubscribe(send, states, tu, refs[tu]); err != nil {
				return complete, err
			}
		}
		s.nonce, s.acked = resp.GetNonce(), true
		if err := send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: tu, ResponseNonce: s.nonce}); err != nil {
			return complete, err
		}
		complete = p.acked(tu, gen, states, complete)
	}
}

// resubscribe makes the endpoint (for clusters) or route (for listeners)
// subscription what the held resources of tu refer to, sending the names
// added and removed, and forgetting what is no longer asked for.
func resubscribe(send func(*discoveryv3.DeltaDiscoveryRequest) error,
	states map[string]*typeState, tu string, refs map[string][]string) error {
	dep := typeEDS
	if tu == typeLDS {
		dep = typeRDS
	}
	var all []string
	for _, r := range refs {
		all = append(all, r...)
	}
	want := uniq(all)
	had := states[dep].names
	if strings.Join(want, "\x00") == strings.Join(had, "\x00") {
		return nil
	}
	sub, unsub := diff(want, had), diff(had, want)
	states[dep].names = want
	for _, n := range unsub {
		delete(states[dep].held, n)
	}
	return send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: dep,
		ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub})
}

// diff returns the names of a that b lacks.
func diff(a, b []string) []string {
	in := map[string]bool{}
	for _, n := range b {
		in[n] = true
	}
	var out []string
	for _, n := range a {
		if !in[n] {
			out = append(out, n)
		}
	}
	return out
}
