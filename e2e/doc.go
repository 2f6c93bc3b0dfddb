// Package e2e tests sessionfs as people use it: the real binary, a real FUSE mount, the real agent CLIs driven
// offline against the API stubs (apistub for Claude's Messages API, openaistub, geministub), and a real dockerd,
// Podman, MooseFS and CSI plugin where a test needs them.
//
// # Where a test goes
//
// In the file of what it tests, named by its family and then the command or feature:
//
//   - cli_<command>_test.go: what a command does (its flags, output and errors); cli_test.go what spans commands.
//   - mount_<feature>_test.go: the mount.
//   - backend_<name>_test.go: exec and run on a backend (what the command runs sees).
//   - csi_test.go: the CSI plugin; csi_upgrade_test.go: its DaemonSet update handing the node's mount over.
//   - agents_<agent>_test.go: that agent's real CLI through sessionfs; agents_test.go what every agent shares.
//   - attack_<area>_test.go: every test with Attack in its name (a session's process, container or pod playing
//     the attacker), in the file of what it attacks.
//
// A helper one file uses lives in that file, beside its test; helpers several files use live in harness_test.go
// (the binary, the CLI, a mount) or harness_<what>_test.go.
//
// # The files
//
// Commands: cli_test.go (a walk over the store, exit codes, usage errors, --json, ids and their prefixes, a
// mistyped, read-only or hostile store), cli_completion (completion, help), cli_doctor, cli_export (export and
// import --archive), cli_find_resume (find, resume, by-claude-id/), cli_fork, cli_gc, cli_import (an agent's
// history), cli_label (label, rename and runs as a user meets them), cli_ls, cli_ls_index (the index ls and
// find read, the store changed behind it by another host), cli_new, cli_rename, cli_rm,
// cli_run (run's flags across backends), cli_runs (runs, and the lease each exec, run and resume holds),
// cli_ps_logs (ps, logs, and where a run's output is kept), cli_log (log: a conversation as Markdown, -f), cli_search (search, and what a
// session plants for its index), cli_show, cli_trash (trash ls and restore), cli_ui (ui: its URL line, --listen, SIGTERM), cli_watch.
//
// The mount: mount_lifecycle (mount and unmount, --daemon, systemd, refused mountpoints, FUSE errors, Ctrl-C,
// stale mounts, a crash), mount_posix (shell tools, posixtest and ours, native results, ownership and inodes),
// mount_views (cwd-keyed views and aliases), mount_copies (tar, cp -a, rsync, grep -r, find and du through the
// mount meet what the store holds), mount_binds (the heavy folders' binds, --max-binds),
// mount_view_binds (a transcript view in use bound, taken back, released; resume through it), mount_text_view
// (conversations/: every agent's conversations as Markdown, found by grep -rl and search, live),
// mount_coherence (changes behind the mount, what the kernel caches), mount_listing (folders without
// OPENDIR), mount_xattrs (no labels kept, ACLs and user attributes through), mount_locks (locks reach the store), mount_locks_shares (each session's and uid's share of the
// daemon's locks), mount_readonly (--read-only, and the runs on it), mount_sessions (sessions made and removed
// through the mount), mount_users (--allow-other, a normal user's mount), mount_confine (the confined serving
// process), mount_memory (--max-nodes), mount_hosts (one store, two hosts on MooseFS), mount_stress (attackers
// racing the mount), mount_takeover (kill -9 of the serving daemon not seen by four agents, a Claude CLI, resent
// changes; where it cannot hold, an error within 10 s), mount_takeover_locks (POSIX locks and flocks held across
// kills, upgrades and a normal user's kills), mount_takeover_resend (a resent rename, exchange
// included, made once), mount_takeover_nodelog (the node log compacted under churn, held files work after a kill),
// mount_upgrade (sessionfs mount of another build hands a serving mount over to it, unseen by the agents on it;
// a normal user's mount killed and handed over; hand-overs asked for back to back),
// mount_upgrade_boot (the same after a fresh /run), mount_move_killed (a holder moving to the next CSI plugin killed
// mid-hand-over leaves it the mount).
//
// Backends: backend_local (exec: its namespace, signals, -w, -e), backend_local_landlock (exec --landlock),
// backend_docker, backend_podman (rootful and rootless), backend_modal (run and sync against the fake control
// plane).
//
// Agents: agents_claude (resume from any cwd, the control without the mount, CLAUDE_CODE_PROJECT_DIR_NAME,
// subagents, /cd), agents_codex, agents_gemini, agents_qwen, agents_opencode, agents_opencode_db (opencode's
// database as hostile input), agents_test.go (--agent, an agent folder made a link).
//
// Attacks: attack_binds (the bind primitive raced), attack_view_binds (a view's bind raced), attack_cli_output (a session's session.json and transcripts (log) on a person's
// terminal), attack_container (a session's files made hostile by its container), attack_csi, attack_daemon (the serving process and its helper; _inject_* the ptrace slip),
// attack_landlock and attack_landlock_terminal (exec --landlock), attack_opens (the daemon's open files), attack_search (a session's links
// swapped in while search indexes it), attack_text_view (conversations/ kept private), attack_text_view_sizes (a
// session's sparse transcripts of terabytes, readers at once), attack_index (the sessions index kept private),
// attack_ui (sessionfs ui's credential kept from a session's dev server on another port), attack_takeover (a
// mount's holder and its control socket, from another user), attack_takeover_locks (a session's lock owners the
// holder keeps, en masse), attack_takeover_nodes (a session's chain of folders restored at a takeover).
//
// The web page: ui_sessions (sessionfs ui's list and conversations in chromium, live appends and runs), ui_search,
// ui_resume (the resume command shown, pasted), ui_token (403 without the token or with another Host), ui_layout (a
// phone's width, the dark theme, the keyboard), ui_hostile (a hostile session's pages run nothing in the browser);
// ui_browser and ui_fixtures their harness and sessions.
//
// The README: readme_quickstart (its quick start, run command by command as written, on a fresh HOME).
//
// Images: contrib_images (make agent-image's sessionfs-agent running claude, the CSI plugin's image, the images
// the Kubernetes manifests name).
//
// Harness: harness_test.go (the binary, the CLI, a mount, need), harness_helper (every mode the test binary runs
// in as a helper process), harness_claude (the claude CLIs, the Messages API stub), harness_agents (the other
// agents' CLIs), harness_docker (test images, runs in containers), harness_attack (a host secret, processes of
// another uid, hostile archives), harness_mounts (the mount table, a session's binds), harness_csi (a plugin,
// the kubelet's requests), harness_landlock (a session to attack from, a normal user's store, terminals),
// harness_runner (a runner in the background), harness_daemon (the daemon's processes and their status),
// harness_moosefs (a MooseFS cluster), harness_takeover (four agents at work while their daemons are
// killed or their mounts handed over), harness_user (a normal user's place, store and mount).
package e2e
