//go:build !linux

package tmux

import "errors"

// ttyFeed needs Linux's inotify; elsewhere the watcher lists panes at
// every tick the server's read count allows (see ioReader).
type ttyFeed struct{}

func newTTYFeed() (*ttyFeed, error) {
	return nil, errors.New("terminal write events need Linux's inotify")
}

func (f *ttyFeed) sync([]Pane) (added, unwatched int)                     { return 0, 0 }
func (f *ttyFeed) watching(string) bool                                   { return false }
func (f *ttyFeed) drain(map[string]bool) (topology, lost bool, err error) { return false, false, nil }
func (f *ttyFeed) close()                                                 {}

func sameMountNamespace(int) bool { return false }
