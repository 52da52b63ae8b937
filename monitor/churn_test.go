package monitor

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// churnEnv sets how long TestResilienceTmuxChurn runs (a Go duration such
// as "10m"). Unset, it runs churnCycles cycles, which CI does on every tmux
// it tests.
const churnEnv = "SYSTEM3_CHURN_DURATION"

const churnCycles = 25

// churner drives a private tmux server the way scripts and people do while
// system3 watches it, and counts the server's deaths.
type churner struct {
	t      *testing.T
	srv    tmux.Server
	rnd    *rand.Rand
	pid    int
	deaths []string // what was running when the server died
	ops    map[string]int
}

// tmux runs one tmux command line; failures are expected (the targets race
// with kills) and ignored: only the server's survival is judged.
func (c *churner) tmux(args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, tmuxtest.Bin(), append([]string{"-S", c.srv.Path}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// serverPID asks the running server for its pid.
func (c *churner) serverPID() int {
	pid, _ := strconv.Atoi(c.tmux("display-message", "-p", "#{pid}"))
	return pid
}

// alive reports whether the server process that started the test still
// runs (a crashed server is gone at once: tmux is a daemon reaped by init).
func (c *churner) alive() bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c.pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && !bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

// step runs one operation and checks the server outlived it; a dead server
// is counted and started again, so one run counts every death.
func (c *churner) step(name string, op func()) {
	c.ops[name]++
	op()
	if c.alive() {
		return
	}
	c.deaths = append(c.deaths, name)
	c.t.Logf("tmux server %d died during %s (death %d)", c.pid, name, len(c.deaths))
	tmuxtest.Start(c.t, c.srv, "sleep", "100000")
	c.setup()
}

// setup creates the long-lived sessions the churn works on and learns the
// server's pid.
func (c *churner) setup() {
	c.tmux("new-session", "-d", "-s", "stay", "-x", "80", "-y", "24", "sleep 100000")
	c.pid = c.serverPID()
	if c.pid == 0 {
		c.t.Fatal("cannot read the tmux server's pid")
	}
}

func (c *churner) pause(max time.Duration) {
	time.Sleep(time.Duration(c.rnd.Int64N(int64(max))))
}

func (c *churner) cycle(n int) {
	// Sessions created and killed in bursts, as scripts that start and
	// stop orchestrators do: some live long enough for system3 to attach,
	// some die while it attaches.
	c.step("burst", func() {
		k := 1 + c.rnd.IntN(4)
		for i := range k {
			c.tmux("new-session", "-d", "-s", fmt.Sprintf("b%d-%d", n, i), "-x", "80", "-y", "24", "sleep 100000")
		}
		c.pause(300 * time.Millisecond)
		for i := range k {
			c.tmux("kill-session", "-t", fmt.Sprintf("=b%d-%d", n, i))
		}
	})
	// tmux/tmux#5243: select a window and kill its session in one command
	// list, so session-window-changed is notified after the session is gone.
	c.step("select-window+kill-session", func() {
		s := fmt.Sprintf("k%d", n)
		c.tmux("new-session", "-d", "-s", s, "-x", "80", "-y", "24", "sleep 100000")
		c.tmux("new-window", "-d", "-t", "="+s+":", "sleep 100000")
		c.pause(300 * time.Millisecond)
		c.tmux("select-window", "-t", "="+s+":1", ";", "kill-session", "-t", "="+s)
	})
	// run-shell in its forms (tmux/tmux#5570 and relatives): output to the
	// command client, to a pane in view mode, delayed, and with the
	// invoking client gone before the job ends.
	c.step("run-shell", func() {
		c.tmux("run-shell", "echo churn")
		c.tmux("run-shell", "-b", "echo churn in the background")
		c.tmux("run-shell", "-t", "=stay:", "echo churn into a pane")
		c.tmux("run-shell", "-d", "0.05", "echo churn later")
		s := fmt.Sprintf("r%d", n)
		c.tmux("new-session", "-d", "-s", s, "sleep 100000", ";", "run-shell", "-b", "sleep 0.1; echo gone", ";", "kill-session", "-t", "="+s)
		c.tmux("send-keys", "-t", "=stay:", "-X", "cancel") // leave view mode
	})
	c.step("rename-session", func() {
		c.tmux("rename-session", "-t", "=stay", "stay-renamed")
		c.pause(100 * time.Millisecond)
		c.tmux("rename-session", "-t", "=stay-renamed", "stay")
	})
	c.step("split+kill-pane", func() {
		p := c.tmux("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "=stay:", "sleep 100000")
		c.pause(200 * time.Millisecond)
		if strings.HasPrefix(p, "%") {
			c.tmux("kill-pane", "-t", p)
		}
	})
	// tmux/tmux#5551: popups shown on a control client (system3's are the
	// only clients attached here), twice, the second with a border change.
	c.step("display-popup", func() {
		for _, name := range strings.Fields(c.tmux("list-clients", "-F", "#{client_name}")) {
			c.tmux("display-popup", "-c", name, "-w", "20", "-h", "5", "-E", "sleep 0.2")
			c.tmux("display-popup", "-c", name, "-B", "-w", "20", "-h", "5", "-E", "true")
		}
	})
}

// TestResilienceTmuxChurn churns a private tmux server while system3's
// monitors watch it: sessions created and killed in bursts, a window
// selected and its session killed in one command list, run-shell in its
// forms, sessions renamed, panes split and killed, popups on system3's
// clients. The server must never die. SYSTEM3_CHURN_DURATION=10m runs it
// for ten minutes.
func TestResilienceTmuxChurn(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "100000")
	c := &churner{t: t, srv: srv, rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 21)), ops: map[string]int{}}
	c.setup()
	l := startLive(t, srv)
	l.await(15*time.Second, func(snap api.Snapshot) string {
		if _, ok := sessionNamed(snap, "stay"); !ok {
			return "stay is not watched"
		}
		return ""
	})

	var until time.Time
	if d := os.Getenv(churnEnv); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("%s=%q: %v", churnEnv, d, err)
		}
		until = time.Now().Add(dur)
	}
	start := time.Now()
	n := 0
	for ; until.IsZero() && n < churnCycles || !until.IsZero() && time.Now().Before(until); n++ {
		c.cycle(n)
	}
	v, _ := srv.Version(context.Background())
	t.Logf("%s: %d churn cycles in %s, %d server deaths %v; operations %v", v, n, time.Since(start).Round(time.Second), len(c.deaths), c.deaths, c.ops)
	if len(c.deaths) > 0 {
		t.Errorf("the tmux server died %d times in %d cycles while system3 watched it: %v", len(c.deaths), n, c.deaths)
	}

	// system3 still watches the server and what lives on it.
	l.await(15*time.Second, func(snap api.Snapshot) string {
		if !snap.Running || snap.Problem != "" {
			return fmt.Sprintf("running %v, problem %q", snap.Running, snap.Problem)
		}
		if _, ok := sessionNamed(snap, "stay"); !ok {
			return "stay is not watched"
		}
		return ""
	})
}

