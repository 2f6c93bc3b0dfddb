package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// Kinds of failure a caller must tell apart. Test with errors.Is; the *Error that carries them says which session
// and which path.
var (
	ErrInvalidID  = errors.New("invalid session id")
	ErrNotFound   = errors.New("no such session")
	ErrExists     = errors.New("session already exists")
	ErrOutside    = errors.New("path is outside the session")
	ErrPermission = errors.New("permission denied")
	ErrNoSpace    = errors.New("no space left on the store's disk")
	ErrReadOnly   = errors.New("the store is read-only")
	ErrDamaged    = errors.New("session metadata is damaged")
)

// Error is a failed operation on a session or the store, in the spirit of seed 003's SessionDirError.
type Error struct {
	Op   string // what was attempted: "create", "remove", ...
	ID   string // the session, when there is one
	Path string // the path involved, when there is one
	Kind error  // one of the Err* kinds above, or nil
	Err  error  // the underlying error, or nil
}

func (e *Error) Error() string {
	msg := e.Op
	if e.ID != "" || e.Kind == ErrInvalidID { // an id refused is named, the empty one too
		msg = strings.TrimSpace(msg + fmt.Sprintf(" session %q", e.ID))
	}
	if e.Path != "" {
		msg += " (" + e.Path + ")"
	}
	switch {
	case e.Kind != nil && e.Err != nil:
		return msg + ": " + e.Kind.Error() + ": " + errText(e.Err)
	case e.Kind != nil:
		return msg + ": " + e.Kind.Error()
	case e.Err != nil:
		return msg + ": " + errText(e.Err)
	}
	return msg
}

// Unwrap lets errors.Is match both the kind and the underlying cause (fs.ErrNotExist, syscall.ENOSPC, ...).
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// errText drops the path an *fs.PathError repeats, since Error already names it.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// wrap turns an OS error into an *Error whose Kind names the cause a user can act on.
func wrap(op, id, path string, err error) error {
	if err == nil {
		return nil
	}
	var le *Error
	if errors.As(err, &le) {
		return err
	}
	return &Error{Op: op, ID: id, Path: path, Kind: classify(err), Err: err}
}

func classify(err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return ErrNoSpace
	case errors.Is(err, syscall.EROFS):
		return ErrReadOnly
	case errors.Is(err, fs.ErrPermission):
		return ErrPermission
	}
	return nil
}
