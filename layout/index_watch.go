package layout

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IndexWatch vouches for the sessions that have not changed since it began to watch them, so that a reader of
// the index need not stat their names: at 10,000 sessions that is 30,000-40,000 statx, most of what ls and find
// take. A process that serves the store for long (the mount) runs one; a reader asks it (Vouch) and takes the
// fingerprints it gets instead of computing them (Store.Vouched). As git's fsmonitor does for a work tree.
//
// It watches with inotify each name a session's record is fingerprinted by (its rels: the session's folder,
// session.json's own inode, its agents' conversation folders), the folders on the way to them, and the sessions
// folder. The first event on one of them unvouches the session and drops its watches, so a session that keeps
// changing costs one event; the next reader's Vouch has it armed again (at most once a second): its watches
// renewed, then its fingerprint taken (a change between the two is an event too). Vouch first reads every event
// queued so far: the kernel queues an event before the change's call returns, so a change made before the reader
// asked is never vouched for. A lost event (the queue's overflow) unvouches every session.
//
// The folders are watched without IN_MODIFY, so an agent's appends to its transcript or writes in its workspace
// wake no one: a folder's fingerprint changes only with its names and attributes. A file (session.json) is watched
// by its inode, with IN_MODIFY: written through any link of it, it is unvouched. Each name is opened beneath the
// sessions folder (OpenBeneath: no symlink anywhere on the way) and watched through that descriptor, so a session
// that planted a symlink among its names is never vouched for; nor are two sessions that reach the same inode. A session's names are at most
// maxRecordRels+len(baseRels), so the watches it may cost are bounded; out of watches (max_user_watches), the
// sessions not armed are stat-ed by the reader, as without a watch.
type IndexWatch struct {
	s        *Store
	sessions *Dir
	fd       int      // the inotify descriptor, non-blocking
	file     *os.File // fd, for the runtime's poller to wait on (never its Fd: that would make fd blocking)
	sessWd   int32    // the sessions folder's watch

	mu      sync.Mutex
	byWd    map[int32]*watched
	byID    map[string]*watched
	toArm   map[string]bool // sessions to (re)arm: new, changed, or whose rels the index changed
	indexAt unix.Statx_t    // the index file's statx when its rels were last read
	started bool
	closed  bool
	kick    chan struct{}
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when the loop ends
}

// watched is one session: what its watches saw since it was armed.
type watched struct {
	id      string
	rels    string
	fp      string // its fingerprint, taken after its watches were in place
	wds     []int32
	armed   bool // fp holds, unless dirty
	dirty   bool // an event came since it was armed
	armedAt time.Time
}

const (
	// folderEvents change a folder's fingerprint (its names, its attributes) or move it away.
	folderEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	// fileEvents change a file's fingerprint (its content's size and times, its attributes) or remove it.
	fileEvents = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	// rearmPause: a session is armed again at most this often, however often readers ask: one that keeps
	// changing costs an event and a re-arm a second at most (its first event drops its watches).
	rearmPause = time.Second
)

// WatchIndex makes a watch of the store's sessions for Vouch. Start arms them, in the background; until then,
// and meanwhile, it vouches for those armed so far.
func (s *Store) WatchIndex() (*IndexWatch, error) {
	sessions, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	sessWd, err := unix.InotifyAddWatch(fd, "/proc/self/fd/"+strconv.Itoa(sessions.Fd()), unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|
		unix.IN_MOVED_TO|unix.IN_ONLYDIR)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	w := &IndexWatch{s: s, sessions: sessions, fd: fd, file: os.NewFile(uintptr(fd), "inotify"), sessWd: int32(sessWd),
		byWd: map[int32]*watched{}, byID: map[string]*watched{}, toArm: map[string]bool{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	return w, nil
}

// Start arms the sessions in the background, so that a mount's start-up (its serving at once) does not share its
// CPU with 10,000 sessions' watches, and follows their changes until Close.
func (w *IndexWatch) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started && !w.closed {
		w.started = true
		go w.loop()
	}
}

// Close stops the watch (and its arming, between two sessions).
func (w *IndexWatch) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	started := w.started
	w.mu.Unlock()
	close(w.stop)
	if started {
		<-w.done // the loop stops between two sessions' arming
	}
	w.file.Close() // and the wait for events ends
}

