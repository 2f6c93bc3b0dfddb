// Package ui is `sessionfs ui`: a local web page to look at the store's sessions, their conversations (live),
// runs, workspaces and search, served by net/http with html/template pages and two embedded assets (ui.css and
// ui.js, checked in: no build step, no CDN).
//
// # The contract (what the browser tests and the docs rely on)
//
// Start: `sessionfs ui [--listen ADDR] [--store ...]` prints the URL as the first line of stdout,
//
//	http://127.0.0.1:PORT/ui-BASE/?token=TOKEN
//
// (TOKEN: 32 hex digits, 128 random bits; BASE: 16 hex digits, random too), then serves until SIGINT or SIGTERM
// and exits 0. The default ADDR is 127.0.0.1:0 (a free port); a non-loopback ADDR prints a warning on stderr.
//
// Access: every route below is beneath /ui-BASE (the routes name the rest); anything else is 404. A request needs
// the token, as ?token=TOKEN or as the cookie the first visit sets (HttpOnly, SameSite=Strict, named
// sessionfs_ui_PORT, Path=/ui-BASE/: a browser sends a host's cookies to every port of it, so with Path=/ it sent
// the token to a session's dev server on another port of 127.0.0.1, which cannot know BASE); a GET with a valid
// ?token= is answered 303 to the same URL without it, setting the cookie. Without a valid token: 403. A Host
// header other than the listen address (or localhost/127.0.0.1/[::1] with its port, when it is loopback) is 403
// too (DNS rebinding). The one exception: POST /csp-report (the browser's CSP reports) needs no token; it answers
// 204.
//
// Routes (GET):
//
//	/                                   sessions: ?label=K=V|K, ?agent=NAME, ?sort=created|active|size|id, ?page=N
//	/?partial=rows                      the <tbody> of #sessions alone (what ui.js swaps in on a "sessions" event)
//	/s/<id>                             a session: conversations, runs, resume commands, a link to its workspace
//	/s/<id>/c/<agent>/<conv>            a conversation, streamed (its head is sent before the conversation is
//	                                    looked up: one not found is a 200 page saying "Not found")
//	/s/<id>/c/<agent>/<conv>/events?after=N
//	                                    server-sent events: each entry appended after entry N, event "entry",
//	                                    data JSON {"n":N,"sub":"SUBAGENT","html":"..."} (rendered, escaped HTML)
//	/s/<id>/w/<path>                    the workspace: a folder as a page (#workspace), a file as text/plain;
//	                                    charset=utf-8 or as an attachment (binary), never as HTML
//	/search?q=QUERY                     hits, each a link to /s/<id>/c/<agent>/<conv>#e<N>
//	/events?stamp=S                     server-sent events: event "sessions" (data: the store's new stamp) when a
//	                                    session or a run appears or ends, and at once when S (the list page's
//	                                    #sessions data-live holds it) is no longer the store's
//	/debug/csp-reports                  JSON {"count":N}: the CSP reports received
//	/static/ui.css, /static/ui.js       the assets
//
// Element ids and classes:
//
//	#sessions                 the list's table; each row tr[data-session="<id>"]
//	#search                   the search form (its input is named q), on the list and the search page
//	#conversation             a conversation's container, data-events="<its events URL>"; each entry an
//	                          element of class .entry with id="e<N>" (N from 1, in the order agents/text reads
//	                          them) and a class naming its kind (prompt, reply, tool_call, tool_result, note);
//	                          calls and results are <details> (folded to one line), the others <article>; a
//	                          subagent's entries inside section.subagent[data-subagent="<id>"]; #end after them
//	                          (the page is complete)
//	#resume                   the resume commands, each in a <code> (host, docker, Modal), each with a copy button
//	#workspace                the workspace tree (a list of links; a symlink is shown, never followed)
//	#runs                     the session's runs
//	#hits                     the search hits, each an <a class="hit">
//
// # Safety
//
// Everything shown from a session is the session's own processes' writing: every value goes through
// html/template (never template.HTML of session data), texts through agents/text's Safe/OneLine (control
// characters shown, never sent), and no link is made from a session's text. Each response carries a strict
// Content-Security-Policy (no inline script or style, nothing from another origin), Referrer-Policy:
// no-referrer and X-Content-Type-Options: nosniff. Files of the workspace are opened beneath the session's
// descriptor (layout.Dir: no symlink followed, nothing outside) and served as text or as a download, at most
// MaxFileView bytes. No handler changes a session (search catches its index up, as `sessionfs search` does). A
// panic in a handler is logged and answered 500.
package ui
