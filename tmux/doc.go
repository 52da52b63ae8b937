// Package tmux is system3's only door to tmux: it lists and captures panes,
// watches a server for changes by listing panes (Watcher), sends text and
// keys into panes, and creates and kills sessions. Nothing else in system3
// builds tmux argv.
//
// Facts about tmux from 3.2 to 3.7c that shape this package:
//
//   - Every tmux server crash reachable from ordinary commands that system3
//     has met needs a control-mode client attached: a notification
//     deferred past kill-session (tmux/tmux#5243), a client notified while
//     it identifies (#4980, #5004), run-shell output (#5570), popups
//     (#5551). tmux notifies every control client of every session's
//     changes, so even one client per server is exposed. The Watcher
//     therefore attaches none by default; see WatcherOptions.Control.
//   - tmux 3.4 and later print command output through vis(3): a control
//     byte or a byte that is not UTF-8 becomes "\ooo" or a C escape, while a
//     backslash is printed as it is. Listings use a printable separator,
//     double backslashes in the format (s/// modifier) and read both forms
//     with one decoder (see recordFormat).
//   - A command client ("tmux list-panes") is a connection to the server's
//     socket speaking imsg messages whose layout and numbers are the same
//     from 3.2 to 3.7 (PROTOCOL_VERSION 8). Read-only commands speak it
//     directly (proto.go) rather than fork the binary; the rest fork, and
//     so does everything when SYSTEM3_TMUX_FORK=1.
//   - Session names are stored escaped (':' and '.' become '_', control
//     bytes octal, backslashes doubled), but window names given to
//     new-session -n or new-window -n, pane_current_path and
//     pane_current_command are not: they may hold any byte.
//
// Facts about tmux 3.3 and control mode (all checked against a real
// server; the tests keep them true):
//
//   - A control-mode client (tmux -C attach -t SESSION) receives %output only
//     for panes in windows linked to the session it is attached to, so the
//     Watcher keeps one control client per session and re-evaluates the set
//     on %sessions-changed. A bare "tmux -C" would create a session, so it is
//     never used.
//   - A control client that has not set its size with refresh-client -C never
//     affects window sizes, and Conn never sets one. Conn also attaches with
//     -f ignore-size, but that flag only helps while a normal client is
//     attached: a sized ignore-size client that is the only one attached
//     does resize windows. So never send refresh-client -C over a Conn.
//   - Replies to commands written by a control client arrive as
//     %begin/%end (or %error) blocks whose third field (flags) is 1. Blocks
//     with flags 0 come from commands tmux ran on the client's behalf: the
//     attach command itself and hooks (after-* hooks run right after the
//     command that fired them). Conn matches replies to commands in order
//     using only flags-1 blocks.
//   - Values that may hold any byte can contain tabs, newlines or the
//     separator. ListPanes therefore prefixes every string field with its
//     byte length (#{n:...}) instead of trusting a separator.
//   - send-keys -l and paste-buffer -r are byte-exact; paste-buffer -p only
//     adds bracketed-paste markers when the application asked for them.
//   - attach-session starts a server when none is running (which then reads
//     the user's configuration), so control clients are started with -N.
//   - display-message -t does not fail on a missing target (it silently
//     uses another pane), so single-pane queries use list-panes -t and pick
//     the pane by id.
package tmux
