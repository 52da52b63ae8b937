package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/remote"
)

func newAttachCmd(a *app) *cobra.Command {
	var stdio bool
	cmd := &cobra.Command{
		Use:   "attach --stdio",
		Short: "Relay standard input and output to this host's system3 daemon (for ssh)",
		Long: `Connect to the socket of the system3 serving this host's state dir (system3
serve, or a dashboard) and relay standard input and output to it byte for
byte, until either side closes. Another machine reaches this host's daemon
with

  ssh HOST system3 attach --stdio

which is what it runs for a host in its config's hosts: (see docs/remote.md).
Nothing listens on a network port: ssh carries the connection.

Exit status: 0 when the connection ended, 3 when no system3 daemon serves
this state dir (start one with system3 serve), 1 any other error.`,
		Example: `  ssh web1 system3 attach --stdio
  ssh web1 system3 --state-dir /srv/system3 attach --stdio`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !stdio {
				return errors.New("attach needs --stdio: it relays its standard input and output to this host's system3 daemon, as in `ssh HOST system3 attach --stdio`")
			}
			conn, err := ipc.Connect(cmd.Context(), a.SocketPath())
			if errors.Is(err, ipc.ErrNoDaemon) {
				return &exitError{code: remote.ExitNoDaemon, msg: "no system3 daemon on this host: run system3 serve there"}
			}
			if err != nil {
				return err
			}
			defer conn.Close()
			// Either side closing ends the relay: the daemon closes after
			// its reply, and the other end closing its input ends (cancels)
			// the call, as closing the socket does. A read of stdin still
			// blocked then ends with the process.
			inDone, outDone := make(chan struct{}), make(chan struct{})
			go func() {
				io.Copy(conn, a.stdin)
				close(inDone)
			}()
			go func() {
				io.Copy(a.term, conn)
				close(outDone)
			}()
			select {
			case <-inDone:
			case <-outDone:
			case <-cmd.Context().Done():
			}
			conn.Close()
			<-outDone
			return nil
		},
	}
	cmd.Flags().BoolVar(&stdio, "stdio", false, "relay standard input and output to the daemon's socket")
	return cmd
}
