package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// sshFixture is a real OpenSSH server on a loopback port, with a throwaway
// host key, user key and known_hosts, and an ssh config naming its hosts:
//
//	remote, bare  the server, as it is
//	down          a loopback port nothing listens on
//	badkey        the server, with another key recorded in known_hosts
//
// Commands it runs see SYSTEM3_TEST_RUN_MAIN=1 (sshd's SetEnv), so this
// test binary is system3 there.
type sshFixture struct {
	dir    string
	config string // for ssh -F
	sshd   *exec.Cmd
}

func startSSHD(t testing.TB) *sshFixture {
	t.Helper()
	sshd := testkit.LookPath(t, "/usr/sbin/sshd")
	keygenBin := testkit.LookPath(t, "ssh-keygen")
	testkit.LookPath(t, "ssh") // system3 reaches every host with it
	if os.Getuid() != 0 {
		t.Fatal("the ssh tests run sshd, which needs root; run them as root (CI does)")
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keygen := func(name string) string {
		p := filepath.Join(dir, name)
		if out, err := exec.Command(keygenBin, "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
		pub, err := os.ReadFile(p + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(pub))
	}
	hostPub, userPub, otherPub := keygen("hostkey"), keygen("userkey"), keygen("otherkey")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("authorized_keys", userPub+"\n")
	port, closed := freePort(t), freePort(t)
	hostKeyOnly := func(pub string) string { f := strings.Fields(pub); return f[0] + " " + f[1] }
	write("known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s\n", port, hostKeyOnly(hostPub)))
	write("wrong_known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s\n", port, hostKeyOnly(otherPub)))
	if err := os.MkdirAll(filepath.Join(dir, "xdg"), 0o700); err != nil {
		t.Fatal(err)
	}
	// One sshd stands for every host of a test, and several system3
	// processes follow those hosts at once: past sshd's default MaxStartups
	// (10 connections still authenticating) it drops new ones at random,
	// which on a loaded machine cut links mid-test.
	cfg := write("sshd_config", fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %[2]s/hostkey
PidFile %[2]s/sshd.pid
AuthorizedKeysFile %[2]s/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
SetEnv SYSTEM3_TEST_RUN_MAIN=1 XDG_CONFIG_HOME=%[2]s/xdg
MaxStartups 100:30:200
LogLevel ERROR
`, port, dir))
	f := &sshFixture{dir: dir}
	f.config = write("ssh_config", fmt.Sprintf(`Host down
  Port %d
Host badkey
  UserKnownHostsFile %[2]s/wrong_known_hosts
Host *
  HostName 127.0.0.1
  Port %[3]d
  User root
  IdentityFile %[2]s/userkey
  IdentitiesOnly yes
  UserKnownHostsFile %[2]s/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  ControlMaster no
`, closed, dir, port))
	f.sshd = exec.Command(sshd, "-D", "-e", "-f", cfg)
	f.sshd.Stderr = &lineWriter{lines: make(chan string, 256)}
	if err := f.sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.sshd.Process.Signal(syscall.SIGTERM)
		f.sshd.Wait()
	})
	testkit.WaitForValue(t, 20*time.Second, fmt.Sprintf("sshd to listen on port %d", port), func() (error, bool) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err, err == nil
	})
	return f
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// children are the sshd processes serving connections (the listener's
// children), by pid.
func (f *sshFixture) children(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// its closing parenthesis.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(f.sshd.Process.Pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hostsWorld is a "remote" (a private tmux server and state dir with its
// monitors, reached through sshd) and a local system3 whose config names
// it and the broken hosts.
type hostsWorld struct {
	ssh    *sshFixture
	remote tmux.Server
	env    map[string]string // the local system3's
	state  string            // the remote's state dir
	bare   string            // where install puts system3 for host bare
}

func newHostsWorld(t *testing.T) *hostsWorld {
	t.Helper()
	w := &hostsWorld{ssh: startSSHD(t)}
	w.remote = tmuxtest.NewServer(t, "sleep", "600")
	remoteEnv := serveMonitors(t, w.remote, t.TempDir())
	w.state = remoteEnv["SYSTEM3_STATE_DIR"]
	local := tmuxtest.NewServer(t, "sleep", "600")
	w.env = serveMonitors(t, local, t.TempDir())
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w.bare = filepath.Join(w.ssh.dir, "bare", "bin", "system3")
	host := func(name, bin string) string {
		return fmt.Sprintf("  %s:\n    ssh: %s\n    system3: %s\n    state_dir: %s\n    ssh_options: [-F, %s]\n", name, name, bin, remoteEnv["SYSTEM3_STATE_DIR"], w.ssh.config)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	body := "hosts:\n" + host("remote", self) + host("down", self) + host("badkey", self) + host("bare", w.bare)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env["SYSTEM3_CONFIG"] = cfg
	return w
}

func (w *hostsWorld) hosts(t *testing.T) map[string]hostLine {
	t.Helper()
	code, out, errOut := invoke(t, w.env, "hosts", "--json")
	if code != 0 {
		t.Fatalf("hosts: exit %d: %s", code, errOut)
	}
	var lines []hostLine
	if err := json.Unmarshal([]byte(out), &lines); err != nil {
		t.Fatalf("hosts --json printed %q: %v", out, err)
	}
	m := map[string]hostLine{}
	for _, l := range lines {
		m[l.Name] = l
	}
	return m
}

// A permission prompt of an agent on the remote host reaches a local
// `system3 wait --all-hosts` as remote:SESSION, through a real sshd; status
// lists it; hosts shows remote connected and says, in a sentence, why each
// broken host is not, until install puts system3 on the bare one.
func TestHostsRemotePromptReachesWaitOverSSH(t *testing.T) {
	w := newHostsWorld(t)

	hs := w.hosts(t)
	for name, want := range map[string]string{"down": "down or unreachable", "badkey": "host key changed", "bare": "system3 hosts install bare"} {
		if hs[name].State != "disconnected" || !strings.Contains(hs[name].Error, want) {
			t.Errorf("host %s = %+v; want disconnected saying %q", name, hs[name], want)
		}
	}
	for _, name := range []string{"local", "remote"} {
		if hs[name].State != "connected" || hs[name].LastSeen.IsZero() {
			t.Errorf("host %s = %+v; want connected, seen now", name, hs[name])
		}
	}
	code, out, _ := invoke(t, w.env, "hosts")
	if code != 0 || !strings.Contains(out, "remote") || !strings.Contains(out, "refused to connect to host badkey") {
		t.Errorf("hosts text: exit %d:\n%s", code, out)
	}

	type result struct {
		code        int
		out, errOut string
	}
	res := make(chan result, 1)
	go func() {
		code, out, errOut := invoke(t, w.env, "wait", "--all-hosts", "--json", "--reason", "awaiting_input", "--timeout", "90s")
		res <- result{code, out, errOut}
	}()
	startTestAgents(t, w.remote, "", agentSession("permission"))
	r := <-res
	var hw api.HostWake
	if r.code != 0 || json.Unmarshal([]byte(r.out), &hw) != nil {
		t.Fatalf("wait --all-hosts: exit %d, out %q, stderr %q", r.code, r.out, r.errOut)
	}
	if hw.Host != "remote" || hw.Session != "remote:fa-permission" || hw.Reason != api.ReasonAwaitingInput || hw.Kind != "permission" ||
		hw.Cursor != fmt.Sprintf("remote:%d", hw.Seq) {
		t.Fatalf("wake = %+v", hw)
	}
	// The broken hosts were said to be broken, and did not stop the wait.
	if !strings.Contains(r.errOut, "host key changed") || !strings.Contains(r.errOut, "down or unreachable") {
		t.Errorf("wait's stderr does not say why hosts are unreachable: %q", r.errOut)
	}

	code, out, errOut := invoke(t, w.env, "status", "--all-hosts", "--json")
	var doc hostsStatusDoc
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("status --all-hosts: exit %d: %s %s", code, out, errOut)
	}
	found := false
	for _, s := range doc.Sessions {
		found = found || s.Host == "remote" && s.Session.Session == "remote:fa-permission" && s.State == "awaiting_input"
	}
	if !found || len(doc.Hosts) != 5 {
		t.Errorf("status --all-hosts lacks remote:fa-permission awaiting input: %s", out)
	}

	if code, out, errOut := invoke(t, w.env, "hosts", "install", "bare"); code != 0 || !strings.Contains(out, "installed") {
		t.Fatalf("hosts install bare: exit %d, out %q, stderr %q", code, out, errOut)
	}
	if hs := w.hosts(t); hs["bare"].State != "connected" {
		t.Errorf("bare after install = %+v; want connected", hs["bare"])
	}
	if code, _, errOut := invoke(t, w.env, "hosts", "install", "bare"); code == 0 || !strings.Contains(errOut, "--force") {
		t.Errorf("a second install: exit %d, stderr %q; want a refusal naming --force", code, errOut)
	}
}

// A burst of wakes on the remote host, with the sshd child carrying the
// link killed in the middle: a loop of `wait --all-hosts --since CURSOR`
// gets every wake exactly once, in order, after reconnecting.
func TestRemoteWakesExactlyOnceAcrossLinkKill(t *testing.T) {
	w := newHostsWorld(t)
	capture, err := filepath.Abs(filepath.Join("..", "..", "monitor", "testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c := tmux.NewClient(w.remote)
	prompt := func(i int) {
		if _, err := c.NewSession(context.Background(), tmux.NewSessionOptions{Name: fmt.Sprintf("burst-%02d", i), Width: 120, Height: 40,
			Command: []string{"sh", "-c", "cat '" + capture + "'; exec sleep 600"}}); err != nil {
			t.Error(err)
		}
	}
	const n = 8
	type got struct {
		hw     api.HostWake
		errOut string
		// wait is how many waits had started when this one returned.
		wait int64
	}
	wakes := make(chan got, 2*n)
	// Any wait may be the one that finds its link cut, including one that
	// then times out before the next wake (exit 2).
	var dropped atomic.Bool
	var started atomic.Int64 // waits started
	stop := make(chan struct{})
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		cursor := ""
		for {
			select {
			case <-stop:
				return
			default:
			}
			args := []string{"wait", "--host", "remote", "--json", "--reason", "awaiting_input", "--timeout", "5s"}
			if cursor != "" {
				args = append(args, "--since", cursor)
			}
			started.Add(1)
			code, out, errOut := invoke(t, w.env, args...)
			if strings.Contains(errOut, "dropped") {
				dropped.Store(true)
			}
			if code == 2 {
				continue // nothing new yet
			}
			var hw api.HostWake
			if code != 0 || json.Unmarshal([]byte(out), &hw) != nil {
				t.Errorf("wait: exit %d, out %q, stderr %q", code, out, errOut)
				return
			}
			cursor = hw.Cursor
			wakes <- got{hw, errOut, started.Load()}
		}
	}()
	defer func() { close(stop); <-loopDone }()

	for i := range n / 2 {
		prompt(i)
	}
	seen := map[string]int{}
	var order []uint64
	reconnected := false
	var last int64 // the wait that delivered the latest wake
	take := func(want int) {
		t.Helper()
		timeout := time.After(2 * time.Minute)
		for len(order) < want {
			select {
			case g := <-wakes:
				seen[g.hw.ID]++
				order = append(order, g.hw.Seq)
				last = g.wait
				reconnected = reconnected || strings.Contains(g.errOut, "dropped")
			case <-timeout:
				t.Fatalf("%d wakes delivered, want %d: %v", len(order), want, seen)
			}
		}
	}
	take(n / 2)
	// Once the loop's next wait has started and had time to connect, it
	// holds a link (a child of the wait that returned may still be going
	// away, and killing only that one cuts nothing): kill every sshd child
	// (each one carries one link) while the rest of the burst is raised.
	deadline := time.Now().Add(30 * time.Second)
	testkit.WaitFor(t, time.Until(deadline), "the loop to start a wait after its last wake", func() bool { return started.Load() > last })
	time.Sleep(time.Second)
	var killed []int
	testkit.WaitFor(t, time.Until(deadline), "an sshd child that carries a link, to kill", func() bool {
		for _, pid := range w.ssh.children(t) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = append(killed, pid)
			}
		}
		return len(killed) > 0
	})
	for i := n / 2; i < n; i++ {
		prompt(i)
	}
	take(n)
	// Nothing more comes: no wake twice.
	select {
	case g := <-wakes:
		t.Fatalf("an extra wake after all %d: %+v", n, g.hw)
	case <-time.After(7 * time.Second):
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("wake %s delivered %d times", id, k)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct wakes, want %d", len(seen), n)
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Errorf("wakes out of order: seqs %v", order)
		}
	}
	if !reconnected && !dropped.Load() {
		t.Errorf("no wait reported the dropped link (killed sshd children %v); the kill did not cut a link", killed)
	}
}
