package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"holdfast.bench/fleetcfg"
)

const (
	kindHoldfast = "holdfast"
	// holdfast with a staged rollout (--rollout-canary-percent, --rollout-bake
	// from hfbench's flags of the same names): compared with itself, kind
	// holdfast, in the rollout scenario.
	kindHoldfastRollout = "holdfast-rollout"
	// go-control-plane as its README recommends for this workload: endpoints
	// in a LinearCache behind a MuxCache.
	kindPeer = "go-control-plane"
	// go-control-plane with every type in one SnapshotCache.
	kindPeerSnapshot = "go-control-plane-snapshot"
	// java-control-plane (javapeer): its V3DiscoveryServer over its SimpleCache,
	// on grpc-java's Netty transport, in a JVM.
	kindJava = "java-control-plane"
	// The floor (bench/floor, xds_floor): ADS on holdfast's gRPC library that
	// only pushes pre-encoded responses and counts ACKs.
	kindFloor = "floor"
)

// server is one server under test, started for one scenario.
type server struct {
	kind    string
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
	xds     string // 127.0.0.1:PORT
	admin   string
	dir     string // holdfast's config directory
	params  fleetcfg.Params
	logPath string
	client  http.Client

	prepared map[int][][]byte // holdfast: rendered endpoint files by generation
}

var serverSeq int

// isHoldfast: the kinds that run the holdfast binary (config files, admin
// metrics).
func isHoldfast(kind string) bool { return kind == kindHoldfast || kind == kindHoldfastRollout }

// startServer starts a server of the given kind serving params at
// generation 0 and waits until it is ready.
func startServer(cfg *config, kind string, params fleetcfg.Params, label string) (*server, error) {
	serverSeq++
	work := filepath.Join(cfg.outDir, "work", fmt.Sprintf("%02d-%s-%s", serverSeq, label, shortKind(kind)))
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	s := &server{kind: kind, params: params, exited: make(chan struct{}),
		logPath: filepath.Join(work, "server.log"), client: http.Client{Timeout: 30 * time.Second}}
	portsFile := filepath.Join(work, "ports.json")
	switch kind {
	case kindHoldfast, kindHoldfastRollout:
		s.dir = filepath.Join(work, "xds")
		if cfg.xdsRoot != "" {
			s.dir = filepath.Join(cfg.xdsRoot, filepath.Base(work))
		}
		if err := params.WriteDir(s.dir); err != nil {
			return nil, err
		}
		// A state directory of its own (last-known-good snapshot; with a
		// rollout, the stable snapshot too): the default, ./holdfast-state,
		// would carry one server's snapshots into the next one's start.
		s.cmd = exec.Command(cfg.holdfastBin, "serve", "--xds-dir", s.dir,
			"--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--ports-file", portsFile,
			"--state-dir", filepath.Join(work, "state"))
		if kind == kindHoldfastRollout {
			s.cmd.Args = append(s.cmd.Args, "--rollout-canary-percent", strconv.Itoa(cfg.rolloutPercent),
				"--rollout-bake", cfg.rolloutBake)
		}
		s.cmd.Args = append(s.cmd.Args, cfg.holdfastArgs...)
	case kindPeer, kindPeerSnapshot:
		cache := "linear"
		if kind == kindPeerSnapshot {
			cache = "snapshot"
		}
		s.cmd = exec.Command(cfg.peerBin, "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
			"--ports-file", portsFile, "--cache", cache,
			"--clusters", strconv.Itoa(params.Clusters), "--routes", strconv.Itoa(params.Routes),
			"--endpoints", strconv.Itoa(params.EndpointsPerCluster), "--listeners", strconv.Itoa(params.Listeners))
	case kindJava:
		// The JVM is the server process: java execs in place, so the PID
		// whose CPU and RSS are read is the JVM's.
		args := append(append([]string(nil), cfg.javaOpts...), "-jar", cfg.javaPeerJar,
			"--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
			"--ports-file", portsFile, "--cache", "snapshot",
			"--clusters", strconv.Itoa(params.Clusters), "--routes", strconv.Itoa(params.Routes),
			"--endpoints", strconv.Itoa(params.EndpointsPerCluster), "--listeners", strconv.Itoa(params.Listeners))
		s.cmd = exec.Command(cfg.javaBin, args...)
	case kindFloor:
		s.cmd = exec.Command(cfg.floorBin, "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
			"--ports-file", portsFile,
			"--clusters", strconv.Itoa(params.Clusters), "--routes", strconv.Itoa(params.Routes),
			"--endpoints", strconv.Itoa(params.EndpointsPerCluster), "--listeners", strconv.Itoa(params.Listeners))
	default:
		return nil, fmt.Errorf("unknown server kind %q", kind)
	}
	if cfg.serverCPU != "" { // the same CPUs for every server
		s.cmd = exec.Command("taskset", append([]string{"-c", cfg.serverCPU}, s.cmd.Args...)...)
	}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(120 * time.Second)
	for {
		if err := s.alive(); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(portsFile)
		if err == nil {
			var ports struct{ Xds, Admin int }
			if json.Unmarshal(data, &ports) == nil && ports.Xds > 0 {
				s.xds = fmt.Sprintf("127.0.0.1:%d", ports.Xds)
				s.admin = fmt.Sprintf("127.0.0.1:%d", ports.Admin)
				break
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s did not write %s within 120 s (log %s)", kind, portsFile, s.logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		if err := s.alive(); err != nil {
			return nil, err
		}
		resp, err := s.client.Get("http://" + s.admin + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s not ready within 120 s (log %s)", kind, s.logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func shortKind(kind string) string {
	switch kind {
	case kindPeer:
		return "gcp"
	case kindPeerSnapshot:
		return "gcps"
	case kindJava:
		return "jcp"
	case kindFloor:
		return "floor"
	case kindHoldfastRollout:
		return "hfr"
	}
	return "hf"
}

// alive returns an error if the server has exited.
func (s *server) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%s exited: %v (log %s: %s)", s.kind, s.exitErr, s.logPath, tail(s.logPath, 800))
	default:
		return nil
	}
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return strings.TrimSpace(string(data))
}

// prepare renders holdfast's endpoint files for changes ahead of time, so
// that a change during churn is only file writes (the driver shares the CPU
// with the server). Does nothing for the peers, which render their own.
func (s *server) prepare(gens []int, clusters func(gen int) []int) error {
	if !isHoldfast(s.kind) {
		return nil
	}
	if s.prepared == nil {
		s.prepared = map[int][][]byte{}
	}
	for _, g := range gens {
		cl := clusters(g)
		files := make([][]byte, len(cl))
		for k, i := range cl {
			data, err := s.params.EndpointFile(i, g)
			if err != nil {
				return err
			}
			files[k] = data
		}
		s.prepared[g] = files
	}
	return nil
}

// change sets the given clusters' endpoints to generation gen.
func (s *server) change(gen int, clusters []int) error {
	switch s.kind {
	case kindHoldfast, kindHoldfastRollout:
		if files, ok := s.prepared[gen]; ok && len(files) == len(clusters) {
			delete(s.prepared, gen)
			return fleetcfg.WriteEndpointFiles(s.dir, clusters, files)
		}
		return s.params.WriteEndpoints(s.dir, clusters, gen)
	default:
		ids := make([]string, len(clusters))
		for k, c := range clusters {
			ids[k] = strconv.Itoa(c)
		}
		resp, err := s.client.Post(fmt.Sprintf("http://%s/change?gen=%d&clusters=%s", s.admin, gen,
			strings.Join(ids, ",")), "text/plain", nil)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("peer /change: %s: %s", resp.Status, body)
		}
		return nil
	}
}

