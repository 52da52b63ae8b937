package tmux

// Exported for the external tests that capture real tmux output.
var (
	PaneFormat = paneFormat
	ParsePanes = parsePanes
)
