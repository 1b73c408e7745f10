package loadgen

import (
	"sort"
	"sync"
	"time"
)

// Tracker records, per change generation, when it was triggered, when the
// first proxy received it, and when each proxy ACKed a configuration that
// includes it. A proxy that skips generations (the server coalesced them)
// reaches every skipped one at that ACK.
type Tracker struct {
	mu        sync.Mutex
	trigger   map[int]time.Time
	firstRecv map[int]time.Time
	acks      map[int][]time.Time
	reached   map[int]int
	// With TrackProxies: each proxy's receipt and ACK of each generation.
	perProxy map[int][]ProxyAck
}

// ProxyAck is one proxy's receipt and ACK of a generation.
type ProxyAck struct {
	ID        int // the proxy's index in its fleet (Fleet.NodeID names it)
	Recv, Ack time.Time
}

func newTracker() *Tracker {
	return &Tracker{
		trigger:   map[int]time.Time{},
		firstRecv: map[int]time.Time{},
		acks:      map[int][]time.Time{},
		reached:   map[int]int{},
	}
}

// Trigger records that generation gen is being written at t.
func (t *Tracker) Trigger(gen int, at time.Time) {
	t.mu.Lock()
	t.trigger[gen] = at
	t.mu.Unlock()
}

// TrackProxies makes the tracker also keep which proxy reached each
// generation when (ProxyAcks), from now on: scenarios that tell proxies
// apart (the staged rollout's canaries) need it; the others do without the
// memory.
func (t *Tracker) TrackProxies() {
	t.mu.Lock()
	if t.perProxy == nil {
		t.perProxy = map[int][]ProxyAck{}
	}
	t.mu.Unlock()
}

// reach records that proxy id moved from generation from to to: it received
// the response at recv and ACKed it at ack. counted proxies are those the
// scenario waits for (healthy ones).
func (t *Tracker) reach(id, from, to int, recv, ack time.Time, counted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for g := from + 1; g <= to; g++ {
		if _, ok := t.trigger[g]; !ok {
			continue
		}
		if fr, ok := t.firstRecv[g]; !ok || recv.Before(fr) {
			t.firstRecv[g] = recv
		}
		if counted {
			t.acks[g] = append(t.acks[g], ack)
			t.reached[g]++
			if t.perProxy != nil {
				t.perProxy[g] = append(t.perProxy[g], ProxyAck{ID: id, Recv: recv, Ack: ack})
			}
		}
	}
}

// ProxyAcks returns, for each counted proxy that has ACKed generation gen,
// when it received and ACKed it (nil unless TrackProxies was called before).
func (t *Tracker) ProxyAcks(gen int) []ProxyAck {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]ProxyAck(nil), t.perProxy[gen]...)
}

// Reached returns how many counted proxies have ACKed generation gen.
func (t *Tracker) Reached(gen int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reached[gen]
}

// GenStats summarises one generation.
type GenStats struct {
	Gen       int
	Reached   int
	Trigger   time.Time
	FirstRecv time.Time
	// Latencies of every counted proxy's ACK, from the trigger and from the
	// first proxy's receipt (the server's own fan-out, without the time its
	// config source took to notice the change).
	FromTrigger []time.Duration
	FromFirst   []time.Duration
}

// Stats returns the stats of generation gen (sorted latencies).
func (t *Tracker) Stats(gen int) GenStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := GenStats{Gen: gen, Reached: t.reached[gen], Trigger: t.trigger[gen], FirstRecv: t.firstRecv[gen]}
	for _, a := range t.acks[gen] {
		s.FromTrigger = append(s.FromTrigger, a.Sub(s.Trigger))
		s.FromFirst = append(s.FromFirst, a.Sub(s.FirstRecv))
	}
	sort.Slice(s.FromTrigger, func(i, j int) bool { return s.FromTrigger[i] < s.FromTrigger[j] })
	sort.Slice(s.FromFirst, func(i, j int) bool { return s.FromFirst[i] < s.FromFirst[j] })
	return s
}

// Quantile returns the q-quantile (0..1) of sorted durations, nearest rank.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}
