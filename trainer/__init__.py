"""The trainer: engines, collection, analyzer, rescoring, losses, the train loop."""
