// Package session makes a store's sessions ready for their agents: Create is the one way a session is made,
// whoever asks (sessionfs new, mkdir through the mount, a CSI volume, an import), so every session starts seeded
// the same way. PrepareAgent and LaunchAgent (agent.go) ready an agent other than Claude before each run (env,
// exec, run, resume), returning their warnings for the caller to say.
package session
