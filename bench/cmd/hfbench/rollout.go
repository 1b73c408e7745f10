package main

import (
	"fmt"
	"log"
	"math/rand/v2"
	"time"

	"holdfast.bench/loadgen"
)

// isCanary reports whether holdfast's staged rollout takes the proxy with
// this node id as a canary under --rollout-canary-percent percent, as
// IsCanary in src/rollout/rollout.cc decides: an FNV-1a style hash of the
// id, mod 100, below percent. holdfast's offset basis is
// 1469598103934665603 (the standard FNV-64 one is 14695981039346656037), so
// hash/fnv would pick other proxies: this copies holdfast's constants.
func isCanary(nodeID string, percent int) bool {
	h := uint64(1469598103934665603)
	for i := 0; i < len(nodeID); i++ {
		h ^= uint64(nodeID[i])
		h *= 1099511628211
	}
	return int(h%100) < percent
}

// runRollout: what a staged rollout costs. The same fleet and the same
// single-cluster changes as the fan-out scenario, on holdfast with a staged
// rollout (kind holdfast-rollout: the change goes to the canaries first and
// to everyone once every canary ACKed it and the bake time passed) or
// without (kind holdfast: everyone at once). The canaries are the proxies
// holdfast's hash picks (isCanary); with the rollout off, the same proxies
// are timed for comparison.
func runRollout(cfg *config, res *results, kind, mode string) error {
	s, err := startServer(cfg, kind, cfg.params, "rollout-"+mode)
	if err != nil {
		return err
	}
	defer s.stop()
	staged := kind == kindHoldfastRollout
	f := loadgen.New(loadgen.Options{Target: s.xds, Mode: loadgen.Mode(mode), DialBatch: cfg.dialBatch})
	defer f.Close()
	f.Tracker.TrackProxies()
	const sc = "staged rollout"
	// Figures only the staged server has keep their place in the table
	// whichever server runs first.
	rolloutRun := false
	for _, k := range cfg.servers {
		rolloutRun = rolloutRun || k == kindHoldfastRollout
	}
	g, have := 0, 0
	for _, n := range cfg.rolloutSizes {
		cpu0, t0 := s.cpu(), time.Now()
		f.Add(n-have, loadgen.AddOptions{})
		if err := f.WaitConfigured(n, cfg.waitTimeout); err != nil {
			if e := s.alive(); e != nil {
				return e
			}
			return err
		}
		res.add(sc, fmt.Sprintf("%s, %d → %d proxies: all configured", mode, have, n), "s", kind, time.Since(t0).Seconds())
		res.add(sc, fmt.Sprintf("%s, %d → %d proxies: server CPU to connect", mode, have, n), "s", kind, s.cpu()-cpu0)
		have = n
		checkHoldings(res, f, cfg, kind, fmt.Sprintf("rollout %s, %d proxies connected", mode, n), g)

		canary := make([]bool, n)
		nCanary := 0
		for id := range canary {
			if isCanary(f.NodeID(id), cfg.rolloutPercent) {
				canary[id] = true
				nCanary++
			}
		}
		p := fmt.Sprintf("%s, %d proxies", mode, n)
		time.Sleep(cfg.settle)
		// The rollout's controller looks at its canaries every 250 ms,
		// baking or not: what that costs with nothing to roll out.
		c0, ti := s.cpu(), time.Now()
		time.Sleep(cfg.settle)
		res.add(sc, p+": server CPU with the fleet idle, share of one core", "%", kind,
			100*(s.cpu()-c0)/time.Since(ti).Seconds())

		var toCanaries, canariesToAll, toAll, promote, early, connected, cpu, mb []float64
		for rep := 0; rep < cfg.rolloutChanges; rep++ {
			if staged {
				if st, err := s.rollout(); err != nil {
					return err
				} else if st.Stage != "idle" {
					res.note("%s, %s: before change %d the rollout was %s (candidate %s: %s)", kind, p, g+1, st.Stage, st.Candidate, st.Reason)
				}
			}
			g++
			r, err := push(cfg, s, f, g, n, 0)
			if err != nil {
				return fmt.Errorf("rollout push %d at %d proxies: %w", g, n, err)
			}
			acks := f.Tracker.ProxyAcks(g)
			var lastCanary time.Time
			seen := 0
			for _, a := range acks {
				if a.ID < n && canary[a.ID] {
					seen++
					if a.Ack.After(lastCanary) {
						lastCanary = a.Ack
					}
				}
			}
			if seen != nCanary {
				return fmt.Errorf("rollout push %d at %d proxies: %d of the %d canaries ACKed", g, n, seen, nCanary)
			}
			line := fmt.Sprintf("    change %d: → all %v, server cpu %.2fs, load generator cpu %.2fs, %.2f MB",
				g, r.allFromTrigger.Round(time.Millisecond), r.cpu, r.loadgenCPU, float64(r.bytes)/1e6)
			if nCanary > 0 {
				tc := lastCanary.Sub(r.trigger)
				toCanaries = append(toCanaries, ms(tc))
				canariesToAll = append(canariesToAll, ms(r.allFromTrigger-tc))
				line += fmt.Sprintf("; → %d canaries ACKed %v", nCanary, tc.Round(time.Millisecond))
			}
			toAll = append(toAll, ms(r.allFromTrigger))
			cpu = append(cpu, r.cpu)
			mb = append(mb, float64(r.bytes)/1e6)
			if staged {
				st, err := s.rollout()
				if err != nil {
					return err
				}
				promotedAt, perr := time.Parse(time.RFC3339Nano, st.Since)
				if st.Stage != "idle" || st.Candidate != "" || perr != nil {
					res.note("%s, %s: after change %d every proxy ACKed but the rollout is %s since %q (candidate %q: %s)",
						kind, p, g, st.Stage, st.Since, st.Candidate, st.Reason)
				} else {
					// Who got the change before the promotion: the canaries,
					// if the rollout works. "since" is to the millisecond.
					before, strangers := 0, 0
					for _, a := range acks {
						if a.Recv.Before(promotedAt) {
							before++
							if a.ID >= n || !canary[a.ID] {
								strangers++
							}
						}
					}
					if strangers > 0 {
						res.note("%s, %s, change %d: %d proxies that are not canaries by holdfast's hash got the change before its promotion",
							kind, p, g, strangers)
					}
					early = append(early, float64(before))
					line += fmt.Sprintf("; %d got it before the promotion", before)
					if nCanary > 0 {
						promote = append(promote, ms(promotedAt.Sub(lastCanary)))
						line += fmt.Sprintf(", %v after the last canary ACK", promotedAt.Sub(lastCanary).Round(time.Millisecond))
					}
					line += " (" + st.Reason + ")"
				}
				connected = append(connected, float64(st.Canaries.Connected))
			}
			log.Print(line)
			// Longer than holdfast's poll, so that changes stay separate, and
			// random: the last change ended at a rollout check (the
			// promotion), and a fixed pause would put every change at the
			// same point of the controller's 250 ms check cycle.
			time.Sleep(400*time.Millisecond + rand.N(250*time.Millisecond))
		}
		figure := func(metric, unit string, v []float64) {
			if len(v) > 0 {
				res.add(sc, p+": "+metric, unit, kind, median(v))
			} else if rolloutRun {
				res.reserve(sc, p+": "+metric, unit)
			}
		}
		c := fmt.Sprintf("%d canaries", nCanary)
		if nCanary == 0 && staged {
			res.note("%s, %s: no proxy is a canary by holdfast's hash at %d%%: with the rollout, a change goes to everyone after the bake time",
				kind, p, cfg.rolloutPercent)
		}
		figure("change → all "+c+" ACKed (rollout off: the same proxies)", "ms", toCanaries)
		figure("all "+c+" ACKed → all proxies ACKed", "ms", canariesToAll)
		figure("change → all proxies ACKed", "ms", toAll)
		figure("last canary ACK → promotion (/debug/rollout since)", "ms", promote)
		figure("proxies that got the change before its promotion", "count", early)
		figure("canaries connected, as /debug/rollout counts them", "count", connected)
		figure("server CPU per change", "s", cpu)
		res.add(sc, p+": bytes received per change", "MB", kind, median(mb))
		checkHoldings(res, f, cfg, kind, fmt.Sprintf("rollout %s, after changes at %d proxies", mode, n), g)
	}
	if staged {
		promoted, _ := s.metric("holdfast_rollout_promotions_total")
		held, _ := s.metric("holdfast_rollout_holds_total")
		log.Printf("    rollout %s: %d changes, %.0f promotions, %.0f holds", mode, g, promoted, held)
		if int(promoted) != g || held != 0 {
			res.note("%s, rollout %s: %d changes, but holdfast counted %.0f promotions and %.0f holds", kind, mode, g, promoted, held)
		}
	}
	withdrawn(res, f, sc, mode+", all sizes", kind)
	return nil
}
