package main

import "strings"

// The commands that talk to a backend's service need its SDK: Docker's client, Modal's, the CSI spec's gRPC, an
// S3 client. Linking them costs every command their packages' init (20 ms of a 40 ms start, Modal's protobuf
// descriptors most) and the mount daemon 30 MiB. So make builds two binaries of this one package: sessionfs,
// without them (tag nobackends: ls, find, exec, mount and the rest), and sessionfs-backends beside it, the whole
// CLI, which sessionfs runs in its place for these commands. A go install of cmd/sessionfs is the whole CLI.

// backendsBinary is the whole CLI's name, beside sessionfs; backendsMarker is in the environment sessionfs gives
// it, so that a sessionfs installed under that name fails instead of running itself without end.
const (
	backendsBinary = "sessionfs-backends"
	backendsMarker = "SESSIONFS_RAN_BACKENDS"
)

// docsCommand is the hidden command make docs runs: sessionfs-backends's too, as it writes every command's help
// (and its Markdown and man page writers are 1.5 ms of init).
const docsCommand = "__docs"

// backendCommands are the commands sessionfs leaves to sessionfs-backends, with the one line their help gives
// (the root's help lists them in both binaries).
var backendCommands = map[string]string{
	"run":        "Run a command for a session where the agent lives: on this host, in a container, or on Modal",
	"resume":     "Resume a conversation (by its uuid) or a session's newest one (by the session id)",
	"doctor":     "Check what sessionfs needs: FUSE, the store, the mount, inotify watches, Docker, Modal, the claude CLI",
	"sync":       "Sync a session with another machine's store (ssh), an S3 bucket, or its Modal Volume",
	"sync-serve": "Serve a session's folder to sessionfs sync over ssh (stdin and stdout; run by sync itself)",
	"csi":        "Serve sessions as Kubernetes/Nomad volumes: a CSI plugin (driver sessionfs.dev)",
}

// forBackends reports whether the command args name is one of backendCommands, or the manual's (every
// command's help): what sessionfs hands to sessionfs-backends whole.
func forBackends(args []string) bool {
	a := commandWord(args)
	_, ok := backendCommands[a]
	return ok || a == docsCommand
}

// commandWord is the command args name, as cobra finds it: past the root's flags, and past help or a completion
// request naming a command ("" when there is none).
func commandWord(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--store":
			i++ // its value
		case a == "help" || strings.HasPrefix(a, "__complete"), strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}
