// Package nodes holds the FUSE node types of a sessionfs mount: one type per kind of node, each in its own file with
// the go-fuse interfaces it implements asserted beside it, and the state they share (Tree).
//
// # The node kinds
//
//	path in the mount          type          file           serves
//	/                          Root          root.go        sessions/, by-claude-id/ and conversations/
//	sessions/                  Sessions      sessions.go    one folder per session, read live; mkdir makes a
//	                                                        session, rmdir of an empty one trashes it
//	sessions/<id>              SessionDir    session.go     the session's folder; a lookup in it tells the Binder;
//	                                                        session.json listed first, its unlink trashes the
//	                                                        session (sessionrm.go)
//	  .claude, .gemini, ...    AgentDir      agent.go       an agent's folder; its cwd-keyed folders are views
//	                                                        folders, one row each of the views table
//	  .gemini/tmp, .qwen/tmp   ViewsDir      views_dir.go   a views folder with entries of its own
//	  .claude/projects         OnlyViewsDir  views_only.go  a views folder that holds nothing but views
//	  .gemini/tmp/<name>,      View          view.go        the canonical entry seen under a view name
//	  .claude/projects/<name>
//	  everything else          Node          passthrough.go a store file or folder passed through
//	by-claude-id/              ByClaudeID    byclaudeid.go  <conversation uuid>: a link to ../sessions/<id>
//	conversations/             TextRoot      text.go        <id>/<agent>/<conversation>.md: every agent's
//	                                                        conversations rendered as Markdown on read
//	                                                        (textcache.go), readable by whom may read their
//	                                                        files (textperm.go)
//
// Node does the passthrough; SessionDir, AgentDir, ViewsDir and View embed it and answer the few requests they
// answer otherwise. A folder kind whose children are not all plain Nodes says which each is (parentKind: a
// session's agent folders, an agent's views folders, a view's own file). Root, Sessions, OnlyViewsDir, ByClaudeID
// and the text view are synthetic: no store entry is passed through as them.
//
// # The views table
//
// Every agent's cwd-keyed folders (agents.Views of all.Agents) are one table (views.go), and every row is served by
// one rule: each name the agent could make from a cwd is a view of the canonical entry, the one the session's
// workspace gets (viewOf, with the view numbers), the same View node, and the same fold of what the agent filed
// under real folders while the store was not mounted. The rows differ only by their properties:
//   - Only (Claude's projects/): nothing but views lives there, so the folder is synthetic (OnlyViewsDir): it
//     lists the canonical name alone, any other name does not exist, nothing else can be made in
//     it, the canonical folder is made again when a view is looked up without it, and every real folder in it is
//     folded when it is first looked up. This is the one difference of type, and a real one: a ViewsDir is the
//     store folder passed through (creates, renames, links, attributes, a watched listing), an OnlyViewsDir has no
//     entry of its own to pass through. Otherwise (ViewsDir) the canonical name and the names while there is no
//     canonical entry are the folder's own entries, mkdir of a view name makes the canonical entry, rmdir of one
//     removes its claim, and a view name's first lookup in a mount folds. No views folder lists a view name: a
//     lookup answers it, and a walker (tar, rsync, grep -r) meets each file once, as the store holds it.
//   - transcripts (the store's transcript folder, layout.ProjectsDir: Claude's projects/ again): the names written
//     through are recorded in session.json as aliases (aliases.go) and forgotten by rmdir; unlink below a
//     view moves to the transcript trash (trash.go); Claude Code's set-aside of a file moved onto itself is refused.
//   - Own (Gemini's .project_root): a file each name keeps for itself, served from the store folder of that name.
//
// # From the root down to a view
//
// A lookup of sessions/<id>/.gemini/tmp/<name>/chats goes: Root holds sessions/ from the start (OnAdd);
// Sessions.Lookup checks the id and answers a SessionDir anchored at <id> (sessions.go); SessionDir.Lookup tells
// the Binder and answers .gemini as an AgentDir (session.go, childNode); AgentDir.Lookup answers tmp as a ViewsDir
// of Gemini's row (agent.go; Claude's projects/ as an OnlyViewsDir); ViewsDir.Lookup resolves <name> by the rule
// and answers a View anchored at tmp/<canonical> (views_dir.go, views.go, view.go); below it every name is a Node
// whose store path is its nearest anchor's plus the names on the way down (passthrough.go). Every store access is
// made beneath the store's sessions folder's descriptor, no symlink followed (at.go): a session's processes may
// rename and plant links, they never lead a node outside the store. Inode numbers are the store's, with a view's
// number mixed into folders' seen through it and a filesystem's number into those of another filesystem (stat.go).
//
// # Hooks into the mount
//
// Package mount's Start (mount/start.go) makes the Tree (NewTree) and sets, before it serves: Mountpoint, ReadOnly
// and the timeouts (openTree); Binder, the mount's binder of sessions' folders, told of lookups (Want) and
// removals (Removing), and SetBinderThread, the binder's thread whose own lookups are not uses (wireBinds, through
// the binder's begin); SetWatch, the store watcher, which reports changes to Changed and ChangedAll (watchStore,
// cache.go). It mounts NewRoot(tree) and runs Prune on Root.Sessions (prune.go); the binder reads Sessions and
// LastUsed.
//
// A folder the mount binds (a session's workspace, app, mcps) is watched only once FUSE serves a request in it
// (Node.servedHere), and its watches go when its events find the bind there again (Tree.boundCheck, cache.go); so
// do a bound transcript view's, and those of its folders (Tree.boundViewCheck, viewwatch.go). The SELinux label
// is answered as not kept (passthrough.go, noLabels), so ls -l asks it once per mount, not once per file.
//
// The rest: the kernel's caches kept true to the store (cache.go), listings (dirstream.go), locks through the
// mount and their shares (locks*.go), descriptors held for callers' opens (opens.go), callers' ioctls (ioctl.go),
// and the test build's faults (fault_on.go).
package nodes
