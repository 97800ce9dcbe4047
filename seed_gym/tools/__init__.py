"""Applications around the trainer: an OpenAI-compatible server for a local model, chat
completion, the ``model:PATH`` evaluation policy and the GPU acceptance check."""
