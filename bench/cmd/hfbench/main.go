// Command hfbench runs holdfast's fleet benchmarks: each scenario against
// holdfast and then against peers serving the same resources (go-control-plane
// in hfpeer; java-control-plane in javapeer, if selected) in the same
// invocation, with the same simulated proxies, and prints a markdown table
// of the figures and holdfast's ratio to each peer. The floor (xds_floor, if
// selected) is the least a server on holdfast's gRPC library can do; holdfast's
// ratio to it is what holdfast costs beyond that. The rollout scenario
// compares holdfast with itself under a staged rollout (server kind
// holdfast-rollout; its ratio is holdfast-rollout / holdfast).
//
//	hfbench suite [--quick] --holdfast BIN --peer BIN [--javapeer JAR] [--floor BIN] [--out DIR] [flags]
//	hfbench gen --dir DIR [--clusters N ...]   write holdfast's config files
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"holdfast.bench/fleetcfg"
)

type config struct {
	quick        bool
	holdfastBin  string
	holdfastArgs []string
	xdsRoot      string // where holdfast's config directories go (tmpfs)
	peerBin      string
	javaPeerJar  string   // javapeer.jar (kind java-control-plane)
	javaBin      string   // the java launcher
	javaOpts     []string // JVM options for javapeer
	floorBin     string   // xds_floor (kind floor)
	outDir       string
	servers      []string
	scenarios    []string
	repeat       int    // runs of every scenario; the order of servers alternates
	serverCPU    string // taskset CPU list for the servers ("" : not pinned)
	params       fleetcfg.Params

	dialBatch   int
	waitTimeout time.Duration
	settle      time.Duration

	fanoutSizes     []int
	fanoutModes     []string
	fanoutReps      int
	fanoutRepsLarge int

	stormProxies int

	churnProxies  int
	churnDuration time.Duration
	churnInterval time.Duration
	churnFrac     float64
	churnModes    []string

	slowProxies int
	slowFrac    float64
	slowPushes  int

	rolloutSizes   []int
	rolloutModes   []string
	rolloutChanges int
	rolloutPercent int    // holdfast-rollout's --rollout-canary-percent
	rolloutBake    string // holdfast-rollout's --rollout-bake
}

