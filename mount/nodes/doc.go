// Package nodes holds the FUSE node types of a sessionfs mount: the root, the sessions folder, the projects folder
// whose every Claude folder name is a view of the session's one transcript folder, and the passthrough node that
// serves everything else from the store.
package nodes
