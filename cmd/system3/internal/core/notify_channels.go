package core

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake/notify"
)

// ChannelFace says which channels a process runs and what it can offer
// them: the process that runs the monitors pushes; a dashboard has a
// terminal for OSC escapes; inside tmux, Focus switches the operator's
// client.
type ChannelFace struct {
	Push     bool
	Desktop  bool
	Terminal io.Writer
}

// NotifyTargets builds the configured channels with their routes; an
// empty list when none is configured.
func (a *App) NotifyTargets(face ChannelFace, defaultReasons []api.Reason) ([]notify.Target, error) {
	cfg := a.Settings.File.Notify
	route := func(key string, r config.NotifyRoute) (notify.Route, error) {
		out := notify.Route{Sessions: r.Sessions, Reasons: defaultReasons}
		if len(r.Reasons) > 0 {
			out.Reasons = nil
			for _, x := range r.Reasons {
				if !api.Reason(x).Known() {
					return out, fmt.Errorf("notify.%s.reasons: unknown wake reason %q (known: %s)", key, x, reasonList())
				}
				out.Reasons = append(out.Reasons, api.Reason(x))
			}
		}
		if err := out.Validate(); err != nil {
			return out, fmt.Errorf("notify.%s.sessions: %w", key, err)
		}
		return out, nil
	}
	var ts []notify.Target
	if face.Desktop {
		d, err := a.desktopChannel(cfg.Desktop, face.Terminal)
		if err != nil {
			return nil, err
		}
		if d != nil {
			r, err := route("desktop", cfg.Desktop.NotifyRoute)
			if err != nil {
				return nil, err
			}
			ts = append(ts, notify.Target{Channel: d, Route: r})
		}
	}
	if !face.Push {
		return ts, nil
	}
	links, err := a.notifyLinks()
	if err != nil {
		return nil, err
	}
	if cfg.Ntfy.URL != "" {
		n := &notify.Ntfy{URL: cfg.Ntfy.URL, Token: cfg.Ntfy.Token, Links: links, Priority: map[api.Reason]int{}}
		for k, v := range cfg.Ntfy.Priority {
			if !api.Reason(k).Known() || v < 1 || v > 5 {
				return nil, fmt.Errorf("notify.ntfy.priority: %s: %d: use a wake reason (%s) and a priority from 1 to 5", k, v, reasonList())
			}
			n.Priority[api.Reason(k)] = v
		}
		if _, _, err := n.Build(notify.Sample()); err != nil {
			return nil, err
		}
		r, err := route("ntfy", cfg.Ntfy.NotifyRoute)
		if err != nil {
			return nil, err
		}
		ts = append(ts, notify.Target{Channel: n, Route: r, Push: true})
	}
	if cfg.Webhook.URL != "" {
		r, err := route("webhook", cfg.Webhook.NotifyRoute)
		if err != nil {
			return nil, err
		}
		ts = append(ts, notify.Target{Channel: &notify.Webhook{URL: cfg.Webhook.URL, Links: links}, Route: r, Push: true})
	}
	return ts, nil
}

// notifyLinks are the links pushes carry, when notify.ntfy.actions_url
// says where the phone reaches system3.
func (a *App) notifyLinks() (*notify.Links, error) {
	base := a.Settings.File.Notify.Ntfy.ActionsURL
	if base == "" {
		return nil, nil
	}
	s, err := notify.LoadSigner(a.Settings.StateDir)
	if err != nil {
		return nil, err
	}
	return &notify.Links{Base: base, Signer: s}, nil
}

// desktopChannel is the desktop channel, or nil when it is off (or, on
// auto, when there is no session bus and no macOS).
func (a *App) desktopChannel(cfg config.NotifyDesktop, terminal io.Writer) (*notify.Desktop, error) {
	d := &notify.Desktop{Log: a.Log}
	switch cfg.OSC {
	case "", "off":
	case "9":
		d.OSC = notify.OSC9
	case "777":
		d.OSC = notify.OSC777
	default:
		return nil, fmt.Errorf("notify.desktop.osc: %q: use 9, 777 or off", cfg.OSC)
	}
	if d.OSC != notify.OSCOff && terminal != nil {
		d.Terminal = terminal
	}
	op, inTmux := tmux.OperatorFromEnv(a.Getenv)
	d.InTmux = inTmux
	if inTmux && op.SameServer(a.TmuxServer(), os.Getuid(), a.Getenv) {
		d.Focus = op.SwitchTo
	}
	switch cfg.Enabled {
	case "", "auto":
		if a.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" && runtime.GOOS != "darwin" {
			d.NoSystem = true
		}
	case "on":
	case "off":
		d.NoSystem = true
	default:
		return nil, fmt.Errorf("notify.desktop.enabled: %q: use auto, on or off", cfg.Enabled)
	}
	if d.NoSystem && d.Terminal == nil {
		return nil, nil
	}
	d.BusAddress = a.Getenv("DBUS_SESSION_BUS_ADDRESS")
	return d, nil
}

// newDispatcher builds the dispatcher of the configured channels; nil
// when there are none.
func (a *App) newDispatcher(face ChannelFace, defaultReasons []api.Reason, onProblem func(string)) (*notify.Dispatcher, error) {
	ts, err := a.NotifyTargets(face, defaultReasons)
	if err != nil || len(ts) == 0 {
		return nil, err
	}
	cfg := a.Settings.File.Notify
	q, err := notify.ParseQuietHours(cfg.QuietHours.From, cfg.QuietHours.To)
	if err != nil {
		return nil, err
	}
	window := time.Duration(cfg.DigestWindow)
	return notify.New(notify.Config{Targets: ts, StateDir: a.Settings.StateDir, Quiet: q, DigestWindow: window, OnProblem: onProblem, Log: a.Log})
}

// problemSetter is the part of the supervisor that shows a problem in the
// snapshot (the dashboard header, status, the web page).
type problemSetter interface {
	SetProblem(source, msg string)
}

// problemReporter reports the dispatcher's problems on svc when it can.
func problemReporter(svc any, a *App) func(string) {
	ps, ok := svc.(problemSetter)
	return func(msg string) {
		if ok {
			ps.SetProblem("notify", msg)
		}
		if msg != "" {
			a.Log.Warn("notifications", "problem", msg)
		}
	}
}
