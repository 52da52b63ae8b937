package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/mcpserver"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/audit"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/monitor/ipc"
	"github.com/system3-dev/system3/monitor/lifecycle"
	"github.com/system3-dev/system3/tasks"
	"github.com/system3-dev/system3/wake"
)

// mcpFlags are the MCP settings a command line may override.
type mcpFlags struct {
	listen    string
	tokenFile string
	readOnly  bool
	cmd       *cobra.Command
}

func (f *mcpFlags) register(cmd *cobra.Command, http bool) {
	f.cmd = cmd
	fl := cmd.Flags()
	if http {
		fl.StringVar(&f.listen, "listen", "", `address of the MCP server, host:port (default mcp.listen, else `+mcpserver.DefaultListen+`; "off": none)`)
		fl.StringVar(&f.tokenFile, "token-file", "", "`FILE` holding the bearer token clients must send (default mcp.token_file; system3 token makes one); required beyond loopback")
	}
	fl.BoolVar(&f.readOnly, "read-only", false, "offer only the read tools: no injecting, answering, interrupting or acknowledging; monitors this process runs refuse MCP actions from any process (default mcp.read_only)")
}

// mcpSettings are the resolved MCP settings of a command.
type mcpSettings struct {
	listen string // "" when off
	opts   mcpserver.Options
}

// mcpSettings resolves flags over config.yaml over defaults, and reads the
// token file.
func (a *app) mcpSettings(f *mcpFlags) (mcpSettings, error) {
	c := a.settings.File.MCP
	var s mcpSettings
	s.listen = c.Listen
	if f.listen != "" {
		s.listen = f.listen
	}
	if s.listen == "" {
		s.listen = mcpserver.DefaultListen
	}
	if strings.EqualFold(s.listen, "off") {
		s.listen = ""
	}
	tokenFile := c.TokenFile
	if f.tokenFile != "" {
		tokenFile = f.tokenFile
	}
	s.opts = mcpserver.Options{
		Version:      buildVersion(),
		Started:      time.Now(),
		ReadOnly:     c.ReadOnly,
		MaxSessions:  c.MaxSessions,
		AllowedHosts: c.AllowedHosts,
		Logger:       a.log,
	}
	if f.cmd != nil && f.cmd.Flags().Changed("read-only") {
		s.opts.ReadOnly = f.readOnly
		// Monitors this process runs refuse MCP writes from any process.
		a.readOnly = &f.readOnly
	}
	if ls := a.learnStore(); ls != nil {
		s.opts.Learn = ls
	}
	if tokenFile != "" {
		tok, err := readToken(config.ExpandHome(tokenFile, a.settings.Home))
		if err != nil {
			return s, err
		}
		s.opts.Token = tok
	}
	return s, nil
}

// policy is what MCP clients may do, for monitors this process runs:
// mcp.allow_sessions, mcp.read_only (or --read-only) and
// mcp.inject_per_minute, checked by the service on every action, whichever
// process the client reached.
func (a *app) policy() (*monitor.Policy, error) {
	c := a.settings.File.MCP
	cfg := monitor.PolicyConfig{AllowSessions: c.AllowSessions, ReadOnly: c.ReadOnly, PerMinute: c.InjectPerMinute}
	if a.readOnly != nil {
		cfg.ReadOnly = *a.readOnly
	}
	p, err := monitor.NewPolicy(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", a.settings.ConfigPath, err)
	}
	return p, nil
}

// minTokenLen is the shortest bearer token accepted from a file.
const minTokenLen = 16

// readToken reads a bearer token file, refusing one others can read.
func readToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w (create one with `system3 token`)", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s can be read by other users (mode %04o); run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minTokenLen || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("token file %s must hold one token of at least %d characters and no spaces; make one with `system3 token`", path, minTokenLen)
	}
	return tok, nil
}

