"""Training: itemized FLOPs of an update, memory by recipe and sharding, communication, time."""
