package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/remote"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/mcpserver"
	"github.com/system3-dev/system3/tmux"
)

// benchHosts is N "remote" daemons (each a private tmux server with panes
// panes and its own state dir and monitors) behind one real sshd on
// loopback, and a local daemon whose config names them h1..hN. With
// shared, the hosts' ssh options turn on connection sharing
// (ControlMaster), as docs/remote.md advises.
type benchHosts struct {
	env     map[string]string
	remotes []tmux.Server
	local   tmux.Server
}

func newBenchHosts(b testing.TB, n, panes int, shared bool) *benchHosts {
	ssh := startSSHD(b)
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	bh := &benchHosts{}
	cm := testkit.ShortDir(b) // a socket path must stay short
	body := "hosts:\n"
	for i := range n {
		srv := tmuxtest.NewServer(b, "sleep", "600")
		c := tmux.NewClient(srv)
		for p := range panes {
			if _, err := c.NewSession(context.Background(), tmux.NewSessionOptions{Name: fmt.Sprintf("s%02d", p), Width: 100, Height: 30, Command: []string{"sleep", "600"}}); err != nil {
				b.Fatal(err)
			}
		}
		env := serveMonitors(b, srv, b.TempDir())
		bh.remotes = append(bh.remotes, srv)
		opts := "[-F, " + ssh.config
		if shared {
			opts += fmt.Sprintf(", -o, ControlMaster=auto, -o, 'ControlPath=%s/%%C', -o, ControlPersist=120", cm)
		}
		body += fmt.Sprintf("  h%d:\n    ssh: remote\n    system3: %s\n    state_dir: %s\n    ssh_options: %s]\n", i+1, self, env["SYSTEM3_STATE_DIR"], opts)
	}
	if shared {
		// The shared connection outlives its ssh clients by
		// ControlPersist: end it, so the sshd it holds can stop.
		b.Cleanup(func() {
			_ = exec.Command("ssh", "-F", ssh.config, "-o", "ControlPath="+cm+"/%C", "-O", "exit", "remote").Run()
		})
	}
	bh.local = tmuxtest.NewServer(b, "sleep", "600")
	bh.env = serveMonitors(b, bh.local, b.TempDir())
	cfg := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	bh.env["SYSTEM3_CONFIG"] = cfg
	return bh
}

func benchN(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkHostsStatusAllHosts measures `status --all-hosts --json` with
// SYSTEM3_BENCH_HOSTS remote daemons (default 4) of 10 panes each,
// through one loopback sshd, with and without ssh connection sharing.
//
//	go test -run '^$' -bench HostsStatusAllHosts -benchtime 20x ./cmd/system3/
func BenchmarkHostsStatusAllHosts(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("controlmaster=%v", shared), func(b *testing.B) {
			n := benchN("SYSTEM3_BENCH_HOSTS", 4)
			bh := newBenchHosts(b, n, 10, shared)
			status := func() time.Duration {
				start := time.Now()
				code, out, errOut := invokeStdin(bh.env, "", "status", "--all-hosts", "--json")
				took := time.Since(start)
				var doc hostsStatusDoc
				if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
					b.Fatalf("status --all-hosts: exit %d: %s", code, errOut)
				}
				for _, h := range doc.Hosts {
					if h.State != "connected" {
						b.Fatalf("host %s: %s", h.Name, h.Error)
					}
				}
				if len(doc.Hosts) != n+1 || len(doc.Sessions) < n*10 {
					b.Fatalf("%d hosts, %d sessions", len(doc.Hosts), len(doc.Sessions))
				}
				return took
			}
			status() // the first opens the ControlMaster
			var took []time.Duration
			b.ResetTimer()
			for b.Loop() {
				took = append(took, status())
			}
			b.StopTimer()
			p50, p95 := percentiles(took)
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
			b.ReportMetric(float64(n), "hosts")
			// What one ssh round trip costs here, for comparison: ssh
			// alone (true), and ssh running this system3 (version).
			a := &app{App: core.App{Stderr: io.Discard, Getenv: func(k string) string { return bh.env[k] }}, stdin: strings.NewReader(""), stdout: io.Discard}
			if err := a.setup(); err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			h, err := a.RemoteHost("h1")
			if err != nil {
				b.Fatal(err)
			}
			for i, cmd := range [][]string{h.SSHArgv("true"), h.System3Argv("version")} {
				start := time.Now()
				if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %v: %s", cmd, err, out)
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/1000, []string{"ssh-true-ms", "ssh-system3-version-ms"}[i])
			}
		})
	}
}