// TestResilienceTmuxCrashReproductions runs the reproductions of the tmux
// server crashes that need a control-mode client attached, each many times
// while system3's monitors watch the server: none may kill the server, and
// system3 attaches no client that tmux could crash on.
func TestResilienceTmuxCrashReproductions(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "100000")
	c := &churner{t: t, srv: srv, rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5243)), ops: map[string]int{}}
	c.setup()
	l := startLive(t, srv)
	const rounds = 10
	for i := range rounds {
		// tmux/tmux#4980, #5004: sessions created while a control client
		// identifies itself (system3 used to attach one to every new
		// session), so each new session came with an attach.
		c.step("#4980 sessions created in a burst", func() {
			for j := range 6 {
				c.tmux("new-session", "-d", "-s", fmt.Sprintf("i%d-%d", i, j), "sleep 100000")
				time.Sleep(time.Duration(c.rnd.IntN(40)) * time.Millisecond)
			}
			for j := range 6 {
				c.tmux("kill-session", "-t", fmt.Sprintf("=i%d-%d", i, j))
			}
		})
		// tmux/tmux#5243: session-window-changed notified after kill-session.
		c.step("#5243 select-window and kill-session in one command list", func() {
			s := fmt.Sprintf("k%d", i)
			c.tmux("new-session", "-d", "-s", s, "sleep 100000", ";", "new-window", "-d", "-t", "="+s+":", "sleep 100000")
			time.Sleep(time.Duration(c.rnd.IntN(300)) * time.Millisecond)
			c.tmux("select-window", "-t", "="+s+":1", ";", "kill-session", "-t", "="+s)
		})
		// tmux/tmux#5570: run-shell output.
		c.step("#5570 run-shell", func() {
			c.tmux("run-shell", "echo out")
			c.tmux("run-shell", "-b", "echo background")
			c.tmux("run-shell", "-t", "=stay:", "echo into a pane")
			c.tmux("send-keys", "-t", "=stay:", "-X", "cancel")
		})
		// tmux/tmux#5551: popups on a control client.
		c.step("#5551 display-popup on every client", func() {
			for _, name := range strings.Fields(c.tmux("list-clients", "-F", "#{client_name}")) {
				c.tmux("display-popup", "-c", name, "-w", "20", "-h", "5", "-E", "sleep 0.2")
				c.tmux("display-popup", "-c", name, "-B", "-E", "true")
			}
		})
		if n := strings.Count(c.tmux("list-clients", "-F", "#{client_control_mode}"), "1"); n != 0 {
			t.Errorf("round %d: system3 has %d control-mode clients attached", i, n)
		}
	}
	v, _ := srv.Version(context.Background())
	t.Logf("%s: %d rounds of each reproduction, %d server deaths %v", v, rounds, len(c.deaths), c.deaths)
	if len(c.deaths) > 0 {
		t.Errorf("the tmux server died %d times while system3 watched it: %v", len(c.deaths), c.deaths)
	}
	l.await(15*time.Second, func(snap api.Snapshot) string {
		if _, ok := sessionNamed(snap, "stay"); !ok || !snap.Running {
			return "stay is not watched"
		}
		return ""
	})
}
