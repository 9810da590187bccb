"""Quality rules: pure functions from a document's text (and its word split, shared by the
rules that count words) to a named reason, or None to keep it. The `quality` stage
(raypipe.stages.quality) runs the enabled ones in order."""
