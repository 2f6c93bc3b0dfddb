// Package session makes a store's sessions ready for their agents. Create is the one way a session is made,
// whoever asks (sessionfs new, mkdir through the mount, a CSI volume, an import through Maker), so every session
// starts seeded the same way (Seed). Before a run, Ready seeds it again, prepares the agent's folder
// (PrepareAgent) and readies its state for the run's cwd (LaunchAgent). ShareCredentials links the user's Claude
// login into a session. What is worth only a warning is returned, for the caller to print.
package session