func newMCPCmd(a *app) *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Speak MCP on stdin/stdout, for clients that launch their servers",
		Long: `Run system3's MCP server on standard input and output, for MCP clients that
start their servers themselves, like Claude Desktop:

  {"mcpServers": {"system3": {"command": "system3", "args": ["mcp"]}}}

When a system3 already monitors this state dir (the dashboard or system3
serve), mcp uses its monitors; otherwise it runs its own for as long as the
client keeps it. Standard output carries only MCP messages: logs go to
system3.log in the state dir. The tools, resources and security settings are
those of the HTTP server (see docs/mcp.md); --read-only offers only the read
tools.`,
		Example: `  system3 mcp
  claude mcp add system3 -- system3 mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := a.mcpSettings(&f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			svc := &failoverService{open: a.openService, log: a}
			defer svc.close()
			if err := svc.connect(ctx); err != nil {
				return err
			}
			if set.opts.Lifecycle, err = a.mcpLifecycle(svc); err != nil {
				return err
			}
			defer a.withCoach(ctx, &set.opts, svc)()
			defer a.withHosts(&set.opts)()
			srv, err := mcpserver.New(a.fleet(svc), set.opts)
			if err != nil {
				return err
			}
			defer srv.Close()
			return srv.ServeStdio(ctx, a.stdin, a.stdout)
		},
	}
	f.register(cmd, false)
	return cmd
}

// failoverService is the service `system3 mcp` uses: the monitors of the
// system3 that serves this state dir, or its own. When the daemon it uses
// goes away (the dashboard is closed), it opens the service again, so a
// client that launched system3 once keeps working.
type failoverService struct {
	open func(ctx context.Context) (monitor.Service, func() error, error)
	log  *app

	mu      sync.Mutex
	svc     monitor.Service
	closeFn func() error
}

func (f *failoverService) connect(ctx context.Context) error {
	svc, closeFn, err := f.open(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.svc, f.closeFn = svc, closeFn
	f.mu.Unlock()
	return nil
}

func (f *failoverService) current() monitor.Service {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.svc
}

func (f *failoverService) close() {
	f.mu.Lock()
	closeFn := f.closeFn
	f.svc, f.closeFn = nil, nil
	f.mu.Unlock()
	if closeFn != nil {
		f.log.release(closeFn)
	}
}

// gone reports an error that means the daemon used is no more.
func gone(err error) bool {
	return errors.Is(err, ipc.ErrConnLost) || errors.Is(err, ipc.ErrNoDaemon)
}

// reopen replaces a vanished daemon's service, once per failure.
func (f *failoverService) reopen(ctx context.Context, failed monitor.Service) (monitor.Service, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.svc != failed && f.svc != nil {
		return f.svc, nil // another call has reopened it
	}
	f.log.log.Info("mcp: the system3 serving this state dir went away; opening the service again")
	if f.closeFn != nil {
		_ = f.closeFn()
	}
	svc, closeFn, err := f.open(ctx)
	if err != nil {
		f.svc, f.closeFn = nil, nil
		return nil, err
	}
	f.svc, f.closeFn = svc, closeFn
	return svc, nil
}

// do runs call on the service, once more on a reopened one if the daemon
// went away.
func do[T any](f *failoverService, ctx context.Context, call func(monitor.Service) (T, error)) (T, error) {
	return retrying(f, ctx, gone, call)
}

// retrying runs call, and runs it again on a reopened service when its
// error passes again.
func retrying[T any](f *failoverService, ctx context.Context, again func(error) bool, call func(monitor.Service) (T, error)) (T, error) {
	svc := f.current()
	if svc == nil {
		var err error
		if svc, err = f.reopen(ctx, nil); err != nil {
			var zero T
			return zero, err
		}
	}
	v, err := call(svc)
	if again(err) && ctx.Err() == nil {
		if svc, rerr := f.reopen(ctx, svc); rerr == nil {
			return call(svc)
		}
	}
	return v, err
}

func (f *failoverService) Snapshot(ctx context.Context) (monitor.Snapshot, error) {
	return do(f, ctx, func(s monitor.Service) (monitor.Snapshot, error) { return s.Snapshot(ctx) })
}

func (f *failoverService) Watch(ctx context.Context) (<-chan monitor.Update, error) {
	return do(f, ctx, func(s monitor.Service) (<-chan monitor.Update, error) { return s.Watch(ctx) })
}

func (f *failoverService) SubscribeWakes(ctx context.Context, fl wake.Filter) (<-chan wake.Message, error) {
	return do(f, ctx, func(s monitor.Service) (<-chan wake.Message, error) { return s.SubscribeWakes(ctx, fl) })
}

func (f *failoverService) Hook(ctx context.Context, ev hooks.Event) error {
	_, err := do(f, ctx, func(s monitor.Service) (struct{}, error) { return struct{}{}, s.Hook(ctx, ev) })
	return err
}

func (f *failoverService) Wakes(ctx context.Context, fl wake.Filter) ([]wake.Event, error) {
	return do(f, ctx, func(s monitor.Service) ([]wake.Event, error) { return s.Wakes(ctx, fl) })
}

func (f *failoverService) WaitWake(ctx context.Context, fl wake.Filter) (wake.Event, error) {
	return do(f, ctx, func(s monitor.Service) (wake.Event, error) { return s.WaitWake(ctx, fl) })
}

func (f *failoverService) Ack(ctx context.Context, id, by string) (wake.Event, error) {
	return do(f, ctx, func(s monitor.Service) (wake.Event, error) { return s.Ack(ctx, id, by) })
}

func (f *failoverService) AckAll(ctx context.Context, by string) ([]wake.Event, error) {
	return do(f, ctx, func(s monitor.Service) ([]wake.Event, error) { return s.AckAll(ctx, by) })
}

func (f *failoverService) Preview(ctx context.Context, req monitor.PreviewRequest) (monitor.Preview, error) {
	return do(f, ctx, func(s monitor.Service) (monitor.Preview, error) { return s.Preview(ctx, req) })
}

func (f *failoverService) TaskLists(ctx context.Context, id string) ([]tasks.ListDoc, error) {
	return do(f, ctx, func(s monitor.Service) ([]tasks.ListDoc, error) { return s.TaskLists(ctx, id) })
}

func (f *failoverService) Task(ctx context.Context, req monitor.TaskRequest) (tasks.TaskDoc, error) {
	return do(f, ctx, func(s monitor.Service) (tasks.TaskDoc, error) { return s.Task(ctx, req) })
}

// The actions are not retried: a lost connection may have lost the reply
// of an action that happened.

func (f *failoverService) Inject(ctx context.Context, req monitor.InjectRequest) (monitor.ActionResult, error) {
	return doOnce(f, ctx, func(s monitor.Service) (monitor.ActionResult, error) { return s.Inject(ctx, req) })
}

func (f *failoverService) Answer(ctx context.Context, req monitor.AnswerRequest) (monitor.ActionResult, error) {
	return doOnce(f, ctx, func(s monitor.Service) (monitor.ActionResult, error) { return s.Answer(ctx, req) })
}

func (f *failoverService) Interrupt(ctx context.Context, req monitor.InterruptRequest) (monitor.ActionResult, error) {
	return doOnce(f, ctx, func(s monitor.Service) (monitor.ActionResult, error) { return s.Interrupt(ctx, req) })
}

func (f *failoverService) SendKeys(ctx context.Context, req monitor.KeysRequest) (monitor.ActionResult, error) {
	return doOnce(f, ctx, func(s monitor.Service) (monitor.ActionResult, error) { return s.SendKeys(ctx, req) })
}

// Link is idempotent: the same link made twice is one link.
func (f *failoverService) Link(ctx context.Context, req monitor.LinkRequest) (monitor.Session, error) {
	return do(f, ctx, func(s monitor.Service) (monitor.Session, error) { return s.Link(ctx, req) })
}

// Allow asks the policy of the process that runs the monitors; an action
// that follows goes there too, so it is retried like a read.
func (f *failoverService) Allow(ctx context.Context, req monitor.AllowRequest) error {
	_, err := do(f, ctx, func(s monitor.Service) (struct{}, error) { return struct{}{}, s.Allow(ctx, req) })
	return err
}

func (f *failoverService) Audit(ctx context.Context, e audit.Entry) error {
	_, err := do(f, ctx, func(s monitor.Service) (struct{}, error) { return struct{}{}, s.Audit(ctx, e) })
	return err
}

// doOnce runs an action; when the daemon is found gone before the action
// could be sent (no connection at all), it reopens and sends it there.
func doOnce[T any](f *failoverService, ctx context.Context, call func(monitor.Service) (T, error)) (T, error) {
	return retrying(f, ctx, func(err error) bool { return errors.Is(err, ipc.ErrNoDaemon) }, call)
}

var (
	_ mcpserver.Service = (*failoverService)(nil)
	_ lifecycle.Service = (*failoverService)(nil)
)
