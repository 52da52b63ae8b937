package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestSystem3Argv(t *testing.T) {
	h := Host{Name: "web1", SSH: "lab-web1", System3: "~/bin/system 3", StateDir: "/srv/it's", SSHOptions: []string{"-F", "/x/cfg"}}
	got := h.System3Argv("attach", "--stdio")
	want := []string{"ssh", "-F", "/x/cfg", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3", "--", "lab-web1",
		`~/'bin/system 3' --state-dir '/srv/it'\''s' attach --stdio`}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("argv = %q\nwant   %q", got, want)
	}
	if got := (Host{Name: "a", SSH: "a"}).System3Argv("version"); got[len(got)-1] != "system3 version" {
		t.Fatalf("default binary: %q", got)
	}
}

// ssh's own words, as OpenSSH 9.2 prints them, become one sentence saying
// what to do.
func TestClassify(t *testing.T) {
	h := Host{Name: "web1", SSH: "lab-web1"}
	for _, tt := range []struct {
		code   int
		stderr string
		kind   error
		want   string
	}{
		{255, "@@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n@@@@\nHost key verification failed.\n", ErrHostKeyChanged, "key changed"},
		{255, "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\nHost key verification failed.\n", ErrHostKeyUnknown, "run `ssh lab-web1` once"},
		{255, "ssh: connect to host 127.0.0.1 port 9: Connection refused\n", ErrUnreachable, "down or unreachable: ssh: connect to host 127.0.0.1 port 9: Connection refused"},
		{255, "ssh: Could not resolve hostname nowhere: Name or service not known\n", ErrUnreachable, "down or unreachable"},
		{255, "root@127.0.0.1: Permission denied (publickey).\n", ErrAuth, "refused the ssh login"},
		{255, "Connection to 127.0.0.1 closed by remote host.\n", ErrLinkLost, "dropped"},
		{127, "bash: line 1: system3: command not found\n", ErrNotInstalled, "system3 hosts install web1"},
		{127, "sh: 1: /opt/s3: not found\n", ErrNotInstalled, "hosts.web1.system3"},
		{3, "system3: no system3 daemon on this host: run system3 serve there\n", ErrNoDaemon, "run system3 serve there"},
		{1, "system3: unknown command \"attach\" for \"system3\"\n", ErrRemoteFailed, `unknown command "attach"`},
	} {
		err := h.classify(tt.code, tt.stderr)
		if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "web1") {
			t.Errorf("classify(%d, %q) = %v (%v); want %v mentioning %q", tt.code, tt.stderr, err, err.Kind, tt.kind, tt.want)
		}
	}
}

// A host whose ssh never answers (a ProxyCommand that only sleeps, as a
// blackholed network would) does not hold up a report: it is reported
// disconnected, saying it did not answer in time, within the deadline.
func TestSetReportBoundsAHostThatHangs(t *testing.T) {
	testkit.LookPath(t, "ssh")
	seen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewSet([]Host{{Name: "hang", SSH: "hang.invalid", SSHOptions: []string{"-F", "/dev/null", "-o", "ProxyCommand=sleep 600"}}},
		func(string) time.Time { return seen })
	defer s.Close()
	s.Deadline = 300 * time.Millisecond
	start := time.Now()
	rs := s.Report(context.Background())
	took := time.Since(start)
	if len(rs) != 1 || rs[0].Connected || rs[0].Err == nil || !strings.Contains(rs[0].Err.Error(), "did not answer within 300ms") {
		t.Fatalf("report = %+v", rs)
	}
	if !rs[0].LastSeen.Equal(seen) {
		t.Errorf("last seen %v, want the recorded %v", rs[0].LastSeen, seen)
	}
	// The deadline, plus the time to end ssh (closeGrace at most).
	if took > s.Deadline+closeGrace+5*time.Second {
		t.Errorf("the report took %v", took)
	}
	if st := s.Links()[0].State(); st.Connected {
		t.Errorf("the link is %+v after a report that failed", st)
	}
}

// TestSetReportIsShared: many callers at once, and again within Fresh,
// start one report's ssh processes, not one each; after Fresh the hosts are
// asked again.
func TestSetReportIsShared(t *testing.T) {
	testkit.LookPath(t, "ssh")
	calls := filepath.Join(t.TempDir(), "calls")
	// Every ssh process runs the proxy command once: it counts, then fails.
	proxy := fmt.Sprintf("ProxyCommand=sh -c 'echo x >> %s; exit 1'", calls)
	s := NewSet([]Host{{Name: "counted", SSH: "counted.invalid", SSHOptions: []string{"-F", "/dev/null", "-o", proxy}}}, nil)
	defer s.Close()
	s.Fresh = time.Hour
	count := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "x")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if rs := s.Report(context.Background()); len(rs) != 1 || rs[0].Connected || rs[0].Err == nil {
				t.Errorf("report = %+v, want the host disconnected with why", rs)
			}
		})
	}
	wg.Wait()
	s.Report(context.Background())
	if n := count(); n != 2 {
		t.Fatalf("9 reports started %d ssh processes, want 2 (one report: sessions and wakes)", n)
	}
	s.mu.Lock()
	s.lastAt = time.Time{} // as if Fresh had passed
	s.mu.Unlock()
	s.Report(context.Background())
	if n := count(); n != 4 {
		t.Fatalf("a report after Fresh started %d ssh processes in all, want 4", n)
	}
}
