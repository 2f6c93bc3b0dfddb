package text

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// lineReader reads an agent that appends one JSON object a line to a file per conversation (Codex, Qwen, pi): it
// resumes at a byte offset. line passes the entries of one line (its own state between lines is per read). A
// conversation of several files (agents.Files.Parts: Codex's rollouts of a thread) reads them one after the
// other, each resumed at its own offset, an entry's Offset counting from the start of the first; a compressed
// one is read whole once (it is not written to; the agent decompresses it to write on).
type lineReader struct {
	agent *agents.Agent
	start func() func(b []byte, off int64, fn func(Entry) error) error
}

func (r lineReader) read(sess *layout.Dir, c agents.Conversation, from position, fn func(Entry) error) (position, error) {
	rel, err := relOf(sess, c)
	if err != nil {
		return from, err
	}
	line := r.start()
	partial := from.subs == nil // a follower waits for a last line's newline
	if r.agent.Files == nil || !r.agent.Files.Parts {
		from.main, err = readLines(sess, rel, from.main, 0, partial, line, fn)
		return from, err
	}
	rels := r.agent.PartsOf(sess, c)
	if len(rels) == 0 {
		rels = []string{rel} // gone: its open says so
	}
	if from.parts == nil {
		from.parts = map[string]int64{}
	}
	base := int64(0)
	for _, rel := range rels {
		key := agents.PlainName(path.Base(rel)) // the same file, compressed or not, archived or not
		off, seen := from.parts[key]
		if seen && strings.HasSuffix(rel, agents.Compressed) {
			base += off
			continue
		}
		end, err := readLines(sess, rel, off, base, partial, line, fn)
		if errors.Is(err, fs.ErrNotExist) && !partial {
			end, err = off, nil // moved since it was listed (archived, compressed): the next read finds it
		}
		from.parts[key] = end
		if err != nil {
			return from, err
		}
		base += end
	}
	return from, nil
}

// readLines passes the entries of file rel's lines from offset off on, their offsets base past their own, and
// returns where it stopped. A compressed file that cannot be read on is a Note, and the end of it.
func readLines(sess *layout.Dir, rel string, off, base int64, partial bool, line func([]byte, int64, func(Entry) error) error, fn func(Entry) error) (int64, error) {
	f, err := agents.OpenFile(sess, rel)
	if err != nil {
		return off, err
	}
	defer f.Close()
	end := off
	if err = f.Skip(off); err == nil {
		end, err = scanLines(f.Reader, off, partial, func(b []byte, o, n int64) error {
			if b == nil {
				return fn(tooLong(base+o, n, ""))
			}
			return line(b, base+o, fn)
		})
	}
	if errors.Is(err, agents.ErrCompressed) {
		return end, fn(Entry{Kind: Note, Offset: base + end,
			Text: Safe(fmt.Sprintf("(the rest of %s left out: %v)", path.Base(rel), err), MaxText)})
	}
	return end, err
}
