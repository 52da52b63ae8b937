package monitor

import (
	"slices"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// The decide stage as a table: from a previous and a current session (and
// the pane's facts) to the wakes resolved and raised, without tmux.
func TestDecideTable(t *testing.T) {
	now := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return time.Date(2026, 11, 29, h, 10, 0, 0, time.UTC) }
	s := func(state api.State, mods ...func(*api.Session)) api.Session {
		sess := api.Session{Agent: "claude", Pane: "%1", State: state}
		for _, m := range mods {
			m(&sess)
		}
		return sess
	}
	prompt := func(id string) func(*api.Session) { return func(s *api.Session) { s.Prompt = id } }
	resets := func(t time.Time) func(*api.Session) { return func(s *api.Session) { s.ResetsAt = t } }
	dead := func(s *api.Session) { s.Evidence.Rule = api.RulePaneDead }
	shell := func(s *api.Session) { s.Agent = api.AgentShell }
	type clr = clearing
	cases := []struct {
		name      string
		prev, cur api.Session
		facts     paneFacts
		clear     []clr
		raise     api.Reason
	}{
		{"a prompt shows", s(api.Working), s(api.AwaitingInput, prompt("pa")), paneFacts{}, nil, api.ReasonAwaitingInput},
		{"the same prompt redrawn", s(api.AwaitingInput, prompt("pa")), s(api.AwaitingInput, prompt("pa")), paneFacts{}, nil, ""},
		{"another prompt", s(api.AwaitingInput, prompt("pa")), s(api.AwaitingInput, prompt("pb")), paneFacts{},
			[]clr{{api.ReasonAwaitingInput, "the prompt changed"}}, api.ReasonAwaitingInput},
		{"a prompt the policy holds", s(api.Working), s(api.AwaitingInput, prompt("pa")), paneFacts{held: true}, nil, ""},
		{"a prompt a hook announced: no wake until it is drawn", s(api.Working), s(api.AwaitingInput), paneFacts{}, nil, ""},
		{"the announced prompt drawn", s(api.AwaitingInput), s(api.AwaitingInput, prompt("pa")), paneFacts{},
			[]clr{{api.ReasonAwaitingInput, "the prompt changed"}}, api.ReasonAwaitingInput},
		{"answered", s(api.AwaitingInput, prompt("pa")), s(api.Working), paneFacts{},
			[]clr{{api.ReasonAwaitingInput, "the agent moved on (now working)"}}, ""},
		{"an error loop begins", s(api.Error), s(api.ErrorLoop), paneFacts{},
			[]clr{{api.ReasonAPIError, "the agent moved on (now error_loop)"}}, api.ReasonErrorLoopDetected},
		{"an error loop goes on", s(api.ErrorLoop), s(api.ErrorLoop), paneFacts{}, nil, ""},
		{"an error ends", s(api.Error), s(api.Idle), paneFacts{}, []clr{{api.ReasonAPIError, "the agent moved on (now idle)"}}, ""},
		{"a usage limit", s(api.Working), s(api.RateLimited, resets(at(20))), paneFacts{}, nil, api.ReasonUsageLimit},
		{"its reset read later", s(api.RateLimited), s(api.RateLimited, resets(at(20))), paneFacts{}, nil, ""},
		{"another limit", s(api.RateLimited, resets(at(20))), s(api.RateLimited, resets(at(21))), paneFacts{},
			[]clr{{api.ReasonUsageLimit, "another usage limit (resets 21:10 (in 2h 10m))"}}, api.ReasonUsageLimit},
		{"a limit left while system3 types its continue", s(api.RateLimited, resets(at(20))), s(api.Working), paneFacts{resuming: true}, nil, ""},
		{"a limit left", s(api.RateLimited, resets(at(20))), s(api.Working), paneFacts{},
			[]clr{{api.ReasonUsageLimit, "the agent moved on (now working)"}}, ""},
		{"an agent's pane died", s(api.Working), s(api.Exited, dead), paneFacts{}, nil, api.ReasonWorkerFailed},
		{"an agent's pane died after its goodbye", s(api.Working), s(api.Exited, dead), paneFacts{cleanExit: true}, nil, ""},
		{"an agent left its shell: later", s(api.Working), s(api.Exited), paneFacts{}, nil, ""},
		{"a shell's pane died", s(api.Idle, shell), s(api.Exited, dead, shell), paneFacts{}, []clr{{api.ReasonSessionIdle, "the agent moved on (now exited)"}}, ""},
		{"the agent is back", s(api.Exited), s(api.Working), paneFacts{}, []clr{{api.ReasonWorkerFailed, "the agent moved on (now working)"}}, ""},
		{"idle ends", s(api.Idle), s(api.Working), paneFacts{}, []clr{{api.ReasonSessionIdle, "the agent moved on (now working)"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decide(c.prev, c.cur, c.facts, now)
			if !slices.Equal(d.clear, c.clear) || d.raise != c.raise {
				t.Errorf("decide = clear %v, raise %q; want clear %v, raise %q", d.clear, d.raise, c.clear, c.raise)
			}
		})
	}
}

// The decisions time takes: a state raises its wake once it has lasted
// its grace, and is done with then.
func TestDecideLateTable(t *testing.T) {
	g := graces{err: 30 * time.Second, idle: 10 * time.Minute, exit: 5 * time.Second, prompt: 2 * time.Second}
	s := func(state api.State, agent, kind string) api.Session {
		return api.Session{Agent: agent, State: state, Kind: kind}
	}
	cases := []struct {
		name  string
		cur   api.Session
		age   time.Duration
		facts paneFacts
		raise api.Reason
		done  bool
	}{
		{"an error within its grace", s(api.Error, "claude", "api_error"), 29 * time.Second, paneFacts{}, "", false},
		{"an error past its grace", s(api.Error, "claude", "api_error"), 30 * time.Second, paneFacts{}, api.ReasonAPIError, true},
		{"a shell's failed command", s(api.Error, api.AgentShell, "command"), time.Hour, paneFacts{}, "", false},
		{"an agent idle long", s(api.Idle, "claude", ""), 10 * time.Minute, paneFacts{}, api.ReasonSessionIdle, true},
		{"a shell idle long", s(api.Idle, api.AgentShell, ""), time.Hour, paneFacts{}, "", false},
		{"an agent gone without its goodbye", s(api.Exited, "codex", "process_gone"), 5 * time.Second, paneFacts{}, api.ReasonWorkerFailed, true},
		{"an agent gone with its goodbye", s(api.Exited, "codex", "process_gone"), 5 * time.Second, paneFacts{cleanExit: true}, "", true},
		{"an agent just gone", s(api.Exited, "codex", "process_gone"), time.Second, paneFacts{}, "", false},
		{"working", s(api.Working, "claude", ""), time.Hour, paneFacts{}, "", false},
		{"a prompt a hook announced, not drawn yet", s(api.AwaitingInput, "claude", "permission"), time.Second, paneFacts{}, "", false},
		{"a prompt a hook announced, never drawn", s(api.AwaitingInput, "claude", "permission"), 2 * time.Second, paneFacts{}, api.ReasonAwaitingInput, true},
		{"a prompt a hook announced, the policy holding it", s(api.AwaitingInput, "claude", "permission"), time.Hour, paneFacts{held: true}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raise, done := decideLate(c.cur, c.age, c.facts, g)
			if raise != c.raise || done != c.done {
				t.Errorf("decideLate = %q, %v; want %q, %v", raise, done, c.raise, c.done)
			}
		})
	}
}
