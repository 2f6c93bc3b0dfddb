// Package layout is the sessionfs convention: what a session id may be, which paths a session has on the host and
// in a container, and the on-disk store that holds sessions as plain folders. It knows nothing of FUSE.
package layout
