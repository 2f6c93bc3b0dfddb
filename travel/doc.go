// Package travel moves sessions: export to one zstd-compressed tar, import from one (refusing a damaged or
// hostile archive), and fork a session into a new one in the same store (reflinks where the filesystem can).
package travel
