// Package layout is the sessionfs convention and the store that keeps it, on a small library of folders opened
// by descriptor. It knows nothing of FUSE. Three parts, by file:
//
//   - The convention (what a session is, wherever it is seen): id.go (what an id may be), paths.go (a session's
//     paths on the host and in a container), meta.go (session.json), labels.go (the label rule and its edits).
//   - The store (sessions as plain folders of one root): store.go (open, create, adopt, get, update), list.go
//     (ids, listing, usage), rename.go, trash.go (a session removed to the trash, restored, the trash emptied by
//     gc), transcripts.go (conversations in the trash), lease.go and running.go (who runs a session now; rm and
//     rename refused meanwhile), runid.go (a run's name, SESSION/N), active.go (the runs in progress across the
//     store), runlog.go (a run's output, capped, in <root>/logs beyond the session's reach), fold.go (cwd-named folders folded into the canonical one), profile.go (a
//     .claude template copied in), errors.go (the store's typed errors), index.go and index_scan.go (what ls
//     and find read of every session, kept in <root>/index and checked against each session's own times).
//   - The descriptor library every access inside a session goes through (its processes are untrusted):
//     beneath.go (Dir: names resolved beneath an open folder with openat2, no symlink followed, no escape;
//     atomic writes, renames, removals beneath it) and walk.go (a bounded walk by descriptor).
package layout
