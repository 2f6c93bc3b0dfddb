// Package search is sessionfs's full-text index of every conversation of every agent in a store: what `sessionfs
// search` answers from, kept in the store at <store>/index/search.db.
//
// The engine is SQLite's FTS5, through modernc.org/sqlite, the SQLite the project already links (pure Go, no
// cgo; FTS5 is compiled in, TestFTS5CompiledIn checks it). Over bleve it gives one file that the rest of the
// store's tooling already knows how to hold, no new dependency, ranking by bm25, snippet() for the marked
// excerpt, and phrase ("...") and prefix (foo*) queries in its own syntax; WAL lets one process write while
// others search.
//
// What is indexed is what agents/text reads a conversation as (prompts, replies, tool calls and results, notes:
// its Entries), one row each with its time, kind and the byte offset of its line, and its cwd, tool and subagent
// as numbers of strings the conversation keeps once (a line's entries past its first 16 are merged into rows of
// up to 4 KiB). What a session makes the index hold and read is bounded by a budget per session and one for the
// store (budget.go): past it a conversation is indexed in part, and search names its session. The index never parses a transcript itself and never runs a session's SQL: every text comes from
// agents/text (which opens each file beneath the session's descriptor, and opencode's database through its
// untrusted reader) and reaches SQLite as a bound parameter only.
//
// The index is kept current incrementally. For each conversation file it remembers the size, change time and
// inode it indexed, and for the append-only JSONL files the offset indexed so far (the end of its last complete
// line) with the bytes just before it: an append indexes only the entries past that offset; a file rewritten,
// replaced or shrunk is reindexed whole, and a conversation or session gone is dropped. Catching up is one stat
// per conversation file (and a listing of each agent's folders), so the CLI catches up before it answers; Update
// is what a watcher calls for one session that changed.
//
// A query that matches more than RankLimit entries is not ranked (bm25 counts every match of each term first:
// seconds for a word said everywhere in a gigabyte): the entries indexed last come first.
//
// The files: budget.go (the caps, and the writer that merges and counts rows), index.go (where the database is, opening it, its tables, a damaged one set aside), sources.go (a
// session's conversations listed, a stat each), update.go (catching up: appends, whole files, drops, each
// session's hash, Update), query.go (Search, SessionIDs, a query as a user types it made one FTS5 reads), run.go
// (what `sessionfs search` prints). searchtest makes stores of synthetic conversations for the benchmarks.
//
// The index is the store's, not a session's: <store>/index/ (beside the session list layout keeps there) lies
// outside sessions/, so no session can write there; search.db and its journals are 0600, the store owner's. A database that does not read as one is set aside and rebuilt, with a warning.
package search
