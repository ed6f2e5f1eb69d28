package conversation

import "errors"

// ErrTranscript wraps every error of a transcript importer (Claude Code, OpenCode).
var ErrTranscript = errors.New("conversation: bad transcript")