func percentiles(d []time.Duration) (p50, p95 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, (len(s)*95+99)/100-1)]
}

// BenchmarkWakeLatencyOverLink measures, over SYSTEM3_BENCH_PROMPTS
// prompts (default 20), the time from a permission prompt appearing in a
// pane to a blocked `system3 wait --json` returning its wake: on this
// machine (--host local) and on a remote daemon through a loopback sshd
// (--host h1), with ssh connection sharing. Each wait is started, and
// given two seconds to be blocked, before the prompt appears. delivery is
// the part from the wake's time in its journal to the wait returning.
//
//	go test -run '^$' -bench WakeLatencyOverLink -benchtime 1x ./cmd/system3/
func BenchmarkWakeLatencyOverLink(b *testing.B) {
	capture, err := filepath.Abs(filepath.Join("..", "..", "monitor", "testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		b.Fatal(err)
	}
	prompts := benchN("SYSTEM3_BENCH_PROMPTS", 20)
	bh := newBenchHosts(b, 1, 0, true)
	for b.Loop() {
		for _, host := range []string{"local", "h1"} {
			srv := bh.local
			if host != "local" {
				srv = bh.remotes[0]
			}
			c := tmux.NewClient(srv)
			cursor := ""
			var took, delivery []time.Duration
			for i := range prompts {
				type res struct {
					at  time.Time
					out string
				}
				done := make(chan res, 1)
				args := []string{"wait", "--host", host, "--json", "--reason", "awaiting_input", "--timeout", "60s"}
				if cursor != "" {
					args = append(args, "--since", cursor)
				}
				go func() {
					code, out, errOut := invokeStdin(bh.env, "", args...)
					if code != 0 {
						out = fmt.Sprintf("exit %d: %s", code, errOut)
					}
					done <- res{time.Now(), out}
				}()
				time.Sleep(2 * time.Second)
				start := time.Now()
				if _, err := c.NewSession(context.Background(), tmux.NewSessionOptions{Name: fmt.Sprintf("lat-%02d", i), Width: 120, Height: 40,
					Command: []string{"sh", "-c", "cat '" + capture + "'; exec sleep 600"}}); err != nil {
					b.Fatal(err)
				}
				r := <-done
				var hw api.HostWake
				if err := json.Unmarshal([]byte(r.out), &hw); err != nil {
					b.Fatalf("wait --host %s: %s", host, r.out)
				}
				cursor = hw.Cursor
				took = append(took, r.at.Sub(start))
				delivery = append(delivery, r.at.Sub(hw.Time))
			}
			p50, p95 := percentiles(took)
			b.ReportMetric(float64(p50.Milliseconds()), host+"-p50-ms")
			b.ReportMetric(float64(p95.Milliseconds()), host+"-p95-ms")
			p50, p95 = percentiles(delivery)
			b.ReportMetric(float64(p50.Milliseconds()), host+"-delivery-p50-ms")
			b.ReportMetric(float64(p95.Milliseconds()), host+"-delivery-p95-ms")
		}
	}
}

// BenchmarkFollowedHosts is the many-hosts simulation: for 1, 5 and
// SYSTEM3_BENCH_HOSTS (default 20) remote daemons of SYSTEM3_BENCH_PANES
// panes each (default 50), each a private tmux server, state dir and
// monitors behind one real sshd on loopback (ssh connection sharing on),
// this process follows every host (remote.Set.Start: two long-lived ssh
// streams per host) and measures what the links cost while nothing
// happens (CPU of ssh, sshd and the remote relays; ssh processes);
// aggregated status from what the streams said (remote.Set.Report, the
// dashboard's Fleet.Snapshot, MCP status over Streamable HTTP with mcp-go's
// client, each p50/p95 over 100 calls, and `status --all-hosts --json`
// with a local daemon that follows the hosts, over 20 calls); and wake
// latency: SYSTEM3_BENCH_PROMPTS permission prompts (default 20), spread
// over the hosts, from the prompt appearing in a pane to its wake reaching
// this process, and "delivery", from the wake's time in the remote journal
// to here (the link's share).
//
//	go test -run '^$' -bench FollowedHosts -benchtime 1x -timeout 30m ./cmd/system3/
func BenchmarkFollowedHosts(b *testing.B) {
	capture, err := filepath.Abs(filepath.Join("..", "..", "monitor", "testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		b.Fatal(err)
	}
	top := benchN("SYSTEM3_BENCH_HOSTS", 20)
	panes := benchN("SYSTEM3_BENCH_PANES", 50)
	prompts := benchN("SYSTEM3_BENCH_PROMPTS", 20)
	sizes := []int{1, 5, top}
	if top <= 5 {
		sizes = []int{top}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			bh := newBenchHosts(b, n, panes, true)
			a := &app{App: core.App{Stderr: io.Discard, Getenv: func(k string) string { return bh.env[k] }}, stdin: strings.NewReader(""), stdout: io.Discard}
			if err := a.setup(); err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			set := a.HostSet()
			ctx := context.Background()
			testkit.WaitForValue(b, 3*time.Minute, fmt.Sprintf("%d hosts followed (how many are)", n), func() (int, bool) {
				up := 0
				for _, r := range set.Report(ctx) {
					if r.Connected && len(r.Snapshot.Sessions) >= panes {
						up++
					}
				}
				return up, up == n
			}, func() string { return fmt.Sprintf("reports: %+v", set.Report(ctx)) })
			fleet := a.FleetOf(dialDaemon(b, bh.env["SYSTEM3_STATE_DIR"]))
			var opts mcpserver.Options
			a.WithHosts(&opts)
			ms, err := mcpserver.New(fleet, opts)
			if err != nil {
				b.Fatal(err)
			}
			ts := httptest.NewServer(ms.Handler())
			defer func() { ts.CloseClientConnections(); ts.Close(); ms.Close() }()
			mc, err := client.NewStreamableHttpClient(ts.URL + mcpserver.EndpointPath)
			if err != nil {
				b.Fatal(err)
			}
			defer mc.Close()
			mcpStart(b, mc, "bench-hosts")

			// Quiet: what the links cost (the ssh clients, the sshd
			// sessions and the remote relays; the remote monitors run in
			// this process and are not counted).
			cpu0 := linkCPU()
			time.Sleep(10 * time.Second)
			idle := (linkCPU() - cpu0).Seconds() / 10 * 100
			sshProcs := countProcs("ssh")

			timeIt := func(what string, f func()) (p50, p95 time.Duration) {
				var took []time.Duration
				for range 100 {
					start := time.Now()
					f()
					took = append(took, time.Since(start))
				}
				return percentiles(took)
			}
			rp50, rp95 := timeIt("report", func() {
				if rs := set.Report(ctx); len(rs) != n {
					b.Fatalf("%d reports", len(rs))
				}
			})
			fp50, fp95 := timeIt("snapshot", func() {
				s, err := fleet.Snapshot(ctx)
				if err != nil || len(s.Sessions) < n*panes {
					b.Fatalf("fleet snapshot: %d sessions, %v", len(s.Sessions), err)
				}
			})
			mp50, mp95 := timeIt("mcp status", func() {
				out, isErr := callTool(b, mc, "status", nil)
				if isErr || !strings.Contains(out, fmt.Sprintf(`"name":"h%d"`, n)) {
					b.Fatalf("status: %.300s", out)
				}
			})

			// The CLI: status --all-hosts with a local daemon following
			// the hosts (a second one, given the config, in its own state
			// dir).
			denv := followingDaemon(b, bh.env)
			cliStatus := func() (time.Duration, bool) {
				start := time.Now()
				code, out, errOut := invokeStdin(denv, "", "status", "--all-hosts", "--json")
				took := time.Since(start)
				var doc hostsStatusDoc
				if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
					b.Fatalf("status --all-hosts: exit %d: %s", code, errOut)
				}
				followed := 0
				for _, h := range doc.Hosts {
					if h.Source == "followed" && h.State == "connected" {
						followed++
					}
				}
				return took, followed == n && len(doc.Sessions) >= n*panes
			}
			testkit.WaitFor(b, 2*time.Minute, "the second daemon to follow every host", func() bool {
				_, ok := cliStatus()
				return ok
			})
			var cliTook []time.Duration
			for range 20 {
				d, ok := cliStatus()
				if !ok {
					b.Fatal("status --all-hosts lost a followed host")
				}
				cliTook = append(cliTook, d)
			}
			cp50, cp95 := percentiles(cliTook)

			// Wakes: each prompt on the next host, seen here through the
			// followed streams.
			type seen struct {
				at time.Time
				ev api.Wake
			}
			arrived := make(chan seen, 64)
			defer set.Subscribe(func(host string, c remote.Change) {
				if c.Wake != nil && c.Wake.Kind == api.WakeRaised && !c.Wake.Replayed && strings.HasPrefix(c.Wake.Event.Session, "lat-") {
					arrived <- seen{time.Now(), c.Wake.Event}
				}
			})()
			var took, delivery []time.Duration
			for i := range prompts {
				srv := bh.remotes[i%n]
				start := time.Now()
				name := fmt.Sprintf("lat-%02d", i)
				if _, err := tmux.NewClient(srv).NewSession(ctx, tmux.NewSessionOptions{Name: name, Width: 120, Height: 40,
					Command: []string{"sh", "-c", "cat '" + capture + "'; exec sleep 600"}}); err != nil {
					b.Fatal(err)
				}
				select {
				case s := <-arrived:
					if s.ev.Session != name {
						b.Fatalf("wake of %s, want %s", s.ev.Session, name)
					}
					took = append(took, s.at.Sub(start))
					delivery = append(delivery, s.at.Sub(s.ev.Time))
				case <-time.After(30 * time.Second):
					b.Fatalf("prompt %d never reached this process", i)
				}
				time.Sleep(200 * time.Millisecond)
			}
			wp50, wp95 := percentiles(took)
			dp50, dp95 := percentiles(delivery)
			for range b.N {
			}
			ms1 := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(float64(n), "hosts")
			b.ReportMetric(float64(n*panes), "remote-panes")
			b.ReportMetric(float64(sshProcs), "ssh-procs")
			b.ReportMetric(idle, "links-idle-cpu-%")
			b.ReportMetric(ms1(rp50), "report-p50-ms")
			b.ReportMetric(ms1(rp95), "report-p95-ms")
			b.ReportMetric(ms1(fp50), "fleet-snapshot-p50-ms")
			b.ReportMetric(ms1(fp95), "fleet-snapshot-p95-ms")
			b.ReportMetric(ms1(mp50), "mcp-status-p50-ms")
			b.ReportMetric(ms1(mp95), "mcp-status-p95-ms")
			b.ReportMetric(ms1(cp50), "cli-status-p50-ms")
			b.ReportMetric(ms1(cp95), "cli-status-p95-ms")
			b.ReportMetric(ms1(wp50), "wake-p50-ms")
			b.ReportMetric(ms1(wp95), "wake-p95-ms")
			b.ReportMetric(ms1(dp50), "delivery-p50-ms")
			b.ReportMetric(ms1(dp95), "delivery-p95-ms")
		})
	}
}

// linkCPU is the CPU time so far of the processes that carry links: ssh
// clients, sshd and the remote `attach --stdio` relays.
func linkCPU() time.Duration {
	ents, _ := os.ReadDir("/proc")
	var ticks int64
	for _, e := range ents {
		dir := filepath.Join("/proc", e.Name())
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		c := strings.TrimSpace(string(comm))
		if c != "ssh" && c != "sshd" && !strings.Contains(string(cmdline), "attach\x00--stdio") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}

// countProcs counts this user's processes named name.
func countProcs(name string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(b)) == name {
			n++
		}
	}
	return n
}
