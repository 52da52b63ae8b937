package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tmux"
)

// LinksFile is the name of the file in the state dir that keeps the links
// between sessions and task lists.
const LinksFile = "links.json"

// Link is one link as kept in the state dir.
type Link struct {
	// Session is the tmux session name the link follows, or "" for a link
	// to one pane.
	Session string `json:"session,omitempty"`
	// Pane is the pane id of a link to one pane.
	Pane     string    `json:"pane,omitempty"`
	TaskList string    `json:"task_list"`
	By       string    `json:"by,omitempty"`
	At       time.Time `json:"at"`
}

// linkTable holds the links and the file they persist to (Config's
// LinksPath; "" keeps them in memory). Its own lock: it is read while the
// supervisor's lock is held, never the other way round.
type linkTable struct {
	path string
	log  *slog.Logger

	mu     sync.Mutex
	loaded bool
	links  []Link
}

type linksDoc struct {
	Version int    `json:"version"`
	Links   []Link `json:"links"`
}

// loadLocked reads the links file once. A missing file is no links; a
// damaged one is logged and set aside, so a bad file never stops the
// monitors.
func (t *linkTable) loadLocked() []Link {
	if t.loaded {
		return t.links
	}
	t.loaded = true
	if t.path == "" {
		return nil
	}
	b, err := os.ReadFile(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var doc linksDoc
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		t.log.Warn("links file unreadable; starting without links", "path", t.path, "err", err)
		_ = os.Rename(t.path, t.path+".bad")
		return nil
	}
	for _, l := range doc.Links {
		if api.ValidTaskListID(l.TaskList) == "" && (l.Session != "") != (l.Pane != "") {
			t.links = append(t.links, l)
		}
	}
	return t.links
}

// saveLocked writes the links file atomically.
func (t *linkTable) saveLocked() error {
	if t.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(linksDoc{Version: 1, Links: t.links}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return err
	}
	tmp := t.path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, t.path)
}

// set puts l in place of the link of the same session or pane (an empty
// task list only removes it) and saves the table; when it cannot be
// saved, nothing changes.
func (t *linkTable) set(l Link) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	links := slices.DeleteFunc(slices.Clone(t.loadLocked()), func(o Link) bool {
		return o.Session == l.Session && o.Pane == l.Pane
	})
	if l.TaskList != "" {
		links = append(links, l)
	}
	prev := t.links
	t.links = links
	if err := t.saveLocked(); err != nil {
		t.links = prev
		return err
	}
	return nil
}

// of returns the task list linked to a pane: a link to the pane itself
// first, then one to its session.
func (t *linkTable) of(p tmux.Pane) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var bySession string
	for _, l := range t.loadLocked() {
		switch {
		case l.Pane != "" && l.Pane == p.ID:
			return l.TaskList, true
		case l.Session != "" && l.Session == p.SessionName:
			bySession = l.TaskList
		}
	}
	return bySession, bySession != ""
}

// list returns every link, sessions first.
func (t *linkTable) list() []Link {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := slices.Clone(t.loadLocked())
	slices.SortFunc(out, func(a, b Link) int {
		return strings.Compare(a.Session+"\x00"+a.Pane, b.Session+"\x00"+b.Pane)
	})
	return out
}

// withLink puts a linked task list (and its progress) in place of what the
// agent's process said.
func (s *Supervisor) withLink(p tmux.Pane, pr probeResult) probeResult {
	id, ok := s.links.of(p)
	if !ok {
		return pr
	}
	pr.taskList, pr.tasks = id, nil
	if s.cfg.TaskProgress != nil {
		if tp, ok := s.cfg.TaskProgress(id); ok {
			pr.tasks = &tp
		}
	}
	return pr
}

// Links returns every link, sessions first.
func (s *Supervisor) Links() []Link { return s.links.list() }

// Link links a session or pane to a task list (or, with an empty task
// list, removes the link) and returns the session as it now shows. The
// link is kept in the state dir, so a restarted system3 keeps it, and the
// function UseLinked gave is told of it.
func (s *Supervisor) Link(ctx context.Context, req api.LinkRequest) (api.Session, error) {
	sess, err := s.link(req)
	if fn := s.linked.Load(); err == nil && fn != nil {
		(*fn)(ctx, req, sess)
	}
	return sess, err
}

