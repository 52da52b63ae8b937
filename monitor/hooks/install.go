package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// MaxSettingsFile bounds the settings file Install reads.
const MaxSettingsFile = 4 << 20

// Result is what Install did, or would do.
type Result struct {
	Path string `json:"path"`
	// Changed is false when every event already ran the command.
	Changed bool `json:"changed"`
	// Added lists the events that gained the command.
	Added []string `json:"added"`
	// Backup is the copy of the file before the change ("" when nothing
	// was changed or the file did not exist).
	Backup string `json:"backup,omitempty"`
	// Diff is a unified diff of the change ("" when nothing changes).
	Diff string `json:"diff,omitempty"`
}

// Plan computes what Install would do to the settings file at path
// without touching it.
func Plan(path, cmd string) (Result, []byte, error) { return PlanFor(path, cmd, Events) }

// PlanFor is Plan for the given events only.
func PlanFor(path, cmd string, events []string) (Result, []byte, error) {
	old, err := readSettings(path)
	if err != nil {
		return Result{Path: path}, nil, err
	}
	merged, added, err := MergeFor(old, cmd, events)
	if err != nil {
		return Result{Path: path}, nil, fmt.Errorf("%s: %w; nothing was changed", path, err)
	}
	res := Result{Path: path, Added: added, Changed: len(added) > 0}
	if res.Changed {
		res.Diff = Diff(path, string(old), string(merged))
	}
	return res, merged, nil
}

// Install merges the settings from Settings(cmd) into the settings file at
// path (created if missing), keeping every other key and hook. An event
// that already runs cmd is left alone, so running it again changes
// nothing. The old file is copied to a backup first. A file that is not a
// JSON object (comments are not allowed) is refused and left as it was.
func Install(path, cmd string) (Result, error) { return InstallFor(path, cmd, Events) }

// InstallFor is Install for the given events only: CodexEvents into a
// Codex hooks.json.
func InstallFor(path, cmd string, events []string) (Result, error) {
	res, merged, err := PlanFor(path, cmd, events)
	if err != nil || !res.Changed {
		return res, err
	}
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
		backup := fmt.Sprintf("%s.system3-backup-%s", path, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := copyFile(path, backup, mode); err != nil {
			return Result{Path: path}, fmt.Errorf("back up %s: %w; nothing was changed", path, err)
		}
		res.Backup = backup
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Result{Path: path}, fmt.Errorf("create the directory of %s: %w", path, err)
	}
	if err := writeAtomic(path, merged, mode); err != nil {
		return Result{Path: path, Backup: res.Backup}, fmt.Errorf("write %s: %w; the file was not changed", path, err)
	}
	return res, nil
}

func readSettings(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSettingsFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxSettingsFile {
		return nil, fmt.Errorf("%s is larger than %d bytes; is it really a Claude Code settings file? Nothing was changed", path, MaxSettingsFile)
	}
	return b, nil
}

// Merge returns the settings document old (empty: none) with cmd added to
// every event in Events that does not already run it, and the events it
// was added to. Keys keep their order; the result is indented with two
// spaces. Merge refuses what is not a JSON object, and a "hooks" that is
// not an object of arrays.
func Merge(old []byte, cmd string) ([]byte, []string, error) { return MergeFor(old, cmd, Events) }

// MergeFor is Merge for the given events only.
func MergeFor(old []byte, cmd string, events []string) ([]byte, []string, error) {
	if _, err := SettingsFor(cmd, events); err != nil {
		return nil, nil, err
	}
	top := orderedObject{}
	if len(bytes.TrimSpace(old)) > 0 {
		var err error
		if top, err = parseObject(old); err != nil {
			return nil, nil, fmt.Errorf("not a valid JSON settings object (%v); fix it or move it away (system3 merges plain JSON: no comments; add the hook by hand from system3 hooks print to keep them)", err)
		}
	}
	hooks := orderedObject{}
	if raw, ok := top.get("hooks"); ok {
		var err error
		if hooks, err = parseObject(raw); err != nil {
			return nil, nil, fmt.Errorf(`"hooks" is not a JSON object (%v); fix it or move it away`, err)
		}
	}
	var added []string
	for _, ev := range events {
		var groups []json.RawMessage
		if raw, ok := hooks.get(ev); ok {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, nil, fmt.Errorf(`"hooks.%s" is not an array of hook entries; fix it or move it away`, ev)
			}
		}
		if runs(groups, ev, cmd) {
			continue
		}
		g, err := marshal(ourEntry(ev, cmd))
		if err != nil {
			return nil, nil, err
		}
		groups = append(groups, g)
		b, err := marshal(groups)
		if err != nil {
			return nil, nil, err
		}
		hooks.set(ev, b)
		added = append(added, ev)
	}
	if len(added) == 0 {
		return old, nil, nil
	}
	hb, err := hooks.marshal()
	if err != nil {
		return nil, nil, err
	}
	top.set("hooks", hb)
	tb, err := top.marshal()
	if err != nil {
		return nil, nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, tb, "", "  "); err != nil {
		return nil, nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), added, nil
}

// runs reports whether one of the matcher groups of event runs cmd as a
// command hook for every tool (an empty matcher or "*") or for the tools
// of system3's own matcher; for Copilot's events, whether one of its flat
// entries runs system3's command.
func runs(groups []json.RawMessage, event, cmd string) bool {
	switch e := ourEntry(event, cmd).(type) {
	case copilotEntry:
		return slices.ContainsFunc(groups, func(raw json.RawMessage) bool {
			var c copilotEntry
			return json.Unmarshal(raw, &c) == nil && c.Type == e.Type && c.Bash == e.Bash
		})
	case group:
		return runsGroup(groups, cmd, e.Matcher)
	}
	return false
}

func runsGroup(groups []json.RawMessage, cmd, matcher string) bool {
	for _, raw := range groups {
		var g struct {
			Matcher string    `json:"matcher"`
			Hooks   []command `json:"hooks"`
		}
		if json.Unmarshal(raw, &g) != nil || (g.Matcher != "" && g.Matcher != "*" && g.Matcher != matcher) {
			continue
		}
		for _, h := range g.Hooks {
			if h.Type == "command" && h.Command == cmd {
				return true
			}
		}
	}
	return false
}

// orderedObject is a JSON object whose keys keep their order.
type orderedObject []member

type member struct {
	key string
	val json.RawMessage
}

func parseObject(b []byte) (orderedObject, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxAt(b, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("the document is not a JSON object")
	}
	var o orderedObject
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxAt(b, dec, err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, syntaxAt(b, dec, err)
		}
		o.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxAt(b, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text follows the JSON object")
	}
	return o, nil
}

// syntaxAt words a decoding error with the line it occurred on.
func syntaxAt(b []byte, dec *json.Decoder, err error) error {
	off := dec.InputOffset()
	// The decoder's offsets count from where it last buffered; decoding
	// the whole document again finds where it goes wrong.
	var se *json.SyntaxError
	var v any
	if errors.As(json.Unmarshal(b, &v), &se) {
		off = se.Offset
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return fmt.Errorf("line %d: %v", bytes.Count(b[:off], []byte("\n"))+1, err)
}

func (o orderedObject) get(k string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == k {
			return m.val, true
		}
	}
	return nil, false
}

func (o *orderedObject) set(k string, v json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == k {
			(*o)[i].val = v
			return
		}
	}
	*o = append(*o, member{k, v})
}

func (o orderedObject) marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		if err := json.Compact(&b, m.val); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func copyFile(src, dst string, mode fs.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeAtomic(path string, b []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
