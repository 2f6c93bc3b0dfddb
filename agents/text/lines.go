package text

import (
	"io"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// lineReader reads an agent that appends one JSON object a line to one file per conversation (Codex, Qwen): it
// resumes at a byte offset. line passes the entries of one line (its own state between lines is per read).
type lineReader struct {
	start func() func(b []byte, off int64, fn func(Entry) error) error
}

func (r lineReader) read(sess *layout.Dir, c agents.Conversation, from position, fn func(Entry) error) (position, error) {
	rel, err := relOf(sess, c)
	if err != nil {
		return from, err
	}
	f, err := sess.OpenRegular(rel, -1)
	if err != nil {
		return from, err
	}
	defer f.Close()
	if _, err := f.Seek(from.main, io.SeekStart); err != nil {
		return from, err
	}
	line := r.start()
	following := from.subs != nil
	from.main, err = scanLines(f, from.main, !following, func(b []byte, off, n int64) error {
		if b == nil {
			return fn(tooLong(off, n, ""))
		}
		return line(b, off, fn)
	})
	return from, err
}
