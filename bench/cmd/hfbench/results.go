package main

import (
	"fmt"
	"log"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// row is one figure measured on each server.
type row struct {
	Scenario string
	Metric   string
	Unit     string
	Values   map[string][]float64 // by server, one per run
}

// median of the runs, and whether there were any.
func (x *row) median(kind string) (float64, bool) {
	v := append([]float64(nil), x.Values[kind]...)
	if len(v) == 0 {
		return 0, false
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// cell shows the median, and the range when there were several runs.
func (x *row) cell(kind string) string {
	m, ok := x.median(kind)
	if !ok {
		return "—"
	}
	v := x.Values[kind]
	if len(v) == 1 {
		return fmtVal(m)
	}
	lo, hi := v[0], v[0]
	for _, y := range v {
		lo, hi = math.Min(lo, y), math.Max(hi, y)
	}
	return fmt.Sprintf("%s (%s–%s)", fmtVal(m), fmtVal(lo), fmtVal(hi))
}

type results struct {
	mu    sync.Mutex
	Rows  []*row
	Notes []string
}

func (r *results) add(scenario, metric, unit, kind string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	log.Printf("    %s | %s: %s %s", kind, metric, fmtVal(v), unit)
	for _, x := range r.Rows {
		if x.Scenario == scenario && x.Metric == metric {
			x.Values[kind] = append(x.Values[kind], v)
			return
		}
	}
	r.Rows = append(r.Rows, &row{Scenario: scenario, Metric: metric, Unit: unit,
		Values: map[string][]float64{kind: {v}}})
}

// reserve adds a row with no figures yet, if there is none: a figure that
// only some servers have keeps its place among the others'.
func (r *results) reserve(scenario, metric, unit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.Rows {
		if x.Scenario == scenario && x.Metric == metric {
			return
		}
	}
	r.Rows = append(r.Rows, &row{Scenario: scenario, Metric: metric, Unit: unit, Values: map[string][]float64{}})
}

func (r *results) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtVal(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func (r *results) markdown(cfg *config) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "\nConfiguration: %d clusters (EDS, %d endpoints each), %d routes in 1 RouteConfiguration, %d listeners.\n\n",
		cfg.params.Clusters, cfg.params.EndpointsPerCluster, cfg.params.Routes, cfg.params.Listeners)
	// One column per server (the median of the runs, and their range), then
	// holdfast's ratio to each other server, of the medians. A ratio of a figure that can be zero or negative (growth)
	// means nothing and is left out.
	// The floor's column, when run, comes first: holdfast's cost beyond the
	// least any server on its gRPC library needs. holdfast with a staged
	// rollout is compared the other way round: holdfast-rollout / holdfast,
	// what the rollout costs. No ratios without holdfast.
	type ratio struct{ num, den string }
	var ratios []ratio
	header := "| scenario | metric | unit |"
	align := "|---|---|---|"
	hasHoldfast := false
	for _, kind := range cfg.servers {
		header += " " + kind + " |"
		align += "---:|"
		switch kind {
		case kindHoldfast:
			hasHoldfast = true
		case kindHoldfastRollout:
			ratios = append(ratios, ratio{kind, kindHoldfast})
		case kindFloor:
			ratios = append([]ratio{{kindHoldfast, kind}}, ratios...)
		default:
			ratios = append(ratios, ratio{kindHoldfast, kind})
		}
	}
	if !hasHoldfast {
		ratios = nil
	}
	for _, q := range ratios {
		header += " " + q.num + " / " + q.den + " |"
		align += "---:|"
	}
	b.WriteString(header + "\n" + align + "\n")
	rank := map[string]int{"fan-out": 0, "memory": 1, "connect": 2, "connect storm": 3, "endpoint churn": 4, "slow proxies": 5,
		"staged rollout": 6}
	rows := append([]*row(nil), r.Rows...)
	sort.SliceStable(rows, func(i, j int) bool { return rank[rows[i].Scenario] < rank[rows[j].Scenario] })
	for _, x := range rows {
		line := fmt.Sprintf("| %s | %s | %s |", x.Scenario, x.Metric, x.Unit)
		for _, kind := range cfg.servers {
			line += " " + x.cell(kind) + " |"
		}
		for _, q := range ratios {
			num, okn := x.median(q.num)
			den, okd := x.median(q.den)
			if okn && okd && den > 0 && num >= 0 {
				line += fmt.Sprintf(" %.2f |", num/den)
			} else {
				line += " — |"
			}
		}
		b.WriteString(line + "\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes from the run:\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}