var clockTicks = func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100
}()

// cpu returns the server's user+system CPU seconds so far.
func (s *server) cpu() float64 { return procCPU(s.cmd.Process.Pid) }

// selfCPU returns this process's (the load generator's) CPU seconds.
func selfCPU() float64 { return procCPU(os.Getpid()) }

func procCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	str := string(data)
	i := strings.LastIndexByte(str, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(str[i+1:])
	// After the command: state(3) ... utime(14) stime(15), 1-based over the whole line.
	if len(f) < 13 {
		return -1
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// rss returns the server's resident set size in bytes.
func (s *server) rss() int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmRSS:") {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 {
				kb, _ := strconv.ParseInt(fs[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return -1
}

// bytesSent returns holdfast's own count of xDS bytes sent (all types), or
// false for the peers, which have no such metric.
func (s *server) bytesSent() (float64, bool) {
	return s.metric("holdfast_xds_bytes_sent_total")
}

// metric returns the sum of holdfast's series of metric name (every label
// set), or false if there is none (and for the peers).
func (s *server) metric(name string) (float64, bool) {
	if !isHoldfast(s.kind) {
		return 0, false
	}
	resp, err := s.client.Get("http://" + s.admin + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var total float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			fs := strings.Fields(line)
			if v, err := strconv.ParseFloat(fs[len(fs)-1], 64); err == nil {
				total += v
				found = true
			}
		}
	}
	return total, found
}

// rolloutState is what holdfast's /debug/rollout says (the fields the
// rollout scenario reads).
type rolloutState struct {
	Stage     string `json:"stage"`
	Stable    string `json:"stable"`
	Candidate string `json:"candidate"`
	Since     string `json:"since"` // when the stage began, RFC 3339 to the millisecond
	Reason    string `json:"reason"`
	Canaries  struct {
		Connected int `json:"connected"`
		Acked     int `json:"acked"`
		Nacked    int `json:"nacked"`
	} `json:"canaries"`
}

// rollout reads holdfast's /debug/rollout (kind holdfast-rollout only).
func (s *server) rollout() (rolloutState, error) {
	var st rolloutState
	resp, err := s.client.Get("http://" + s.admin + "/debug/rollout")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("/debug/rollout: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("/debug/rollout: %w", err)
	}
	return st, nil
}

// stop ends the server (SIGTERM, then SIGKILL after 10 s).
func (s *server) stop() {
	if s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	if s.kind == kindFloor { // its counts of requests, ACKs and NACKs, for the log
		if resp, err := s.client.Get("http://" + s.admin + "/stats"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			log.Printf("    floor counts: %s", strings.TrimSpace(string(body)))
		}
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}
