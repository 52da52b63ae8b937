package hooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/system3-dev/system3/internal/api"
)

// A hook event changes what system3 says about a pane, so system3 accepts
// one only when it can tell that it came from that pane: either the process
// that delivered it over the socket descends from the pane's process (the
// daemon checks that itself), or the event carries a proof made with the
// token system3 put into the environment of the agent it started in that
// pane's session.
//
// The token of a session is HMAC-SHA256(key, session name), the key a
// random secret in the state dir (KeyFile, 0600). An event is signed with
// HMAC-SHA256(token, the event), so the spool and the socket carry a proof
// of the event, never the token: reading the spool teaches nothing that
// signs another event.

// KeyFile is the name of the hook key in the state dir.
const KeyFile = "hook.key"

// TokenEnv is the environment variable that carries a session's hook token
// to the agent system3 starts, and from it to `system3 hook`.
const TokenEnv = "SYSTEM3_HOOK_TOKEN"

// keyLen is the key's length in bytes.
const keyLen = 32

// LoadKey reads the hook key from stateDir, creating it when there is none
// and create is set. A key readable by group or others is refused: anyone
// who reads it can sign events for every session.
func LoadKey(stateDir string, create bool) ([]byte, error) {
	path := filepath.Join(stateDir, KeyFile)
	key, err := readKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !create {
		return key, err
	}
	// Write the key aside and link it into place: a reader never sees a
	// half-written key, and of two processes creating it at once the
	// second finds the first's.
	b := make([]byte, keyLen)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("make the hook key: %w", err)
	}
	tmp, err := os.CreateTemp(stateDir, KeyFile+".new-*")
	if err != nil {
		return nil, fmt.Errorf("make the hook key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write([]byte(hex.EncodeToString(b) + "\n"))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("write the hook key: %w", werr)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("save the hook key as %s: %w", path, err)
	}
	return readKey(path)
}

func readKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the hook key %s is readable by others (mode %v); run chmod 600 on it, or remove it to make a new one", path, fi.Mode().Perm())
	}
	var buf [2*keyLen + 1]byte
	n, _ := f.Read(buf[:])
	key, err := hex.DecodeString(string(buf[:min(n, 2*keyLen)]))
	if err != nil || len(key) != keyLen {
		return nil, fmt.Errorf("the hook key %s is damaged; remove it to make a new one (agents started before then need a restart)", path)
	}
	return key, nil
}

// SessionToken is the hook token of the tmux session named session.
func SessionToken(key []byte, session string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("system3 hook token v1\x00"))
	m.Write([]byte(session))
	return hex.EncodeToString(m.Sum(nil))
}

// Sign returns ev with its proof made with token.
func Sign(ev api.HookEvent, token string) api.HookEvent {
	ev.Proof = mac(ev, token)
	return ev
}

// Proven reports whether ev carries a proof made with token.
func Proven(ev api.HookEvent, token string) bool {
	if ev.Proof == "" || token == "" {
		return false
	}
	return hmac.Equal([]byte(ev.Proof), []byte(mac(ev, token)))
}

// mac is HMAC-SHA256(token, the event's JSON without its proof). The JSON
// of an event survives the socket and the spool unchanged: every text field
// is valid UTF-8 (Parse makes it so) and the time is taken in UTC.
func mac(ev api.HookEvent, token string) string {
	ev.Proof, ev.Sender = "", api.HookSender{}
	ev.Received = ev.Received.UTC()
	b, _ := json.Marshal(ev)
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("system3 hook event v1\x00"))
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}