// defaultJavaOpts: G1 (the JVM's default collector here, named so that it
// stays so), a 4 GiB heap ceiling, and heap free ratios low enough that the
// System.gc() javapeer runs after a quiet second gives the freed heap back
// to the OS, as hfpeer's debug.FreeOSMemory and holdfast's malloc_trim do.
const defaultJavaOpts = "-XX:+UseG1GC -Xmx4g -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=20"

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func strList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hfbench suite|gen [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "suite":
		suite(os.Args[2:])
	case "gen":
		gen(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

func paramFlags(fs *flag.FlagSet, p *fleetcfg.Params) {
	fs.IntVar(&p.Clusters, "clusters", 1000, "EDS clusters (each with its ClusterLoadAssignment)")
	fs.IntVar(&p.Routes, "routes", 1000, "routes in the one RouteConfiguration")
	fs.IntVar(&p.EndpointsPerCluster, "endpoints", 3, "endpoints per cluster")
	fs.IntVar(&p.Listeners, "listeners", 2, "listeners (HCM over RDS/ADS + router)")
}

func gen(args []string) {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	var p fleetcfg.Params
	paramFlags(fs, &p)
	dir := fs.String("dir", "", "directory to write")
	_ = fs.Parse(args)
	if *dir == "" {
		log.Fatal("--dir is required")
	}
	if err := p.WriteDir(*dir); err != nil {
		log.Fatal(err)
	}
}

func suite(args []string) {
	fs := flag.NewFlagSet("suite", flag.ExitOnError)
	cfg := &config{}
	fs.BoolVar(&cfg.quick, "quick", false, "quick profile: smaller fleets and shorter churn (see the defaults below)")
	fs.StringVar(&cfg.holdfastBin, "holdfast", "", "holdfast binary")
	fs.StringVar(&cfg.peerBin, "peer", "", "hfpeer binary")
	fs.StringVar(&cfg.javaPeerJar, "javapeer", "", "javapeer.jar (server "+kindJava+")")
	fs.StringVar(&cfg.javaBin, "java", "java", "java launcher for javapeer")
	fs.StringVar(&cfg.floorBin, "floor", "", "xds_floor binary (server "+kindFloor+")")
	javaOpts := fs.String("java-opts", defaultJavaOpts, "JVM options for javapeer, space-separated")
	fs.StringVar(&cfg.outDir, "out", "", "directory for logs, work files and results (default: a new temp dir)")
	fs.Func("holdfast-arg", "extra argument for `holdfast serve` (repeatable)", func(v string) error {
		cfg.holdfastArgs = append(cfg.holdfastArgs, v)
		return nil
	})
	xdsRoot := fs.String("xds-root", "/dev/shm", "parent of holdfast's config directories: a tmpfs, so that writing a change costs what handing it to the peer costs (empty: under --out)")
	servers := fs.String("servers", kindHoldfast+","+kindPeer+","+kindPeerSnapshot, "servers, in order")
	scenarios := fs.String("scenarios", "fanout,storm,churn,slow", "scenarios, in order (fanout includes memory); also rollout (servers "+kindHoldfast+" and "+kindHoldfastRollout+")")
	fs.IntVar(&cfg.repeat, "repeat", 3, "runs of each scenario (servers in alternating order); the table shows the median and min-max")
	fs.StringVar(&cfg.serverCPU, "server-cpu", "", "pin the servers to these CPUs (taskset -c LIST) and this driver, the load generator, to the others")
	paramFlags(fs, &cfg.params)
	fs.IntVar(&cfg.dialBatch, "dial-batch", 1000, "connections being set up at once (somaxconn is 4096)")
	fs.DurationVar(&cfg.waitTimeout, "timeout", 5*time.Minute, "longest wait for a fleet to converge")
	fs.DurationVar(&cfg.settle, "settle", 3*time.Second, "pause before memory readings")
	fanout := fs.String("fanout-proxies", "", "fleet sizes for the push fan-out (and memory) scenario; default 1000,10000, quick 1000")
	fanoutModes := fs.String("fanout-modes", "sotw,delta", "protocol variants for fan-out and memory")
	fs.IntVar(&cfg.fanoutReps, "fanout-reps", 3, "changes per fleet size up to 1000 proxies (median reported)")
	fs.IntVar(&cfg.fanoutRepsLarge, "fanout-reps-large", 1, "changes per fleet size above 1000 proxies")
	fs.IntVar(&cfg.stormProxies, "storm-proxies", 0, "proxies in the connect storm; 0: 5000, quick 2000")
	fs.IntVar(&cfg.churnProxies, "churn-proxies", 0, "proxies during endpoint churn; 0: 1000, quick 200")
	fs.DurationVar(&cfg.churnDuration, "churn-duration", 0, "churn duration; 0: 60s, quick 10s")
	fs.DurationVar(&cfg.churnInterval, "churn-interval", 100*time.Millisecond, "time between churn changes")
	fs.Float64Var(&cfg.churnFrac, "churn-frac", 0.1, "fraction of clusters changed per churn step")
	churnModes := fs.String("churn-modes", "sotw,delta", "protocol variants for churn")
	fs.IntVar(&cfg.slowProxies, "slow-proxies", 0, "proxies in the slow-proxy scenario (SotW); 0: 2000, quick 500")
	fs.Float64Var(&cfg.slowFrac, "slow-frac", 0.01, "fraction of those that stop reading")
	fs.IntVar(&cfg.slowPushes, "slow-pushes", 0, "changes measured with and without stalled proxies; 0: 5, quick 3")
	rolloutSizes := fs.String("rollout-proxies", "", "fleet sizes for the rollout scenario; default 1000,10000, quick 1000")
	rolloutModes := fs.String("rollout-modes", "sotw,delta", "protocol variants for the rollout scenario")
	fs.IntVar(&cfg.rolloutChanges, "rollout-changes", 3, "changes per fleet size in the rollout scenario (median reported)")
	fs.IntVar(&cfg.rolloutPercent, "rollout-canary-percent", 1, "server "+kindHoldfastRollout+": holdfast's --rollout-canary-percent")
	fs.StringVar(&cfg.rolloutBake, "rollout-bake", "1ms", "server "+kindHoldfastRollout+": holdfast's --rollout-bake (holdfast wants a positive duration)")
	cpuProfile := fs.String("cpuprofile", "", "write the load generator's (this process's) CPU profile to this file")
	_ = fs.Parse(args)

	var err error
	if *cpuProfile != "" {
		out, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if *fanout == "" {
		*fanout = "1000,10000"
		if cfg.quick {
			*fanout = "1000"
		}
	}
	if cfg.fanoutSizes, err = intList(*fanout); err != nil {
		log.Fatalf("--fanout-proxies: %v", err)
	}
	sort.Ints(cfg.fanoutSizes)
	if *rolloutSizes == "" {
		*rolloutSizes = "1000,10000"
		if cfg.quick {
			*rolloutSizes = "1000"
		}
	}
	if cfg.rolloutSizes, err = intList(*rolloutSizes); err != nil {
		log.Fatalf("--rollout-proxies: %v", err)
	}
	sort.Ints(cfg.rolloutSizes)
	cfg.rolloutModes = strList(*rolloutModes)
	if cfg.rolloutPercent < 1 || cfg.rolloutPercent > 100 {
		log.Fatalf("--rollout-canary-percent %d: want 1 to 100", cfg.rolloutPercent)
	}
	cfg.javaOpts = strings.Fields(*javaOpts)
	cfg.servers = strList(*servers)
	cfg.scenarios = strList(*scenarios)
	cfg.churnModes = strList(*churnModes)
	cfg.fanoutModes = strList(*fanoutModes)
	pick := func(v *int, full, quick int) {
		if *v == 0 {
			*v = full
			if cfg.quick {
				*v = quick
			}
		}
	}
	pick(&cfg.stormProxies, 5000, 2000)
	pick(&cfg.churnProxies, 1000, 200)
	pick(&cfg.slowProxies, 2000, 500)
	pick(&cfg.slowPushes, 5, 3)
	if cfg.churnDuration == 0 {
		cfg.churnDuration = 60 * time.Second
		if cfg.quick {
			cfg.churnDuration = 10 * time.Second
		}
	}
	if cfg.outDir == "" {
		if cfg.outDir, err = os.MkdirTemp("", "hfbench-"); err != nil {
			log.Fatal(err)
		}
	}
	if err := os.MkdirAll(cfg.outDir, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, s := range cfg.servers {
		switch s {
		case kindHoldfast, kindHoldfastRollout:
			if cfg.holdfastBin == "" {
				log.Fatal("--holdfast is required")
			}
		case kindPeer, kindPeerSnapshot:
			if cfg.peerBin == "" {
				log.Fatal("--peer is required")
			}
		case kindJava:
			if cfg.javaPeerJar == "" {
				log.Fatalf("--javapeer is required for %s", kindJava)
			}
		case kindFloor:
			if cfg.floorBin == "" {
				log.Fatalf("--floor is required for %s", kindFloor)
			}
		default:
			log.Fatalf("unknown server %q (want %s, %s, %s, %s, %s or %s)", s, kindHoldfast,
				kindHoldfastRollout, kindPeer, kindPeerSnapshot, kindJava, kindFloor)
		}
	}
	if *xdsRoot != "" {
		if st, err := os.Stat(*xdsRoot); err == nil && st.IsDir() {
			cfg.xdsRoot, err = os.MkdirTemp(*xdsRoot, "hfbench-")
			if err != nil {
				log.Fatal(err)
			}
			defer os.RemoveAll(cfg.xdsRoot)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			go func() {
				<-sig
				os.RemoveAll(cfg.xdsRoot)
				os.Exit(1)
			}()
		} else {
			log.Printf("%s is not a directory: holdfast's config goes under %s", *xdsRoot, cfg.outDir)
		}
	}
	// The fleet holds one connection per proxy; servers started from here
	// inherit the raised limit too.
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		rl.Cur = rl.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		log.Printf("open files limit %d", rl.Cur)
	}
	// The load generator allocates a lot of short-lived buffers; trade
	// memory for less of its CPU time competing with the server's.
	debug.SetGCPercent(200)
	debug.SetMemoryLimit(6 << 30)

	res := &results{}
	start := time.Now()
	res.note("load average at start: %s", loadavg())
	pinDriver(cfg)
	for rep := 0; rep < cfg.repeat; rep++ {
		order := append([]string(nil), cfg.servers...)
		if rep%2 == 1 { // alternate, so that no server always runs first (or last)
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		}
		log.Printf("##### run %d of %d: %s", rep+1, cfg.repeat, strings.Join(order, ", "))
		runScenarios(cfg, res, order)
	}
	res.note("load average at end: %s; total wall time %s", loadavg(), time.Since(start).Round(time.Second))

	md := res.markdown(cfg)
	fmt.Print(md)
	_ = os.WriteFile(filepath.Join(cfg.outDir, "results.md"), []byte(md), 0o644)
	raw, _ := json.MarshalIndent(res, "", "  ")
	_ = os.WriteFile(filepath.Join(cfg.outDir, "results.json"), raw, 0o644)
	log.Printf("results in %s", cfg.outDir)
}

// loadavg returns /proc/loadavg's first three fields: other work on the
// machine shows here.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// runScenarios runs every scenario once on every server, in `order`.
func runScenarios(cfg *config, res *results, order []string) {
	for _, sc := range cfg.scenarios {
		for _, kind := range order {
			log.Printf("=== %s: %s", sc, kind)
			var err error
			switch sc {
			case "fanout":
				for _, m := range cfg.fanoutModes {
					if e := runFanout(cfg, res, kind, m); e != nil && err == nil {
						err = e
					}
				}
			case "storm":
				err = runStorm(cfg, res, kind)
			case "churn":
				for _, m := range cfg.churnModes {
					if e := runChurn(cfg, res, kind, m); e != nil && err == nil {
						err = e
					}
				}
			case "slow":
				err = runSlow(cfg, res, kind)
			case "rollout":
				if !isHoldfast(kind) { // the peers have no staged rollout
					log.Printf("    rollout: skipped on %s (no staged rollout to compare)", kind)
					continue
				}
				for _, m := range cfg.rolloutModes {
					if e := runRollout(cfg, res, kind, m); e != nil && err == nil {
						err = e
					}
				}
			default:
				err = fmt.Errorf("unknown scenario %q", sc)
			}
			if err != nil {
				log.Printf("!!! %s on %s: %v", sc, kind, err)
				res.note("%s on %s failed: %v", sc, kind, err)
			}
			runtime.GC()
		}
	}
}

// pinDriver keeps this process (the load generator) off the servers' CPUs.
func pinDriver(cfg *config) {
	if cfg.serverCPU == "" {
		return
	}
	servers, err := cpuSet(cfg.serverCPU)
	if err != nil {
		log.Fatalf("--server-cpu: %v", err)
	}
	var rest []string
	for c := 0; c < runtime.NumCPU(); c++ {
		if !servers[c] {
			rest = append(rest, strconv.Itoa(c))
		}
	}
	if len(rest) == 0 {
		log.Fatalf("--server-cpu %s leaves no CPU for the load generator", cfg.serverCPU)
	}
	// -a: every thread of this process, the Go runtime's included.
	out, err := exec.Command("taskset", "-a", "-p", "-c", strings.Join(rest, ","),
		strconv.Itoa(os.Getpid())).CombinedOutput()
	if err != nil {
		log.Fatalf("taskset: %v: %s", err, out)
	}
	runtime.GOMAXPROCS(len(rest))
	log.Printf("servers pinned to CPUs %s, load generator to %s", cfg.serverCPU, strings.Join(rest, ","))
}

// cpuSet parses a taskset CPU list: "0", "0,2", "0-1".
func cpuSet(list string) (map[int]bool, error) {
	set := map[int]bool{}
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, err
			}
		}
		for c := a; c <= b; c++ {
			set[c] = true
		}
	}
	return set, nil
}
