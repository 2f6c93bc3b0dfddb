package mount

import (
	"net"
	"os"
)

// NotifyReady tells systemd (Type=notify units) that the mount serves, when it runs under systemd: it sends
// READY=1 to $NOTIFY_SOCKET. Elsewhere it does nothing.
func NotifyReady() error {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return nil
	}
	if sock[0] == '@' {
		sock = "\x00" + sock[1:] // an abstract socket
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte("READY=1\nSTATUS=serving\n"))
	return err
}
