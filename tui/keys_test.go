package tui

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
)

// keysDoc is docs/keys.md, relative to this package.
var keysDoc = filepath.Join("..", "docs", "keys.md")

// TestKeysDoc checks that docs/keys.md is the key map rendered to
// markdown; `go test ./tui -run TestKeysDoc -update` rewrites it.
func TestKeysDoc(t *testing.T) {
	want := keysMarkdown(newKeyMap())
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(keysDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(keysDoc)
	if err != nil {
		t.Fatalf("%v; run `go test ./tui -run TestKeysDoc -update`", err)
	}
	if string(got) != want {
		t.Fatalf("docs/keys.md is stale; run `go test ./tui -run TestKeysDoc -update`. Want:\n%s", want)
	}
}

// keysMarkdown renders the key map as docs/keys.md.
func keysMarkdown(k keyMap) string {
	var b strings.Builder
	b.WriteString(`# Dashboard keys

<!-- Generated from tui/keys.go by ` + "`go test ./tui -run TestKeysDoc -update`" + `. Do not edit. -->

The dashboard (` + "`system3`, `system3 tui`" + `) is driven from the keyboard. The help
bar at the bottom shows the keys that apply at the moment, and ` + "`?`" + ` shows them
all. ` + "`ctrl+c`" + ` quits from anywhere.

The same actions exist outside the dashboard, through the same service: on
the CLI (` + "`system3 inject`, `system3 answer`, `system3 ack`" + `) and over MCP, so a
supervising agent can do whatever the dashboard does. Every action is
recorded in the audit log with its origin (` + "`tui`" + ` for the dashboard).
`)
	for _, s := range k.sections() {
		b.WriteString("\n## " + s.title + "\n\n")
		if s.note != "" {
			b.WriteString(s.note + "\n\n")
		}
		b.WriteString("| Keys | Action |\n| --- | --- |\n")
		for _, e := range s.keys {
			b.WriteString("| " + keyNames(e.b) + " | " + e.long + " |\n")
		}
	}
	return b.String()
}

// keyNames lists a binding's keys as code spans.
func keyNames(b key.Binding) string {
	var names []string
	for _, k := range b.Keys() {
		switch k {
		case " ":
			k = "space"
		case "|":
			k = `\|`
		}
		names = append(names, "`"+k+"`")
	}
	return strings.Join(names, " ")
}

// TestKeyMapHasNoClashes: within a mode, no key does two things.
func TestKeyMapHasNoClashes(t *testing.T) {
	k := newKeyMap()
	modes := map[string][]key.Binding{
		"main": {k.Nav.Up, k.Nav.Down, k.Nav.Top, k.Nav.Bottom, k.App.Focus, k.App.Filter, k.App.ClearFilter, k.App.Learnings, k.App.Help, k.App.Quit,
			k.Session.Zoom, k.Session.Compose, k.Session.Answer, k.Session.Yes, k.Session.No, k.Session.Interrupt, k.Session.Jump,
			k.Wakes.Ack, k.Wakes.AckAll, k.App.Spawn, k.Session.Link, k.Session.Remind, k.Session.Stop},
		"form":    {k.Form.Submit, k.Form.Next, k.Form.Prev, k.Form.Cancel, k.App.ForceQuit},
		"compose": {k.Compose.Send, k.Compose.Newline, k.Compose.Cancel, k.Compose.Prev, k.Compose.Next, k.Compose.Template, k.App.ForceQuit},
		"picker":  {k.Picker.Up, k.Picker.Down, k.Picker.Choose, k.Picker.Back, k.App.ForceQuit},
		"filter":  {k.Filter.Apply, k.Filter.Clear, k.App.ForceQuit},
		"learn":   {k.Learn.Up, k.Learn.Down, k.Learn.Refresh, k.Learn.Back, k.App.Help, k.App.Quit},
		"zoom": {k.Zoom.Up, k.Zoom.Down, k.Zoom.PageUp, k.Zoom.PageDown, k.Zoom.Top, k.Zoom.Bottom, k.Zoom.Back,
			k.Session.Compose, k.Session.Answer, k.Session.Yes, k.Session.No, k.Session.Interrupt, k.Session.Jump, k.Session.Stop, k.App.Quit},
	}
	for mode, bs := range modes {
		seen := map[string]string{}
		for _, b := range bs {
			for _, key := range b.Keys() {
				if mode != "main" && key == "ctrl+c" && b.Help().Desc == "quit" {
					continue
				}
				if other, ok := seen[key]; ok && other != b.Help().Desc {
					t.Errorf("%s: %q is both %q and %q", mode, key, other, b.Help().Desc)
				}
				seen[key] = b.Help().Desc
			}
		}
	}
}

// TestComponentKeyMapsAreDocumented: what each component says it takes
// (its KeyMap, which the help bar shows while it has the keyboard) is in
// the key map's documented sections (the help overlay and docs/keys.md),
// key for key, in every mode a component has.
func TestComponentKeyMapsAreDocumented(t *testing.T) {
	h := newHarness(t, newFixtureService(t), Options{Templates: []Template{{Name: "t", Text: "x"}}}, 100, 30)
	documented := map[string]bool{}
	for _, s := range h.m.keys.sections() {
		for _, d := range s.keys {
			for _, k := range d.b.Keys() {
				documented[k] = true
			}
		}
	}
	picking := h.m.compose
	picking.picking = true
	maps := map[string]help.KeyMap{
		"table": h.m.table.KeyMap(), "feed": h.m.feed.KeyMap(), "detail": h.m.detail.KeyMap(),
		"compose": h.m.compose.KeyMap(), "picker": picking.KeyMap(), "filter": h.m.filter.KeyMap(), "form": h.m.form.KeyMap(),
	}
	for name, km := range maps {
		bs := km.ShortHelp()
		for _, col := range km.FullHelp() {
			bs = append(bs, col...)
		}
		if len(bs) == 0 {
			t.Errorf("%s: an empty key map", name)
		}
		for _, b := range bs {
			for _, k := range b.Keys() {
				if !documented[k] {
					t.Errorf("%s takes %q (%s), which no section of the key map documents", name, k, b.Help().Desc)
				}
			}
		}
	}
	if _, ok := maps["picker"].(pickerKeys); !ok {
		t.Errorf("the compose box's key map while picking a template is %T, want the picker's keys", maps["picker"])
	}
}
