package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every row says everything a consumer reads from it.
func TestReasonTableRowsAreWhole(t *testing.T) {
	seen := map[Reason]bool{}
	for _, row := range ReasonTable() {
		r := row.Reason
		if seen[r] {
			t.Errorf("%s has two rows", r)
		}
		seen[r] = true
		if row.Label == "" || row.What == "" || row.Raised == "" || row.Resolved == "" || row.Suggest == nil {
			t.Errorf("%s: a row needs a label, what, raised, resolved and a suggestion: %+v", r, row)
		}
		if row.Priority < 1 || row.Priority > 5 {
			t.Errorf("%s: priority %d is not ntfy's 1 to 5", r, row.Priority)
		}
		if row.Urgency > UrgencyCritical {
			t.Errorf("%s: urgency %d", r, row.Urgency)
		}
		if row.State != "" && !row.State.Valid() {
			t.Errorf("%s: state %q is no state", r, row.State)
		}
		if (row.Changed == nil) != (row.Same == nil) {
			t.Errorf("%s: a row that tells another condition by Same says why with Changed, and only then", r)
		}
		if !row.NeedsPerson && row.State != "" {
			t.Errorf("%s: a state's condition needs a person", r)
		}
		// Every suggestion names where, whatever the session.
		for _, sess := range []Session{{}, {Kind: "permission"}, {Kind: "rate_limited", Detail: "resets 8pm"}, {Kind: KindAutoResume, ResetsAt: time.Unix(1e9, 0)}} {
			c := SuggestContext{Agent: "claude", Where: "main:0.0 (pane %1)", Now: time.Unix(1e9, 0), Resume: "continue"}
			if s := row.Suggest(sess, c); !strings.Contains(s, c.Where) {
				t.Errorf("%s: suggestion %q does not say where", r, s)
			}
		}
	}
	if !slices.Equal(Reasons(), func() []Reason {
		var rs []Reason
		for _, row := range ReasonTable() {
			rs = append(rs, row.Reason)
		}
		return rs
	}()) {
		t.Error("Reasons is not the table's order")
	}
	for _, r := range PersonReasons() {
		if !r.NeedsPerson() || !r.Known() {
			t.Errorf("%s listed as needing a person", r)
		}
	}
	if Reason("from_a_newer_system3").Known() || !Reason("from_a_newer_system3").NeedsPerson() {
		t.Error("an unknown reason is unknown, and needs a person")
	}
}

func TestSameConditionByRow(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2026, 11, 29, h, 0, 0, 0, time.UTC) }
	limit := ReasonUsageLimit.Info()
	if !limit.Same(Session{}, Session{ResetsAt: at(20)}) {
		t.Error("a limit whose reset was not known is the same limit once it is")
	}
	if limit.Same(Session{ResetsAt: at(20)}, Session{ResetsAt: at(21)}) {
		t.Error("another reset is another limit")
	}
	if got := limit.Changed(Session{ResetsAt: at(21)}, at(19)); !strings.HasPrefix(got, "another usage limit (") {
		t.Errorf("changed = %q", got)
	}
	prompt := ReasonAwaitingInput.Info()
	if prompt.Same(Session{Prompt: "pa"}, Session{Prompt: "pb"}) || !prompt.Same(Session{Prompt: "pa"}, Session{Prompt: "pa"}) {
		t.Error("a prompt is the same prompt only while its identity is")
	}
}

// docs/wakes.md's table of reasons says what the rows say.
func TestReasonTableIsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "wakes.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (.*) \\| (yes|no) \\| (.*) \\|$")
	documented := map[Reason][]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		documented[Reason(m[1])] = m[2:]
	}
	for _, info := range ReasonTable() {
		d, ok := documented[info.Reason]
		if !ok {
			t.Errorf("docs/wakes.md's table of reasons has no row for %s", info.Reason)
			continue
		}
		needs := map[bool]string{true: "yes", false: "no"}[info.NeedsPerson]
		if d[0] != info.Raised || d[1] != needs || d[2] != info.Resolved {
			t.Errorf("docs/wakes.md says of %s: raised %q, needs a person %q, resolved %q; its row: %q, %q, %q",
				info.Reason, d[0], d[1], d[2], info.Raised, needs, info.Resolved)
		}
		delete(documented, info.Reason)
	}
	for r := range documented {
		t.Errorf("docs/wakes.md documents %s, which no row has", r)
	}
}

// What a reason means is said in its row only: no product code outside
// this package switches over reasons (a new reason would be missing from
// such a switch, as budget_exceeded once was from the notifications').
func TestNoSwitchOverReasonsOutsideTheTable(t *testing.T) {
	eachProductFile(t, parser.SkipObjectResolution, func(fset *token.FileSet, _ string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				if name := reasonConst(e); name != "" && f.Name.Name != "api" {
					t.Errorf("%s: a switch over wake reasons (case %s): read the reason's row (api.Reason.Info) instead", fset.Position(e.Pos()), name)
				}
			}
			return true
		})
	})
}

// reasonConst is the name of a Reason constant e names (api.ReasonX), or "".
func reasonConst(e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "api" || !strings.HasPrefix(sel.Sel.Name, "Reason") {
		return ""
	}
	return "api." + sel.Sel.Name
}
