//go:build !linux

package ipc

import "net"

// checkPeer relies on the socket's 0600 mode in a 0700 directory where the
// kernel offers no portable peer-credential call. The peer is unknown:
// hook events then need their session's token.
func checkPeer(net.Conn) (Peer, error) { return Peer{}, nil }
