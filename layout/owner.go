package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/lazyregexp"
)

// Owners. The namespace a session belongs to (the CSI plugin's tenancy) decides who may have it, so it is kept
// where no session can write it: <root>/owners/<id>, one small file per session in the store's trusted root (the
// store is shared by every node, so the record is too), never in the session's own session.json, which its
// processes rewrite at will. A removed session's record waits beside it as <root>/owners/.trash/<trashed name>
// (no id starts with a dot) until it is restored or gc deletes it. Every change of a session's place (Create,
// Rename, Remove, RestoreSession) moves, writes or clears its record under the session's lock, which Namespace
// takes too, so a reader never sees a session with another's record. A session with no record has no owner.
const (
	ownersName   = "owners"
	ownersTrash  = ".trash" // beneath owners
	maxOwnerSize = 256
)

// namespacePattern is a Kubernetes namespace's name (an RFC 1123 label), the only thing a record may hold.
var namespacePattern = lazyregexp.New(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func ownerRel(id string) string { return ownersName + "/" + id }

func trashedOwnerRel(trashedName string) string {
	return ownersName + "/" + ownersTrash + "/" + trashedName
}

// Namespace is the namespace that owns session id, as the store recorded when the session was made into it; ""
// when there is no record (a session made outside Kubernetes, or before owners were recorded) or no session.
// A record that is not a regular file of a namespace's name (a link planted there, say) is ErrDamaged, never
// followed.
func (s *Store) Namespace(id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	unlock, err := s.lockIDs(id)
	if err != nil {
		return "", wrap("read owner", id, s.LocksDir(), err)
	}
	defer unlock()
	if !s.Exists(id) {
		return "", nil
	}
	b, err := s.root.ReadRegular(ownerRel(id), maxOwnerSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", &Error{Op: "read owner", ID: id, Path: s.ownerPath(id), Kind: ErrDamaged, Err: err}
	}
	ns := strings.TrimSuffix(string(b), "\n")
	if !namespacePattern.MatchString(ns) {
		return "", &Error{Op: "read owner", ID: id, Path: s.ownerPath(id), Kind: ErrDamaged, Err: errors.New("not a namespace's name")}
	}
	return ns, nil
}

func (s *Store) ownerPath(id string) string { return s.Root + "/" + ownerRel(id) }

// setOwner records ns as the owner of session id, which the caller has just put in place holding id's lock.
func (s *Store) setOwner(id, ns string) error {
	if !namespacePattern.MatchString(ns) {
		return fmt.Errorf("namespace %q: want a Kubernetes namespace's name", printable(ns))
	}
	if err := s.root.MkdirAll(ownersName, 0o700, -1, -1); err != nil {
		return err
	}
	return s.root.WriteAtomic(ownerRel(id), []byte(ns+"\n"), 0o600, -1, -1)
}

// clearStaleOwner removes the record of id when there is no session id: it was left by a session gone without
// the store (removed by hand, or a crash between a session's move and its record's), and the session about to
// be put at id must not inherit it. The caller holds id's lock.
func (s *Store) clearStaleOwner(id string) error {
	if s.Exists(id) {
		return nil
	}
	return s.removeOwner(ownerRel(id))
}

// moveOwner moves the record from to to, both beneath the root, replacing whatever is at to; moved is false when
// there was no record to move. The caller holds the locks of the sessions concerned.
func (s *Store) moveOwner(from, to string) (moved bool, err error) {
	if _, err := s.root.Lstat(from); errors.Is(err, syscall.ENOENT) {
		return false, nil
	}
	if err := s.root.MkdirAll(to[:strings.LastIndexByte(to, '/')], 0o700, -1, -1); err != nil {
		return false, err
	}
	if err := s.root.Rename(from, to, 0); err != nil {
		return false, err
	}
	return true, nil
}

// removeOwner removes the record rel beneath the root, if there is one.
func (s *Store) removeOwner(rel string) error {
	if err := s.root.Remove(rel); err != nil && !errors.Is(err, syscall.ENOENT) {
		return err
	}
	return nil
}

// sweepTrashedOwners removes the records of removed sessions no longer in the trash (deleted by gc, or by hand).
func (s *Store) sweepTrashedOwners(trash *Dir) error {
	ents, err := s.root.ReadDir(ownersName + "/" + ownersTrash)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return wrap("gc", "", s.Root+"/"+ownersName+"/"+ownersTrash, err)
	}
	for _, e := range ents {
		if _, err := trash.Lstat(e.Name()); errors.Is(err, syscall.ENOENT) {
			if err := s.removeOwner(trashedOwnerRel(e.Name())); err != nil {
				return wrap("gc", "", s.Root+"/"+trashedOwnerRel(e.Name()), err)
			}
		}
	}
	return nil
}

// Place renames stage, a folder of the sessions folder where a session was made aside (a fork, an import), to id,
// never replacing a session (an error wrapping fs.ErrExist). It holds id's lock and clears a record of an owner
// left at id by a session gone without the store first: the new session inherits no namespace.
func (s *Store) Place(stage, id string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	unlock, err := s.lockIDs(id)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.clearStaleOwner(id); err != nil {
		return err
	}
	sessions, err := s.Sessions()
	if err != nil {
		return err
	}
	err = sessions.Rename(stage, id, unix.RENAME_NOREPLACE)
	if err == nil {
		s.Reindex(id)
	}
	return err
}
