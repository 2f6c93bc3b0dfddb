// Package nodelog keeps the node log: what a daemon that takes a FUSE connection over from a dead one must know of
// the node ids the kernel holds. Package mount makes it, and its takeover's holder keeps it (package mount/takeover);
// go-fuse writes it (the takeover patch's fs.NodeLog, third_party/go-fuse/TAKEOVER.md). This package owns its words,
// its format (format.go, versioned) and its reader.
//
// # Words
//
// The node log: the node ids a serving daemon handed to the kernel, each as the name it was looked up by in its
// parent, with its lookup count. Node ids are go-fuse's own numbers: a daemon that takes the connection over (no
// INIT: the kernel keeps every id it holds) reads the log and looks each name up again, under the same id. The log
// is a memory file, its size sealed, that the holder keeps a copy of, so it outlives the daemon that writes it.
// go-fuse tells it of every LOOKUP and FORGET, so a record is a copy into shared memory, no system call.
//
// A record: one thing the log says, appended, 8-byte aligned, whole once its length is stored (last, atomically: a
// record a kill cut short reads as the end of the log). Its kind says what:
//   - named: the kernel knows node id as a name in a folder (a lookup, a create, a rename made);
//   - renaming: node id is about to be renamed; a daemon killed before the named record that follows leaves it
//     found under either name;
//   - forgot: the kernel let the id go, and its records before are void;
//   - count: the id's lookup count, one record a node written over in place, so that the kernel's FORGETs free a
//     restored node;
//   - backing: the id's passthrough backing id and how many open files use it, in place too: the kernel allows one
//     backing file per inode, so the next daemon answers opens with the same id while old files use it;
//   - handles: the file handles' high-water mark: the next daemon hands out its own past it, so that an old
//     handle's RELEASE never releases a new one.
//
// The halves and compaction: the log fills with records of nodes forgotten (every LOOKUP of a new name, and its
// FORGET), so the file has two halves of equal size. One is the log; once it passes a mark, a compaction writes
// what is live into the other and makes that the log with one store in the header. The holder's copy is whole at
// every instant: a daemon killed mid-compaction leaves the old half named (compact.go).
//
// The ring of changes: a slot per request that changes a folder (make, remove or rename an entry), by its unique id,
// noted before the change is made. The kernel resends what a dead daemon had read; the next daemon that finds the
// change made takes it as the request's own only if the slot says so (package mount's resend.go), and otherwise
// answers as for anyone's change (EEXIST, ENOENT).
//
// The passthrough bits: a bit per file handle that reads and writes through its node's backing file, so that the
// next daemon counts a restored backing id down on those handles' RELEASEs, and closes it with the last (a flock
// taken on the file goes then).
//
// The reader trusts nothing in the log: a confined daemon that a session subverted may have written it, and may
// rewrite it as it is read. Names are checked as a FUSE request's are, a record of a kind no build writes or that
// runs past its half ends the read, and each name is only looked up beneath its parent, as a request would be
// (scan.go).
//
// # Its users
//
//	New                          the serving daemon with --takeover: an empty log (gofs.RecordNodes writes it)
//	Map, Read                    the daemon taking over: the holder's copy read (gofs.RestoreNodes), then written on
//	MapReadOnly, Read, Unmap     doctor: the nodes a held mount's kernel holds, and Compactions
//	Current, Changing, Changed   the ring of changes, noted and asked (Exchanging, Exchanged: RENAME_EXCHANGE)
//	Version, VersionOf           an upgrade or a holder's move between builds of two versions refused
//	Churn                        what keeping the log costs (sessionfs-bench's takeover rows)
//
// # Files
//
//	format.go   the file format, all of it, and its version history
//	log.go      Log: made, mapped, appended to (go-fuse's NodeLog), read
//	scan.go     what a run of records says, read by a reader that trusts none of them
//	compact.go  the log compacted into its other half past a mark, never full
//	changes.go  the passthrough bits and the ring of changes
//	churn.go    what keeping the log costs
//	fault_on.go the fault-injection build's (-tags faultinject) small halves (SESSIONFS_FAULT_NODELOG_HALF);
//	            fault_off.go: the one size
package nodelog