// Vouch returns the sessions the watch vouches for, as lines "<id> <fingerprint>", after every event queued
// before the call was read. Sessions changed since are armed again in the background.
func (w *IndexWatch) Vouch() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.drain()
	var b bytes.Buffer
	b.Grow(len(w.byID) * (MaxIDLen/4 + 2*fpHalf + 2))
	for _, s := range w.byID {
		if s.armed && !s.dirty {
			b.WriteString(s.id)
			b.WriteByte(' ')
			b.WriteString(s.fp)
			b.WriteByte('\n')
		}
	}
	if len(w.toArm) > 0 || w.indexChanged() {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return b.Bytes()
}

// ParseVouched reads Vouch's answer: fingerprints by session id. Lines that are not a valid id and fingerprint
// are skipped (a reader stats those sessions itself). The map's strings are parts of b: no one may write b after.
func ParseVouched(b []byte) map[string]string {
	out := make(map[string]string, bytes.Count(b, []byte{'\n'}))
	text := unsafe.String(unsafe.SliceData(b), len(b)) // the fingerprints are parts of b, which no one writes after
	for text != "" {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		id, fp, ok := strings.Cut(line, " ")
		if ok && validIndexID(id) && fp != "-" && validFingerprint(fp) {
			out[id] = fp
		}
	}
	return out
}

// loop arms the sessions, then waits for events (or a reader's kick) and re-arms what they changed.
func (w *IndexWatch) loop() {
	defer close(w.done)
	w.mu.Lock()
	ids, err := sessionNames(w.sessions)
	if err == nil {
		for _, id := range ids {
			w.toArm[id] = true
		}
	}
	w.mu.Unlock()
	rc, err := w.file.SyscallConn()
	if err != nil {
		return
	}
	events := make(chan struct{}, 1)
	go func() {
		// Read waits for the descriptor to turn readable each time the function says false; Close ends it.
		for rc.Read(func(fd uintptr) bool { return pollReadable(fd) }) == nil {
			select {
			case events <- struct{}{}:
			case <-w.stop:
				return
			}
		}
	}()
	if !w.armAll() {
		return
	}
	for {
		select {
		case <-events: // unvouched, their watches dropped: armed again when a reader asks
			w.mu.Lock()
			w.drain()
			w.mu.Unlock()
		case <-w.kick:
			if !w.armAll() {
				return
			}
		case <-w.stop:
			return
		}
	}
}

// armAll arms every session waiting for it, and those whose rels the index changed; false once closed.
func (w *IndexWatch) armAll() bool {
	w.mu.Lock()
	changed := w.indexChanged()
	w.mu.Unlock()
	if changed {
		w.takeRels(w.readRels())
	}
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return false
		}
		id := ""
		now := time.Now()
		for cand := range w.toArm {
			if s := w.byID[cand]; s == nil || now.Sub(s.armedAt) >= rearmPause {
				id = cand
				break
			}
		}
		if id == "" { // none, or only sessions armed a moment ago: the next reader's kick arms them
			w.mu.Unlock()
			return true
		}
		delete(w.toArm, id)
		w.mu.Unlock()
		w.arm(id)
	}
}

