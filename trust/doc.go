// Package trust decides whether an agent may start on this host in a session: the one check every host-side
// launch (exec, resume, env, run --backend local) goes through.
//
// A session's configuration is code from an untrusted author. The agents carry out what their settings say
// when they start (Claude's hooks, apiKeyHelper, statusLine and env, MCP servers, plugins, skills; Codex's
// notify and MCP servers; Gemini's and Qwen's .env and extensions; opencode's plugins), and a session's
// processes (an agent in a container, a sandbox, a pod, an import) write those files. So, as direnv does with
// an .envrc:
//
//   - Code is what a session holds that an agent would carry out, read beneath the session's folder
//     descriptor: each agent's CodeFile (agents.Agent.Code), in the agent's folder and in each folder from the
//     session's root down to the run's cwd, reduced to the part the agent acts on (a theme or a model is no
//     code; an unknown key is).
//   - An approval is the user's record, in the user's own configuration folder where no session reaches, of the
//     sha256 of each piece of code the user looked at and accepted (sessionfs approve). It names a store and a
//     session id.
//   - Check lets a run start when every piece of code is approved as it is now, or there is none. A piece
//     that cannot be approved (a link, a FIFO, a tree too large to read) or one new or changed since its
//     approval refuses the run, naming it, with the two ways on: approve it, or run the agent sandboxed
//     (exec --landlock, run --backend docker), where the session's code runs where it was written.
//
// A container, a Modal sandbox or a --landlock run is not checked: there the code runs with the session's
// rights, not the user's.
package trust
