package claudetest

import (
	"testing"

	"github.com/system3-dev/system3/internal/claudefake"
	"github.com/system3-dev/system3/internal/testsupport/clitest"
)

// The fake of the Anthropic Messages API lives in claudefake, which the
// system3 binary also carries (system3 demo --agent claude); these names
// keep the tests' spelling.
type (
	FakeAPI     = claudefake.API
	Rule        = claudefake.Rule
	Step        = claudefake.Step
	ToolCall    = claudefake.ToolCall
	APIError    = claudefake.APIError
	RequestKind = claudefake.RequestKind
	Request     = claudefake.Request
)

const (
	KindMain       = claudefake.KindMain
	KindCompact    = claudefake.KindCompact
	KindAux        = claudefake.KindAux
	KindOther      = claudefake.KindOther
	AuxText        = claudefake.AuxText
	CompactSummary = claudefake.CompactSummary
)

// The tool call builders (see claudefake's tools.go).
var (
	Tool           = claudefake.Tool
	Bash           = claudefake.Bash
	BashBackground = claudefake.BashBackground
	Write          = claudefake.Write
	Edit           = claudefake.Edit
	Read           = claudefake.Read
	TaskCreate     = claudefake.TaskCreate
	TaskUpdate     = claudefake.TaskUpdate
	ExitPlanMode   = claudefake.ExitPlanMode
	ErrorStatus    = claudefake.ErrorStatus
)

// NewFakeAPI starts a fake serving rules and stops it when the test ends;
// if the test failed, the requests it received are logged.
func NewFakeAPI(t testing.TB, rules ...Rule) *FakeAPI {
	t.Helper()
	f, err := claudefake.New(nil, rules...)
	if err != nil {
		t.Fatal(err)
	}
	clitest.Cleanup(t, "fake Anthropic API", f.Close, f.Summary)
	return f
}

// Question is one question of an AskUserQuestion call. It is claudetest's
// own type, not claudefake's, so that tests may write its options as
// unkeyed literals.
type Question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header"` // chip label, at most 12 characters
	Options     []Option `json:"options"`
	MultiSelect bool     `json:"multiSelect"`
}

// Option is one choice of a Question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// AskUserQuestion shows the CLI's multiple-choice question dialog.
func AskUserQuestion(qs ...Question) *ToolCall {
	return Tool("AskUserQuestion", struct {
		Questions []Question `json:"questions"`
	}{qs})
}