// arm renews session id's watches, then takes its fingerprint: armed unless an event came meanwhile.
func (w *IndexWatch) arm(id string) {
	w.mu.Lock()
	s := w.byID[id]
	if s == nil {
		s = &watched{id: id, rels: defaultRels} // not in the index yet: as a reader fingerprints it
		w.byID[id] = s
	}
	rels := s.rels
	s.armed, s.dirty, s.armedAt = false, false, time.Now()
	old := s.wds
	s.wds = nil
	w.mu.Unlock()

	wds, ok := w.watchNames(s)
	w.mu.Lock()
	for _, wd := range old {
		if !containsWd(wds, wd) && w.byWd[wd] == s {
			delete(w.byWd, wd)
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		}
	}
	if !ok && w.byID[id] == s && len(wds) == 0 { // gone, or not one watch: nothing of it kept
		delete(w.byID, id)
	}
	w.mu.Unlock()
	if !ok {
		return // left unarmed: a reader stats it
	}
	fp, _ := fingerprint(w.sessions, id, rels, time.Now(), true)
	w.mu.Lock()
	if w.byID[id] == s && !s.dirty {
		s.fp, s.armed = fp, true
	}
	w.mu.Unlock()
}

// watchNames watches each of s's rels (a file by its inode) and the folders on the way to them, or, for a name
// not made yet, the deepest folder on its way that is; false when one cannot be watched, or is another
// session's. A folder on the way whose next step is itself a rel is not watched: that rel's own watch sees it
// moved, removed or replaced, and the folder's parent's sees the folder itself moved (.claude, on the way to
// .claude/projects: 4 watches a Claude session, not 5).
func (w *IndexWatch) watchNames(s *watched) ([]int32, bool) {
	var wds []int32
	add := func(rel string, mask uint32) error {
		// inotify takes only a path: the name is opened beneath the sessions folder (no symlink on the way nor
		// at its end: ELOOP, and the session is left to its reader's statx) and watched through its descriptor.
		path := s.id
		if rel != "." {
			path += "/" + rel
		}
		fd, err := w.sessions.OpenAt(path, unix.O_PATH, 0)
		if err != nil {
			return err
		}
		wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), mask)
		unix.Close(fd)
		if err != nil {
			return err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.byID[s.id] != s {
			if w.byWd[int32(wd)] == nil {
				_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
			}
			return errors.New("forgotten meanwhile") // its folder renamed or removed: the watch goes with it
		}
		if other := w.byWd[int32(wd)]; other != nil && other != s {
			return errors.New("watched by another session")
		}
		w.byWd[int32(wd)] = s
		if !containsWd(wds, int32(wd)) {
			wds = append(wds, int32(wd))
		}
		s.wds = wds
		return nil
	}
	missing := func(err error) bool { return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) }
	isRel := map[string]bool{}
	for rels := s.rels; rels != ""; {
		var rel string
		rel, rels, _ = strings.Cut(rels, " ")
		isRel[rel] = true
	}
	seen := map[string]bool{}
	for rels := s.rels; rels != ""; {
		var rel string
		rel, rels, _ = strings.Cut(rels, " ")
		skipped := "" // the folder just passed unwatched: watched after all when the next step is missing
		for end := 1; end <= len(rel); end++ {
			if end < len(rel) && rel[end] != '/' {
				continue
			}
			name := rel[:end]
			if end < len(rel) {
				next := len(rel)
				if k := strings.IndexByte(rel[end+1:], '/'); k >= 0 {
					next = end + 1 + k
				}
				if isRel[rel[:next]] {
					skipped = name
					continue
				}
			}
			if seen[name] {
				skipped = ""
				continue
			}
			seen[name] = true
			err := add(name, folderEvents)
			if errors.Is(err, unix.ENOTDIR) && end == len(rel) {
				err = add(name, fileEvents)
			}
			if missing(err) {
				if name == "." {
					return wds, false // the session is gone
				}
				if skipped != "" && !seen[skipped] { // the deepest folder that is
					seen[skipped] = true
					if err := add(skipped, folderEvents); err != nil && !missing(err) {
						return wds, false
					}
				}
				break // not made yet: its parent's watch sees it made
			}
			if err != nil {
				return wds, false
			}
			skipped = ""
		}
	}
	return wds, true
}

