package embed

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoModel means the model directory lacks the files a model needs.
	ErrNoModel = errors.New("no model")
	// ErrCorrupt means model files exist but cannot be read as a model.
	ErrCorrupt = errors.New("model corrupt")
	// ErrNotReady is returned by Lazy.Embed while the model is loading or
	// when it could not be loaded; callers fall back to lexical features.
	ErrNotReady = errors.New("embedding model not ready")
	// ErrChecksum means a downloaded file's size or sha256 differs from what
	// the hub announced.
	ErrChecksum = errors.New("checksum mismatch")
)
