"""The GEAR agent (spec gear §4): SyncGE retrieval, gist memory, reason, rewrite, passageLink."""
