package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tmux/tmuxtest"
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
	cm := shortDirTB(b) // a socket path must stay short
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
			a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return bh.env[k] }}
			if err := a.setup(); err != nil {
				b.Fatal(err)
			}
			defer a.close()
			h, err := a.remoteHost("h1")
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
				var hw hostWake
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
