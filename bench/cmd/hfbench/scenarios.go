package main

import (
	"fmt"
	"log"
	"sort"
	"time"

	"holdfast.bench/loadgen"
)

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func sortDur(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

// pushResult is what one change costs and how fast it reaches the fleet.
type pushResult struct {
	trigger        time.Time     // when the change was written
	allFromTrigger time.Duration // trigger -> last counted proxy ACKed
	allFromFirst   time.Duration // first receipt by any proxy -> last ACK
	fromFirst      []time.Duration
	fromTrigger    []time.Duration
	cpu            float64 // server CPU seconds, trigger -> all ACKed (+50 ms)
	loadgenCPU     float64 // the load generator's CPU seconds over the same time
	bytes          int64   // response bytes the fleet received
	serverBytes    float64 // holdfast's own bytes-sent metric delta (-1 if none)
}

// push makes one change (generation g, the given clusters) and waits until
// n counted proxies have ACKed it.
func push(cfg *config, s *server, f *loadgen.Fleet, g, n int, frac float64) (pushResult, error) {
	var r pushResult
	clusters := cfg.params.ChangedClusters(g, frac)
	cpu0, self0 := s.cpu(), selfCPU()
	b0 := f.Bytes.Load()
	sb0, haveSB := s.bytesSent()
	t := time.Now()
	r.trigger = t
	f.Tracker.Trigger(g, t)
	if err := s.change(g, clusters); err != nil {
		return r, err
	}
	if err := f.WaitGen(g, n, cfg.waitTimeout); err != nil {
		if e := s.alive(); e != nil {
			return r, e
		}
		return r, err
	}
	time.Sleep(50 * time.Millisecond) // the server handles the last ACKs
	r.cpu = s.cpu() - cpu0
	r.loadgenCPU = selfCPU() - self0
	r.bytes = f.Bytes.Load() - b0
	r.serverBytes = -1
	if sb1, ok := s.bytesSent(); ok && haveSB {
		r.serverBytes = sb1 - sb0
	}
	st := f.Tracker.Stats(g)
	r.fromFirst, r.fromTrigger = st.FromFirst, st.FromTrigger
	if len(st.FromTrigger) > 0 {
		r.allFromTrigger = st.FromTrigger[len(st.FromTrigger)-1]
		r.allFromFirst = st.FromFirst[len(st.FromFirst)-1]
	}
	return r, nil
}

func (c *config) want() [4]int {
	return [4]int{c.params.Clusters, c.params.Clusters, c.params.Listeners, 1}
}

// checkHoldings waits (up to 30 s) until every proxy holds the whole
// configuration at generation gen, and notes any that do not.
func checkHoldings(res *results, f *loadgen.Fleet, cfg *config, kind, where string, gen int) {
	t := time.Now()
	wrong, ex := f.Holdings(cfg.want(), gen)
	for wrong > 0 && time.Since(t) < 30*time.Second {
		time.Sleep(20 * time.Millisecond)
		wrong, ex = f.Holdings(cfg.want(), gen)
	}
	if wrong > 0 {
		log.Printf("!!! %s %s: %d proxies do not hold the expected config 30 s later: %s", kind, where, wrong, ex)
		res.note("%s, %s: %d proxies still did not hold the expected configuration 30 s later, e.g. %s", kind, where, wrong, ex)
	} else if d := time.Since(t); d > 100*time.Millisecond {
		log.Printf("    %s %s: every proxy held the whole configuration %v after the wait ended", kind, where, d.Round(time.Millisecond))
		res.note("%s, %s: every proxy held the whole configuration only %v after the last change was ACKed by all", kind, where, d.Round(time.Millisecond))
	}
}

// runFanout: memory with 0 and each fleet size of idle proxies, then, per
// fleet size, single-cluster changes timed until every proxy has ACKed.
func runFanout(cfg *config, res *results, kind, mode string) error {
	s, err := startServer(cfg, kind, cfg.params, "fanout-"+mode)
	if err != nil {
		return err
	}
	defer s.stop()
	time.Sleep(cfg.settle)
	rss0 := s.rss()
	res.add("memory", mode+", RSS with 0 proxies", "MB", kind, float64(rss0)/1e6)

	f := loadgen.New(loadgen.Options{Target: s.xds, Mode: loadgen.Mode(mode), DialBatch: cfg.dialBatch})
	defer f.Close()
	g, have := 0, 0
	for _, n := range cfg.fanoutSizes {
		cpu0, self0, t0 := s.cpu(), selfCPU(), time.Now()
		responses0, bytes0 := f.Responses.Load(), f.Bytes.Load()
		f.Add(n-have, loadgen.AddOptions{})
		if err := f.WaitConfigured(n, cfg.waitTimeout); err != nil {
			if e := s.alive(); e != nil {
				return e
			}
			return err
		}
		res.add("connect", fmt.Sprintf("%s, %d → %d proxies: all configured", mode, have, n), "s", kind, time.Since(t0).Seconds())
		res.add("connect", fmt.Sprintf("%s, %d → %d proxies: server CPU", mode, have, n), "s", kind, s.cpu()-cpu0)
		res.add("connect", fmt.Sprintf("%s, %d → %d proxies: load generator CPU", mode, have, n), "s", kind, selfCPU()-self0)
		res.add("connect", fmt.Sprintf("%s, %d → %d proxies: responses received per proxy", mode, have, n), "count", kind,
			float64(f.Responses.Load()-responses0)/float64(n-have))
		res.add("connect", fmt.Sprintf("%s, %d → %d proxies: bytes received", mode, have, n), "MB", kind,
			float64(f.Bytes.Load()-bytes0)/1e6)
		have = n
		checkHoldings(res, f, cfg, kind, fmt.Sprintf("fan-out %s, %d proxies connected", mode, n), g)
		time.Sleep(cfg.settle)
		rss := s.rss()
		res.add("memory", fmt.Sprintf("%s, RSS with %d idle proxies", mode, n), "MB", kind, float64(rss)/1e6)
		res.add("memory", fmt.Sprintf("%s, RSS per proxy at %d ((RSS − RSS₀) / N)", mode, n), "KB", kind,
			float64(rss-rss0)/float64(n)/1e3)

		reps := cfg.fanoutReps
		if n > 1000 {
			reps = cfg.fanoutRepsLarge
		}
		var e2e, fan, p50, p99, cpu, mb, smb []float64
		for rep := 0; rep < reps; rep++ {
			g++
			r, err := push(cfg, s, f, g, n, 0)
			if err != nil {
				return fmt.Errorf("fan-out push %d at %d proxies: %w", g, n, err)
			}
			log.Printf("    push %d: trigger→all %v, first→all %v, server cpu %.2fs, load generator cpu %.2fs, %.2f MB",
				g, r.allFromTrigger.Round(time.Millisecond), r.allFromFirst.Round(time.Millisecond), r.cpu, r.loadgenCPU, float64(r.bytes)/1e6)
			e2e = append(e2e, ms(r.allFromTrigger))
			fan = append(fan, ms(r.allFromFirst))
			p50 = append(p50, ms(loadgen.Quantile(r.fromFirst, 0.5)))
			p99 = append(p99, ms(loadgen.Quantile(r.fromFirst, 0.99)))
			cpu = append(cpu, r.cpu)
			mb = append(mb, float64(r.bytes)/1e6)
			if r.serverBytes >= 0 {
				smb = append(smb, r.serverBytes/1e6)
			}
			time.Sleep(400 * time.Millisecond) // longer than holdfast's poll: changes stay separate
		}
		sc := "fan-out"
		p := fmt.Sprintf("%s, %d proxies", mode, n)
		res.add(sc, p+": change → all ACKed", "ms", kind, median(e2e))
		res.add(sc, p+": first receipt → all ACKed", "ms", kind, median(fan))
		res.add(sc, p+": per-proxy ACK p50 after first receipt", "ms", kind, median(p50))
		res.add(sc, p+": per-proxy ACK p99 after first receipt", "ms", kind, median(p99))
		res.add(sc, p+": server CPU per change", "s", kind, median(cpu))
		res.add(sc, p+": bytes received per change", "MB", kind, median(mb))
		if len(smb) > 0 {
			res.note("holdfast's own holdfast_xds_bytes_sent_total per change, %s: %.3f MB (median; the fleet counted %.3f MB of messages)",
				p, median(smb), median(mb))
		}
		checkHoldings(res, f, cfg, kind, fmt.Sprintf("fan-out %s, after pushes at %d proxies", mode, n), g)
	}
	withdrawn(res, f, "fan-out", mode+", all sizes", kind)
	return nil
}

// withdrawn records how many resources configured proxies were told to drop
// (none should be: the benchmark never removes a resource).
func withdrawn(res *results, f *loadgen.Fleet, sc, prefix, kind string) {
	if e := f.StreamErrs.Load(); e > 0 {
		res.note("%s, %s on %s: %d streams failed and their proxies reconnected (first errors are in the log)", sc, prefix, kind, e)
	}
	res.add(sc, prefix+": streams that failed (proxy reconnected)", "count", kind, float64(f.StreamErrs.Load()))
	n := f.Withdrawn.Load()
	res.add(sc, prefix+": resources withdrawn from configured proxies (should be 0)", "count", kind, float64(n))
	if n > 0 {
		log.Printf("!!! %s %s on %s: configured proxies were told to drop %d resources", sc, prefix, kind, n)
		res.note("%s, %s on %s: configured proxies were told to drop %d resources that the configuration still had (see the server log)", sc, prefix, kind, n)
	}
}

// runStorm: N proxies connect at once (at most --dial-batch connection
// set-ups in flight); time until each holds a complete configuration.
func runStorm(cfg *config, res *results, kind string) error {
	s, err := startServer(cfg, kind, cfg.params, "storm")
	if err != nil {
		return err
	}
	defer s.stop()
	time.Sleep(time.Second)
	f := loadgen.New(loadgen.Options{Target: s.xds, Mode: loadgen.SotW, DialBatch: cfg.dialBatch})
	defer f.Close()
	n := cfg.stormProxies
	cpu0, self0 := s.cpu(), selfCPU()
	t0 := time.Now()
	f.Add(n, loadgen.AddOptions{})
	if err := f.WaitConfigured(n, cfg.waitTimeout); err != nil {
		if e := s.alive(); e != nil {
			return e
		}
		return err
	}
	cpu, loadgenCPU := s.cpu()-cpu0, selfCPU()-self0
	times := f.ConfigTimes(t0)
	sc := "connect storm"
	res.add(sc, fmt.Sprintf("%d proxies: all configured", n), "s", kind, times[len(times)-1].Seconds())
	res.add(sc, fmt.Sprintf("%d proxies: time to configured p50", n), "s", kind, loadgen.Quantile(times, 0.5).Seconds())
	res.add(sc, fmt.Sprintf("%d proxies: time to configured p99", n), "s", kind, loadgen.Quantile(times, 0.99).Seconds())
	res.add(sc, fmt.Sprintf("%d proxies: server CPU", n), "s", kind, cpu)
	res.add(sc, fmt.Sprintf("%d proxies: load generator CPU", n), "s", kind, loadgenCPU)
	res.add(sc, fmt.Sprintf("%d proxies: bytes received", n), "MB", kind, float64(f.Bytes.Load())/1e6)
	checkHoldings(res, f, cfg, kind, "connect storm", 0)
	withdrawn(res, f, sc, fmt.Sprintf("%d proxies", n), kind)
	return nil
}

// runChurn: a fraction of the clusters' endpoints change every interval for
// a while; CPU and per-proxy ACK latency of every change.
func runChurn(cfg *config, res *results, kind, mode string) error {
	s, err := startServer(cfg, kind, cfg.params, "churn-"+mode)
	if err != nil {
		return err
	}
	defer s.stop()
	f := loadgen.New(loadgen.Options{Target: s.xds, Mode: loadgen.Mode(mode), DialBatch: cfg.dialBatch})
	defer f.Close()
	n := cfg.churnProxies
	f.Add(n, loadgen.AddOptions{})
	if err := f.WaitConfigured(n, cfg.waitTimeout); err != nil {
		if e := s.alive(); e != nil {
			return e
		}
		return err
	}
	checkHoldings(res, f, cfg, kind, fmt.Sprintf("churn %s, connected", mode), 0)
	time.Sleep(time.Second)

	steps := int(cfg.churnDuration/cfg.churnInterval) + 2
	gens := make([]int, steps)
	for k := range gens {
		gens[k] = k + 1
	}
	changed := func(g int) []int { return cfg.params.ChangedClusters(g, cfg.churnFrac) }
	if err := s.prepare(gens, changed); err != nil {
		return err
	}
	cpu0, b0, r0 := s.cpu(), f.Bytes.Load(), f.Responses.Load()
	t0 := time.Now()
	tick := time.NewTicker(cfg.churnInterval)
	g := 0
	var slowest time.Duration
	for time.Since(t0) < cfg.churnDuration {
		<-tick.C
		g++
		ts := time.Now()
		f.Tracker.Trigger(g, ts)
		if err := s.change(g, changed(g)); err != nil {
			tick.Stop()
			return err
		}
		if d := time.Since(ts); d > slowest {
			slowest = d
		}
	}
	tick.Stop()
	churnEnd := time.Now()
	if err := f.WaitGen(g, n, cfg.waitTimeout); err != nil {
		if e := s.alive(); e != nil {
			return e
		}
		return err
	}
	time.Sleep(50 * time.Millisecond)
	elapsed := time.Since(t0)
	cpu := s.cpu() - cpu0
	var fromTrigger, fromFirst []time.Duration
	for k := 1; k <= g; k++ {
		st := f.Tracker.Stats(k)
		fromTrigger = append(fromTrigger, st.FromTrigger...)
		fromFirst = append(fromFirst, st.FromFirst...)
	}
	sortDur(fromTrigger)
	sortDur(fromFirst)
	sc := "endpoint churn"
	p := fmt.Sprintf("%s, %d proxies, %.0f%% every %v for %v", mode, n, cfg.churnFrac*100, cfg.churnInterval, cfg.churnDuration)
	res.add(sc, p+": changes written", "count", kind, float64(g))
	res.add(sc, p+": server CPU", "s", kind, cpu)
	res.add(sc, p+": server CPU, share of one core", "%", kind, 100*cpu/elapsed.Seconds())
	res.add(sc, p+": ACK latency p50 from change", "ms", kind, ms(loadgen.Quantile(fromTrigger, 0.5)))
	res.add(sc, p+": ACK latency p99 from change", "ms", kind, ms(loadgen.Quantile(fromTrigger, 0.99)))
	res.add(sc, p+": ACK latency p99 from first receipt", "ms", kind, ms(loadgen.Quantile(fromFirst, 0.99)))
	perProxy := float64(f.Responses.Load()-r0) / float64(n)
	res.add(sc, p+": responses per proxy", "count", kind, perProxy)
	if perProxy > 0 {
		res.add(sc, p+": server CPU per pushed version (CPU ÷ responses per proxy)", "ms", kind, 1000*cpu/perProxy)
	}
	res.add(sc, p+": bytes received", "MB", kind, float64(f.Bytes.Load()-b0)/1e6)
	res.note("churn %s on %s: %d changes in %v, last change ACKed by all %v after the churn ended, slowest change write %v",
		mode, kind, g, churnEnd.Sub(t0).Round(time.Millisecond), time.Since(churnEnd).Round(time.Millisecond), slowest.Round(time.Millisecond))
	checkHoldings(res, f, cfg, kind, fmt.Sprintf("churn %s, end", mode), g)
	withdrawn(res, f, sc, p, kind)
	return nil
}

// runSlow: a fraction of the proxies stop reading their stream; the others'
// push latency with and without them, then the stalled ones resume.
func runSlow(cfg *config, res *results, kind string) error {
	s, err := startServer(cfg, kind, cfg.params, "slow")
	if err != nil {
		return err
	}
	defer s.stop()
	f := loadgen.New(loadgen.Options{Target: s.xds, Mode: loadgen.SotW, DialBatch: cfg.dialBatch})
	defer f.Close()
	n := cfg.slowProxies
	nslow := int(float64(n)*cfg.slowFrac + 0.5)
	if nslow < 1 {
		nslow = 1
	}
	f.Add(n-nslow, loadgen.AddOptions{})
	slow := f.Add(nslow, loadgen.AddOptions{SmallWindows: true, Uncounted: true})
	if err := f.WaitConfigured(n, cfg.waitTimeout); err != nil {
		if e := s.alive(); e != nil {
			return e
		}
		return err
	}
	time.Sleep(time.Second)
	g := 0
	healthy := n - nslow
	phase := func() (all, p99 []float64, err error) {
		for k := 0; k < cfg.slowPushes; k++ {
			g++
			r, err := push(cfg, s, f, g, healthy, 0)
			if err != nil {
				return nil, nil, err
			}
			all = append(all, ms(r.allFromFirst))
			p99 = append(p99, ms(loadgen.Quantile(r.fromFirst, 0.99)))
			time.Sleep(400 * time.Millisecond)
		}
		return all, p99, nil
	}
	allBase, p99Base, err := phase()
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	f.SetPaused(slow, true)
	time.Sleep(300 * time.Millisecond)
	rssBefore := s.rss()
	allSlow, p99Slow, err := phase()
	if err != nil {
		return fmt.Errorf("with stalled proxies: %w", err)
	}
	rssAfter := s.rss()
	f.SetPaused(slow, false)
	t := time.Now()
	caught := -1.0
	for time.Since(t) < cfg.waitTimeout {
		done := true
		for _, gg := range f.Gens(slow) {
			if gg != g {
				done = false
				break
			}
		}
		if done {
			caught = ms(time.Since(t))
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	sc := "slow proxies"
	p := fmt.Sprintf("%d proxies, %d stop reading", n, nslow)
	res.add(sc, p+": healthy all ACKed after first receipt, none stalled", "ms", kind, median(allBase))
	res.add(sc, p+": healthy all ACKed after first receipt, with stalled", "ms", kind, median(allSlow))
	res.add(sc, p+": healthy ACK p99 after first receipt, none stalled", "ms", kind, median(p99Base))
	res.add(sc, p+": healthy ACK p99 after first receipt, with stalled", "ms", kind, median(p99Slow))
	res.add(sc, p+": server RSS growth while stalled", "MB", kind, float64(rssAfter-rssBefore)/1e6)
	if caught >= 0 {
		res.add(sc, p+": stalled proxies current after resuming", "ms", kind, caught)
	} else {
		res.note("%s: stalled proxies did not reach generation %d within %v of resuming", kind, g, cfg.waitTimeout)
	}
	checkHoldings(res, f, cfg, kind, "slow proxies, end", g)
	withdrawn(res, f, sc, p, kind)
	return nil
}
