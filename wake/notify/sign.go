package notify

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/statedir"
)

// SecretFile is the file in the state dir holding the key that signs
// action links.
const SecretFile = "notify-secret"

// DefaultActionTTL is how long an action link in a push answers.
const DefaultActionTTL = 24 * time.Hour

// Signer makes and checks action tokens: each names one wake, the
// identity of its prompt and one of its options, expires, and is signed
// with HMAC-SHA256, so a tap answers exactly that option of that prompt
// and nothing else.
type Signer struct {
	key []byte
}

// NewSigner signs with key (at least 32 bytes).
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < 32 {
		return nil, errors.New("notify: signing key shorter than 32 bytes")
	}
	return &Signer{key: key}, nil
}

// LoadSigner reads the key from dir/notify-secret, creating it (0600) on
// first use.
func LoadSigner(dir string) (*Signer, error) {
	p := filepath.Join(dir, SecretFile)
	// Whoever could read or plant this key could sign working action links.
	if err := statedir.CheckSecret(p); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		f, cerr := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if cerr == nil {
			_, werr := f.WriteString(hex.EncodeToString(key) + "\n")
			if cerr = f.Close(); werr != nil {
				cerr = werr
			}
		}
		if cerr != nil && !errors.Is(cerr, fs.ErrExist) {
			return nil, fmt.Errorf("create the action signing key %s: %w (check that the state dir is writable)", p, cerr)
		}
		data, err = os.ReadFile(p) // another process may have won the race
	}
	if err != nil {
		return nil, fmt.Errorf("read the action signing key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("the action signing key %s is damaged: delete it (links already sent stop working) and start system3 again", p)
	}
	return NewSigner(key)
}

// Action is what a token allows: answer Option (1-based) of wake Wake,
// while the pane shows the prompt Prompt (the wake's prompt identity).
type Action struct {
	Wake    string `json:"w"`
	Option  int    `json:"o"`
	Prompt  string `json:"p,omitempty"`
	Expires int64  `json:"e"` // unix seconds
}

// Errors of Verify.
var (
	ErrBadToken     = errors.New("the action link is not valid")
	ErrExpiredToken = errors.New("the action link has expired")
)

// Sign returns the token for answering option (1-based) of wake id, about
// the prompt whose identity is prompt, until expires.
func (s *Signer) Sign(id string, option int, prompt string, expires time.Time) string {
	payload, _ := json.Marshal(Action{Wake: id, Option: option, Prompt: prompt, Expires: expires.Unix()})
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s *Signer) mac(p string) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("system3 action\x00" + p))
	return h.Sum(nil)
}

// Verify checks a token at now and returns what it allows.
func (s *Signer) Verify(token string, now time.Time) (Action, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > 1024 {
		return Action{}, ErrBadToken
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(p)) {
		return Action{}, ErrBadToken
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return Action{}, ErrBadToken
	}
	var a Action
	if err := json.Unmarshal(payload, &a); err != nil || a.Wake == "" || a.Option < 1 {
		return Action{}, ErrBadToken
	}
	if now.Unix() > a.Expires {
		return a, ErrExpiredToken
	}
	return a, nil
}
