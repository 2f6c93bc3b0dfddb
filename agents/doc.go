// Package agents is what sessionfs knows of the coding agents it hosts, one descriptor each (agents/<name>): where
// an agent keeps its state and the variable that moves it there, which of its folders it keys by cwd, how it
// resumes, which files are its logins, and how its conversations read. Here is what they share: the environment
// that points a process at its session (env.go), reading lines (compressed files too, bounded: compressed.go),
// listing and owning conversations, importing them. agents/all names every agent; agents/follow follows their conversations live.
package agents