// UseLinked has fn told of every link made or removed through Link, once
// it is kept: the orchestrator records follow the links
// (lifecycle.Manager.Linked), whichever face made them.
func (s *Supervisor) UseLinked(fn func(ctx context.Context, req api.LinkRequest, sess api.Session)) {
	s.linked.Store(&fn)
}

func (s *Supervisor) link(req api.LinkRequest) (api.Session, error) {
	id := strings.TrimSpace(req.TaskList)
	if id != "" {
		if why := api.ValidTaskListID(id); why != "" {
			return api.Session{}, fmt.Errorf("%w: %s", api.ErrBadRequest, why)
		}
	}
	sess, err := s.resolve(req.Target)
	if err != nil && (id != "" || req.Pane != "" || !errors.Is(err, api.ErrUnknownTarget)) {
		return api.Session{}, err
	}
	// Unlinking a session that is gone is allowed: its link is stale.
	stale := err != nil
	action := "link"
	if id == "" {
		action = "unlink"
	}
	if perr := s.checkLink(req, action, sess, stale); perr != nil {
		return api.Session{}, fmt.Errorf("%s %s: %w", action, req.Target, perr)
	}
	l := Link{TaskList: id, By: req.Origin, At: s.cfg.Clock()}
	switch {
	case req.Pane != "":
		l.Pane = sess.Pane
	case !stale:
		l.Session = sess.Session
	default:
		l.Session = strings.TrimSpace(req.Session)
	}
	if err := s.saveLink(req, action, l, sess.Pane); err != nil {
		return api.Session{}, err
	}
	if stale { // a stale link removed
		return api.Session{Session: l.Session, Options: []string{}, Evidence: api.Evidence{Lines: []string{}}}, nil
	}
	out := s.showLink(l, sess.Pane)
	select {
	case s.kick <- struct{}{}:
	default:
	}
	s.cfg.Logger.Info("task list "+action, "session", l.Session, "pane", l.Pane, "task_list", id, "origin", req.Origin)
	return out, nil
}

// checkLink applies the policy to a link or unlink. A stale link (its
// session is gone) touches no pane: it is not counted toward a rate.
func (s *Supervisor) checkLink(req api.LinkRequest, action string, sess api.Session, stale bool) error {
	acted, check := sess, s.cfg.Policy.Check
	if stale {
		acted, check = api.Session{Session: strings.TrimSpace(req.Session)}, s.cfg.Policy.CheckUncounted
	}
	return check(req.Origin, action, acted)
}

// saveLink keeps a link in the state dir and audits it, saved or not.
func (s *Supervisor) saveLink(req api.LinkRequest, action string, l Link, pane string) error {
	serr := s.links.set(l)
	e := api.AuditEntry{Time: l.At, Origin: req.Origin, Action: action, Target: req.Target.String(), Pane: pane, Sent: serr == nil, Result: "task list: " + l.TaskList}
	if l.TaskList == "" {
		e.Result = "task list link removed"
	}
	if serr != nil {
		e.Error = serr.Error()
	}
	if aerr := s.cfg.Audit.Write(e); aerr != nil {
		s.cfg.Logger.Warn("audit", "err", aerr)
	}
	if serr != nil {
		return fmt.Errorf("save task list links to %s: %w; check that the state dir is writable", s.cfg.LinksPath, serr)
	}
	return nil
}

// showLink puts a link in the sessions it covers at once, without waiting
// for their panes' next capture, and returns the session of pane as it
// now shows.
func (s *Supervisor) showLink(l Link, pane string) api.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out api.Session
	for _, st := range s.panes {
		if st.pane.ID != pane && (l.Session == "" || st.pane.SessionName != l.Session) {
			continue
		}
		prevSess := st.sess
		if l.TaskList != "" {
			pr := s.withLink(st.pane, probeResult{})
			st.sess.TaskList, st.sess.Tasks = pr.taskList, pr.tasks
		} else {
			st.sess.TaskList, st.sess.Tasks = "", nil
		}
		st.dirty = true // the next capture restores what the process says
		if st.sess.TaskList != prevSess.TaskList || !st.sess.Tasks.Equal(prevSess.Tasks) {
			s.publishLocked(api.Update{Kind: api.SessionChanged, Session: st.sess.Clone(), Previous: prevSess.State})
		}
		if st.pane.ID == pane {
			out = st.sess.Clone()
		}
	}
	return out
}
