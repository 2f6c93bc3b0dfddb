package nodes

import (
	"strings"
	"sync"
	"syscall"
	"time"
)

// removalGap is how long after a conversation's last removed file a removal of the same conversation still
// counts as the same one: rm -rf of a transcript and its subagents' folder is many unlinks, and may cross a
// clock second, yet `trash restore` must bring back all of it.
const removalGap = 2 * time.Second

// removals remembers the trash batch of each conversation being removed through the mount.
type removals struct {
	mu  sync.Mutex
	now func() time.Time // time.Now; tests move the clock
	m   map[string]removal
}

type removal struct {
	batch string
	last  time.Time
}

// batch returns the batch a removal of key at now should join ("" for a new one), forgetting ended removals.
func (r *removals) batch(key string, now time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range r.m {
		if now.Sub(v.last) > removalGap {
			delete(r.m, k)
		}
	}
	return r.m[key].batch
}

// record notes that a file of key went into batch at now.
func (r *removals) record(key, batch string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]removal{}
	}
	r.m[key] = removal{batch: batch, last: now}
}

func (r *removals) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// trashTranscript moves rel, inside session id's canonical transcript folder, to the transcript trash, into the
// batch of the conversation's removal in progress if there is one.
func (t *Tree) trashTranscript(id, rel string) syscall.Errno {
	in, ok := strings.CutPrefix(rel, canonical(id)+"/")
	if !ok || in == "" {
		return syscall.EINVAL
	}
	first, _, _ := strings.Cut(in, "/")
	key := id + "/" + strings.TrimSuffix(first, ".jsonl")
	now := t.removals.clock()
	batch, err := t.Store.TrashTranscriptIn(id, in, now, t.removals.batch(key, now))
	if err == nil {
		t.removals.record(key, batch, now)
	}
	return storeErrno(err)
}
