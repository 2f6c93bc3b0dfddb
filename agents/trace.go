package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// A turn that leaves no trace is an error: an agent that answered and exited 0 while the session
// recorded nothing (a container's user that cannot write the session's transcripts, a config folder pointed
// elsewhere) loses the turn in silence. Where sessionfs starts an agent and the arguments ask it for a turn it
// records (a prompt to answer, a conversation to continue), the run compares the agent's Trace before and after
// (backends.Runner.Run): the same is an error.

// maxTraceEntries bounds the entries a trace looks at: a session's processes may make endless folders.
const maxTraceEntries = 200_000

// errTraceBound: more entries than a trace looks at; the run is not judged.
var errTraceBound = errors.New("too many entries to trace")

// Trace is what the agent has recorded in the session open as sess: each conversation file under its Records
// (transcripts, chat files, its database and log) with its size and modification time, summed. Two traces that
// differ: the agent recorded something between them.
func (a *Agent) Trace(sess *layout.Dir) (string, error) {
	var lines []string
	entries := 0
	for _, rec := range a.Records {
		d, err := sess.Sub(path.Join(a.Dir, rec))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			continue
		} else if err != nil {
			return "", err
		}
		err = d.Walk(func(rel string, st *unix.Stat_t) error {
			if entries++; entries > maxTraceEntries {
				return errTraceBound
			}
			if st.Mode&unix.S_IFMT == unix.S_IFREG && recorded(rel) {
				lines = append(lines, fmt.Sprintf("%s/%s %d %d.%d", rec, rel, st.Size, st.Mtim.Sec, st.Mtim.Nsec))
			}
			return nil
		})
		d.Close()
		if err != nil {
			return "", err
		}
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:]), nil
}

// recorded says whether a file is one an agent records conversations in: JSON lines, or a database and its log.
func recorded(name string) bool {
	for _, ext := range []string{".jsonl", ".json", ".db", ".db-wal", ".sqlite", ".sqlite-wal"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// Where returns the folders the agent records in, as the session's paths say them (for a message).
func (a *Agent) Where() string {
	var out []string
	for _, rec := range a.Records {
		out = append(out, path.Join(a.Dir, rec))
	}
	return strings.Join(out, ", ")
}

// TurnArgs are the arguments of the agents' CLIs that ask for a turn (AsksTurn): a flag alone, or a flag with its
// value (-p PROMPT, --resume ID, -pPROMPT, --resume=ID).
func TurnArgs(args []string, flags ...string) bool {
	for _, arg := range args {
		if arg == "--" {
			return false
		}
		for _, f := range flags {
			if arg == f || strings.HasPrefix(arg, f+"=") || len(f) == 2 && f[0] == '-' && strings.HasPrefix(arg, f) && !strings.HasPrefix(arg, "--") {
				return true
			}
		}
	}
	return false
}

// HelpOnly says whether args only ask the CLI for its help or version (no turn, whatever else they hold).
func HelpOnly(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == "-h" || a == "--help" || a == "-v" || a == "--version" || a == "-V"
	})
}
