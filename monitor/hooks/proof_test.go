package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadKey(dir, false); !os.IsNotExist(err) {
		t.Fatalf("no key, no create: %v", err)
	}
	// Processes creating it at once all end with the same key.
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadKey(dir, true)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys {
		if len(k) != keyLen || string(k) != string(keys[0]) {
			t.Fatalf("keys differ: %x", keys)
		}
	}
	path := filepath.Join(dir, KeyFile)
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	os.Chmod(path, 0o644)
	if _, err := LoadKey(dir, true); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("loose key: %v", err)
	}
	os.WriteFile(path, []byte("short"), 0o600)
	os.Chmod(path, 0o600)
	if _, err := LoadKey(dir, true); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged key: %v", err)
	}
}

// A signed event survives the socket's and the spool's JSON, in any time
// zone; any change to it, or another token, breaks the proof.
func TestSignSurvivesJSON(t *testing.T) {
	key := make([]byte, keyLen)
	tok := SessionToken(key, "orch-a")
	if tok == SessionToken(key, "orch-b") || tok == SessionToken(append([]byte{1}, key[1:]...), "orch-a") {
		t.Fatal("tokens do not depend on session and key")
	}
	ev := api.HookEvent{Name: api.PermissionRequest, Pane: "%3", ToolName: "Bash", ToolInput: "ls ünï",
		Received: time.Date(2026, 11, 21, 9, 0, 0, 123456789, time.FixedZone("x", 3600))}
	signed := Sign(ev, tok)
	b, _ := json.Marshal(signed)
	var got api.HookEvent
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !Proven(got, tok) {
		t.Fatalf("proof lost in JSON: %s", b)
	}
	if Proven(got, SessionToken(key, "orch-b")) || Proven(got, "") || Proven(ev, tok) {
		t.Fatal("proven by the wrong token, or unsigned")
	}
	for name, change := range map[string]func(*api.HookEvent){
		"name":  func(e *api.HookEvent) { e.Name = api.SessionEnd },
		"pane":  func(e *api.HookEvent) { e.Pane = "%4" },
		"time":  func(e *api.HookEvent) { e.Received = e.Received.Add(time.Nanosecond) },
		"input": func(e *api.HookEvent) { e.ToolInput = "rm" },
	} {
		e := got
		change(&e)
		if Proven(e, tok) {
			t.Errorf("changed %s, still proven", name)
		}
	}
}
