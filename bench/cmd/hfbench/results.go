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
	Values   map[string]float64
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
			x.Values[kind] = v
			return
		}
	}
	r.Rows = append(r.Rows, &row{Scenario: scenario, Metric: metric, Unit: unit, Values: map[string]float64{kind: v}})
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
	b.WriteString("| scenario | metric | unit | holdfast | go-control-plane | holdfast / go-control-plane |\n")
	b.WriteString("|---|---|---|---:|---:|---:|\n")
	rank := map[string]int{"fan-out": 0, "memory": 1, "connect": 2, "connect storm": 3, "endpoint churn": 4, "slow proxies": 5}
	rows := append([]*row(nil), r.Rows...)
	sort.SliceStable(rows, func(i, j int) bool { return rank[rows[i].Scenario] < rank[rows[j].Scenario] })
	for _, x := range rows {
		hf, okh := x.Values[kindHoldfast]
		gc, okg := x.Values[kindPeer]
		cell := func(v float64, ok bool) string {
			if !ok {
				return "—"
			}
			return fmtVal(v)
		}
		ratio := "—"
		if okh && okg && gc != 0 {
			ratio = fmt.Sprintf("%.2f", hf/gc)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", x.Scenario, x.Metric, x.Unit, cell(hf, okh), cell(gc, okg), ratio)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes from the run:\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}
