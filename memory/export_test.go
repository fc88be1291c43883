package memory

// Tuning and Weights expose the rank-fusion weights to the tuning test.
type Tuning = tuning

var Weights = &weights
