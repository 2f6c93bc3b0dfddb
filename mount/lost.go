package mount

import "time"

// When the kernel's queue of store events overflows, events were lost, and the kernel's caches are forgotten
// (Tree.ChangedAll: every cached folder checked, every other name dropped). That costs the daemon a walk of all it
// caches, about 0.4 s of CPU at 10,000 walked sessions, and a session can overflow the queue on purpose: a loop
// setting its folders' times did so without end, and kept the daemon at 0.6 of a core. So after a forgetting the
// next one waits a rest, which doubles while overflows go on (forgetFirstRest up to forgetMaxRest) and starts again
// after a quiet spell. What changed behind the mount while events are lost may show that much late; what is made
// through the mount, or through a bind of the store's folders, the kernel knows at once.
const (
	forgetFirstRest = time.Second
	forgetMaxRest   = 8 * time.Second
	forgetQuiet     = 30 * time.Second // no forgetting for this long: the next rest is the first one again
)

// forgetting paces the forgettings: when the last one was, and the rest due after it.
type forgetting struct {
	last time.Time
	rest time.Duration
}

// wait is how long a forgetting for events lost at now waits (0: it is made at once).
func (f *forgetting) wait(now time.Time) time.Duration {
	return max(0, f.rest-now.Sub(f.last))
}

// made records a forgetting at now, and sets the rest before the next.
func (f *forgetting) made(now time.Time) {
	if now.Sub(f.last) > forgetQuiet {
		f.rest = forgetFirstRest
	} else {
		f.rest = min(2*f.rest, forgetMaxRest)
	}
	f.last = now
}

// eventsLost forgets the kernel's caches now, or once the rest since the last time is over.
func (wa *watcher) eventsLost() {
	if wa.forgetDue != nil {
		return // a forgetting is due: it covers these events too
	}
	if wait := wa.forgetting.wait(time.Now()); wait > 0 {
		wa.forgetDue = time.After(wait)
		return
	}
	wa.forgetAll()
}

// forgetAll forgets what the kernel caches of the store and has the binder bind what a dropped name had.
func (wa *watcher) forgetAll() {
	wa.forgetting.made(time.Now())
	wa.forgetDue = nil
	wa.tree.ChangedAll()
	if wa.binder != nil {
		wa.binder.wantBound()
	}
}