// drain reads every queued event and unvouches the sessions they touch. Called with mu held.
func (w *IndexWatch) drain() {
	var buf [16 << 10]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : min(n, off+unix.SizeofInotifyEvent+int(ev.Len))]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				for _, s := range w.byID {
					w.unvouch(s)
				}
			case ev.Wd == w.sessWd:
				id := string(bytes.TrimRight(name, "\x00"))
				if ev.Mask&(unix.IN_MOVED_FROM|unix.IN_DELETE) != 0 {
					w.forget(id) // its folder may be another session's now (renamed): its watches go with it
				} else if validIndexID(id) {
					if s := w.byID[id]; s != nil {
						w.unvouch(s)
					}
					w.toArm[id] = true
				}
			default:
				if s := w.byWd[ev.Wd]; s != nil {
					w.unvouch(s)
				}
			}
		}
	}
}

// unvouch takes s's word back and drops its watches, so that a session that keeps changing costs one event until
// a reader asks again (and it is armed again). Called with mu held.
func (w *IndexWatch) unvouch(s *watched) {
	s.dirty, s.armed = true, false
	for _, wd := range s.wds {
		if w.byWd[wd] == s {
			delete(w.byWd, wd)
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		}
	}
	s.wds = nil
	w.toArm[s.id] = true
}

// forget drops session id and its watches. Called with mu held.
func (w *IndexWatch) forget(id string) {
	s := w.byID[id]
	if s == nil {
		return
	}
	for _, wd := range s.wds {
		if w.byWd[wd] == s {
			delete(w.byWd, wd)
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		}
	}
	s.wds, s.armed, s.dirty = nil, false, true
	delete(w.byID, id)
	delete(w.toArm, id)
}

// indexChanged says whether the index file is another than when relsOf was read. Called with mu held.
func (w *IndexWatch) indexChanged() bool {
	var st unix.Statx_t
	_ = unix.Statx(w.s.root.Fd(), indexFile, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &st)
	return st.Ino != w.indexAt.Ino || st.Mtime != w.indexAt.Mtime || st.Size != w.indexAt.Size
}

// readRels reads each session's rels from the index, line by line: what a record is fingerprinted by is all the
// watch needs of it.
func (w *IndexWatch) readRels() map[string]string {
	w.mu.Lock()
	_ = unix.Statx(w.s.root.Fd(), indexFile, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &w.indexAt)
	w.mu.Unlock()
	relsOf := map[string]string{}
	f, err := w.s.root.OpenRegular(indexFile, maxIndexSize)
	if err != nil {
		return relsOf
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxRecordBody+(maxRecordRels+4)*513+maxRecordConvs*(MaxIDLen+1)+1024)
	if !sc.Scan() || sc.Text() != indexHeader {
		return relsOf
	}
	interned := map[string]string{} // most sessions have the same few names
	for sc.Scan() {
		var f [5][]byte
		line := sc.Bytes()
		for i := range f {
			var ok bool
			if f[i], line, ok = bytes.Cut(line, []byte{'\t'}); !ok {
				break
			}
		}
		id := string(f[0])
		if !validIndexID(id) || f[3] == nil {
			continue
		}
		rels, ok := interned[string(f[3])]
		if !ok {
			if n, valid := eachWord(string(f[3]), validIndexRel); !valid || n > maxRecordRels+len(baseRels) {
				continue // as parseRecord: the watches a session costs stay bounded
			}
			rels = string(f[3])
			interned[rels] = rels
		}
		relsOf[id] = rels
	}
	return relsOf
}

// takeRels has the sessions whose rels the index changed armed again with them.
func (w *IndexWatch) takeRels(relsOf map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, rels := range relsOf {
		s := w.byID[id]
		if s == nil {
			if !w.toArm[id] {
				continue // not in the sessions folder (a record the next reader drops)
			}
			s = &watched{id: id}
			w.byID[id] = s
		}
		if s.rels != rels {
			s.rels = rels
			w.toArm[id] = true
		}
	}
}

func containsWd(wds []int32, wd int32) bool {
	for _, x := range wds {
		if x == wd {
			return true
		}
	}
	return false
}

// pollReadable says whether descriptor fd has something to read now.
func pollReadable(fd uintptr) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0
}
